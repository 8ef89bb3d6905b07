//! Node power files: `node_power/<source>.csv`, one per `[[node_power]]`
//! source, one row per reading or failed read:
//! `sent_ns,recv_ns,node,source,kind,quantity,watts,error`.
//! `quantity` is `node` (the chassis or meter total) or `psu:<name>` (one
//! power supply, PDU outlet or series). A failed read has an empty
//! `watts` and its error class and message in `error` (the message names
//! the address, never a credential). Both times are on the run clock:
//! when the request left and when its answer (or the error) came, since a
//! BMC's reading is a slow average with its own latency. Flushed after
//! every reading.

use crate::layout::RunDirError;
use powerlab_core::{MeterError, NodeReading};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// Header of every node power file.
pub const NODE_POWER_HEADER: &str = "sent_ns,recv_ns,node,source,kind,quantity,watts,error";

/// The directory of node power files in a run directory.
pub fn node_power_dir(run_dir: &Path) -> PathBuf {
    crate::files::RunFile::NodePower.path_in(run_dir)
}

/// The file of one node power source: `node_power/<source>.csv`.
pub fn node_power_file(run_dir: &Path, source: &str) -> PathBuf {
    node_power_dir(run_dir).join(format!("{source}.csv"))
}

/// One row of a node power file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodePowerRow {
    /// When the request was sent, epoch ns.
    pub sent_ns: i64,
    /// When the answer (or the error) came, epoch ns.
    pub recv_ns: i64,
    /// Node id.
    pub node: String,
    /// Source name (from the campaign).
    pub source: String,
    /// Source kind (`redfish`, `ipmi`, `command`, `prometheus`).
    pub kind: String,
    /// `node`, or `psu:<name>`.
    pub quantity: String,
    /// The reading, W (None for a failed read).
    pub watts: Option<f64>,
    /// `class: message` for a failed read, else empty.
    pub error: String,
}

/// Append-only writer of one source's file.
pub struct NodePowerWriter {
    path: PathBuf,
    out: csv::Writer<BufWriter<File>>,
    node: String,
    source: String,
    kind: String,
}

impl NodePowerWriter {
    /// Creates `node_power/<source>.csv` with its header.
    ///
    /// # Errors
    ///
    /// [`RunDirError::Io`] if the directory or file cannot be created.
    pub fn create(
        run_dir: &Path,
        node: &str,
        source: &str,
        kind: &str,
    ) -> Result<Self, RunDirError> {
        let dir = node_power_dir(run_dir);
        std::fs::create_dir_all(&dir).map_err(|e| RunDirError::io(&dir, e))?;
        let path = node_power_file(run_dir, source);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| RunDirError::io(&path, e))?;
        let mut out = csv::WriterBuilder::new()
            .has_headers(false)
            .from_writer(BufWriter::new(file));
        let header: Vec<&str> = NODE_POWER_HEADER.split(',').collect();
        out.write_record(&header)
            .map_err(|e| RunDirError::io(&path, e.into()))?;
        let mut w = NodePowerWriter {
            path,
            out,
            node: node.to_string(),
            source: source.to_string(),
            kind: kind.to_string(),
        };
        w.flush()?;
        Ok(w)
    }

    /// Writes one read's rows (the node total, then each supply; or the
    /// error) and flushes them.
    ///
    /// # Errors
    ///
    /// [`RunDirError::Io`] if the rows cannot be written.
    pub fn write(
        &mut self,
        sent_ns: i64,
        recv_ns: i64,
        reading: &Result<NodeReading, MeterError>,
    ) -> Result<(), RunDirError> {
        let row = |quantity: &str, watts: Option<f64>, error: &str| {
            vec![
                sent_ns.to_string(),
                recv_ns.to_string(),
                self.node.clone(),
                self.source.clone(),
                self.kind.clone(),
                quantity.to_string(),
                watts.map(|w| w.to_string()).unwrap_or_default(),
                error.to_string(),
            ]
        };
        let rows = match reading {
            Ok(r) => {
                let mut v = vec![row("node", Some(r.node_w), "")];
                for (name, w) in &r.supplies_w {
                    v.push(row(&format!("psu:{name}"), Some(*w), ""));
                }
                v
            }
            Err(e) => vec![row("node", None, &format!("{}: {e}", e.class()))],
        };
        for r in rows {
            self.out
                .write_record(&r)
                .map_err(|e| RunDirError::io(&self.path, e.into()))?;
        }
        self.flush()
    }

    fn flush(&mut self) -> Result<(), RunDirError> {
        self.out.flush().map_err(|e| RunDirError::io(&self.path, e))
    }
}

/// The node power files of a run directory, sorted (none: empty).
///
/// # Errors
///
/// [`RunDirError::Io`] if `node_power/` exists but cannot be listed.
pub fn node_power_files(run_dir: &Path) -> Result<Vec<PathBuf>, RunDirError> {
    let dir = node_power_dir(run_dir);
    if !dir.exists() {
        return Ok(vec![]);
    }
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| RunDirError::io(&dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .collect();
    v.sort();
    Ok(v)
}

/// Reads one node power file. A row cut short by a crash (the last line
/// without its end) or a row that is not the format is dropped and
/// counted, never guessed; the count is returned beside the rows.
///
/// # Errors
///
/// [`RunDirError::Io`] if the file cannot be read, and
/// [`RunDirError::Format`] if its header is not the format.
pub fn read_node_power(path: &Path) -> Result<(Vec<NodePowerRow>, usize), RunDirError> {
    let text = std::fs::read_to_string(path).map_err(|e| RunDirError::io(path, e))?;
    let (body, cut) = match text.rfind('\n') {
        Some(i) if i + 1 < text.len() => (&text[..=i], 1),
        Some(_) => (text.as_str(), 0),
        None => ("", usize::from(!text.is_empty())),
    };
    let mut rdr = csv::ReaderBuilder::new().from_reader(body.as_bytes());
    let header = rdr
        .headers()
        .map_err(|e| malformed(path, &e.to_string()))?
        .iter()
        .collect::<Vec<_>>()
        .join(",");
    if !body.is_empty() && header != NODE_POWER_HEADER {
        return Err(malformed(
            path,
            &format!("header `{header}`, expected `{NODE_POWER_HEADER}`"),
        ));
    }
    let mut rows = Vec::new();
    let mut bad = cut;
    for r in rdr.deserialize::<NodePowerRow>() {
        match r {
            Ok(r) => rows.push(r),
            Err(_) => bad += 1,
        }
    }
    Ok((rows, bad))
}

fn malformed(path: &Path, what: &str) -> RunDirError {
    RunDirError::Format {
        path: path.to_path_buf(),
        message: what.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_readings_and_errors_and_reads_them_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = NodePowerWriter::create(dir.path(), "n0", "bmc", "redfish").unwrap();
        w.write(
            10,
            25,
            &Ok(NodeReading {
                node_w: 3120.5,
                supplies_w: vec![("PSU 1".into(), 1600.0)],
            }),
        )
        .unwrap();
        w.write(
            30,
            2030,
            &Err(MeterError::Timeout {
                target: "https://b, c".into(),
                timeout_ms: 2000,
            }),
        )
        .unwrap();
        let files = node_power_files(dir.path()).unwrap();
        assert_eq!(files.len(), 1);
        let (rows, cut) = read_node_power(&files[0]).unwrap();
        assert_eq!(cut, 0);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].watts, Some(3120.5));
        assert_eq!(rows[1].quantity, "psu:PSU 1");
        assert_eq!(rows[2].watts, None);
        assert!(
            rows[2]
                .error
                .starts_with("timeout: no answer within 2000 ms")
        );
        assert!(NodePowerWriter::create(dir.path(), "n0", "bmc", "redfish").is_err());
        // A crash mid-row: the partial row is dropped and counted.
        let mut text = std::fs::read_to_string(&files[0]).unwrap();
        text.push_str("40,41,n0,bmc,red");
        std::fs::write(&files[0], text).unwrap();
        let (rows, cut) = read_node_power(&files[0]).unwrap();
        assert_eq!((rows.len(), cut), (3, 1));
        // A garbage line costs that line, not the file.
        let text = std::fs::read_to_string(&files[0]).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let edited = format!(
            "{}\nnot,a,row\n{}\n",
            lines[..2].join("\n"),
            lines[2..4].join("\n")
        );
        std::fs::write(&files[0], edited).unwrap();
        let (rows, bad) = read_node_power(&files[0]).unwrap();
        assert_eq!((rows.len(), bad), (3, 1));
    }
}
