//! The run's edge log while it runs: a running rung's edges go into
//! `edges.csv` as the GPUs hand them over (about every 250 ms, each write
//! flushed, so a run killed mid-rung keeps the edges achieved up to about
//! a second before), and at the rung's end, normal or stopped, the rung's
//! rows are replaced by its final edges: one row per edge.

use powerlab_core::hw::{EdgeFeed, EdgeRecord};
use powerlab_rundir::{EdgeWriter, RunDirError};
use std::collections::BTreeMap;

/// `edges.csv` and what each GPU has handed over of the rung in flight.
pub(crate) struct EdgeLog {
    writer: EdgeWriter,
    /// Each GPU's feed, by run index.
    feeds: Vec<EdgeFeed>,
    /// The GPU keys, by run index.
    keys: Vec<String>,
    /// The rung in flight.
    rung: Option<u32>,
    /// Each GPU's edges of the rung in flight written so far, by index.
    written: Vec<BTreeMap<u32, EdgeRecord>>,
}

impl EdgeLog {
    /// An edge log writing into `writer`, fed by `feeds` (one per key).
    pub fn new(writer: EdgeWriter, feeds: Vec<EdgeFeed>, keys: Vec<String>) -> EdgeLog {
        let written = vec![BTreeMap::new(); keys.len()];
        EdgeLog {
            writer,
            feeds,
            keys,
            rung: None,
            written,
        }
    }

    /// A rung's window begins: what the feeds still hold (of no rung in
    /// flight) is dropped, and the rung's rows start at the file's end.
    pub fn begin(&mut self, rung_id: u32) -> Result<(), RunDirError> {
        for f in &self.feeds {
            let _ = f.take();
        }
        self.written.iter_mut().for_each(BTreeMap::clear);
        self.rung = Some(rung_id);
        self.writer.start_rung()
    }

    /// Appends what each GPU handed over of the rung in flight since the
    /// last call (an edge already written is not written again).
    pub fn drain(&mut self) -> Result<(), RunDirError> {
        let Some(rung) = self.rung else {
            return Ok(());
        };
        for (i, feed) in self.feeds.iter().enumerate() {
            let new: Vec<EdgeRecord> = feed
                .take()
                .into_iter()
                .filter(|(r, e)| *r == rung && !self.written[i].contains_key(&e.index))
                .map(|(_, e)| e)
                .collect();
            if new.is_empty() {
                continue;
            }
            self.writer.write(rung, &self.keys[i], &new)?;
            self.written[i].extend(new.into_iter().map(|e| (e.index, e)));
        }
        Ok(())
    }

    /// The rung in flight ends: its rows become each GPU's `finals` (by
    /// run index; a GPU without any keeps what it handed over), an edge
    /// handed over but missing from the finals kept, in index order.
    pub fn finish(&mut self, finals: &[Vec<EdgeRecord>]) -> Result<(), RunDirError> {
        let Some(rung) = self.rung.take() else {
            return Ok(());
        };
        for f in &self.feeds {
            let _ = f.take();
        }
        let mut merged: Vec<Vec<EdgeRecord>> = Vec::with_capacity(self.keys.len());
        for (i, written) in self.written.iter_mut().enumerate() {
            let mut all = std::mem::take(written);
            if let Some(f) = finals.get(i) {
                all.extend(f.iter().map(|e| (e.index, *e)));
            }
            merged.push(all.into_values().collect());
        }
        let rows: Vec<(&str, &[EdgeRecord])> = self
            .keys
            .iter()
            .zip(&merged)
            .filter(|(_, e)| !e.is_empty())
            .map(|(k, e)| (k.as_str(), e.as_slice()))
            .collect();
        self.writer.replace_rung(rung, &rows)
    }
}
