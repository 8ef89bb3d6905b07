//! `collectives.csv`: every timed collective measurement of every GPU (the
//! NCCL sweep and the fabric rungs), raw, so the bandwidth table can be
//! regenerated.

use crate::layout::RunDirError;
use powerlab_core::collective::{Collective, CollectiveTiming};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// One row of `collectives.csv`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectiveRow {
    /// Rung id.
    pub rung_id: u32,
    /// GPU key (the rank is its position in the run).
    pub gpu: String,
    /// Collective name.
    pub collective: String,
    /// Message size (nccl-tests convention), bytes.
    pub bytes: u64,
    /// Ranks in the communicator.
    pub ranks: usize,
    /// Timed iterations.
    pub iterations: u32,
    /// Device time of the timed iterations, ns.
    pub elapsed_ns: i64,
    /// Run clock when they ended.
    pub ended_ns: i64,
}

impl CollectiveRow {
    /// Back to the measurement (None for an unknown collective name).
    pub fn timing(&self) -> Option<CollectiveTiming> {
        Some(CollectiveTiming {
            collective: Collective::parse(&self.collective)?,
            bytes: self.bytes,
            ranks: self.ranks,
            iterations: self.iterations,
            elapsed_ns: self.elapsed_ns,
            ended_ns: self.ended_ns,
        })
    }
}

/// Appends collective rows.
pub struct CollectiveWriter {
    path: PathBuf,
    out: Option<BufWriter<File>>,
}

impl CollectiveWriter {
    /// A writer for `collectives.csv`; the file is created on first use.
    pub fn new(path: &Path) -> CollectiveWriter {
        CollectiveWriter {
            path: path.to_path_buf(),
            out: None,
        }
    }

    /// Writes one GPU's measurements of one rung, then flushes.
    ///
    /// # Errors
    ///
    /// Returns [`RunDirError::Io`] if `collectives.csv` cannot be created on
    /// first use (it is opened with `create_new`, so a file that already
    /// exists is an error too), or if writing the header, a row or the final
    /// flush fails. An empty `rows` writes nothing and cannot fail.
    pub fn write(
        &mut self,
        rung_id: u32,
        gpu: &str,
        rows: &[CollectiveTiming],
    ) -> Result<(), RunDirError> {
        if rows.is_empty() {
            return Ok(());
        }
        let out = match &mut self.out {
            Some(o) => o,
            None => {
                let file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&self.path)
                    .map_err(|e| RunDirError::io(&self.path, e))?;
                let mut o = BufWriter::new(file);
                writeln!(
                    o,
                    "rung_id,gpu,collective,bytes,ranks,iterations,elapsed_ns,ended_ns"
                )
                .map_err(|e| RunDirError::io(&self.path, e))?;
                self.out.insert(o)
            }
        };
        for t in rows {
            writeln!(
                out,
                "{rung_id},{gpu},{},{},{},{},{},{}",
                t.collective.as_str(),
                t.bytes,
                t.ranks,
                t.iterations,
                t.elapsed_ns,
                t.ended_ns
            )
            .map_err(|e| RunDirError::io(&self.path, e))?;
        }
        out.flush().map_err(|e| RunDirError::io(&self.path, e))
    }
}

/// Reads `collectives.csv` (empty if absent; a torn last line is dropped).
///
/// # Errors
///
/// Returns [`RunDirError::Format`] if the file exists but cannot be opened
/// or read as CSV, or if a row other than a torn last one does not parse
/// as a [`CollectiveRow`]; the message names the line. See [`read_rows`](crate::edges::read_rows).
pub fn read_collectives(path: &Path) -> Result<Vec<CollectiveRow>, RunDirError> {
    crate::edges::read_rows(path)
}
