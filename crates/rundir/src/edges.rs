//! `edges.csv`: every intended edge of every GPU with its achieved time.

use crate::layout::RunDirError;
use powerlab_core::hw::EdgeRecord;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// One row of `edges.csv`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EdgeRow {
    /// Rung id.
    pub rung_id: u32,
    /// GPU key.
    pub gpu: String,
    /// Edge index in the GPU's schedule.
    pub index: u32,
    /// `start`, `rise` or `fall`.
    pub kind: String,
    /// Intended, epoch ns.
    pub intended_ns: i64,
    /// Achieved, epoch ns.
    pub achieved_ns: i64,
}

/// Appends edge rows.
pub struct EdgeWriter {
    path: PathBuf,
    out: BufWriter<File>,
}

impl EdgeWriter {
    /// Creates `edges.csv`.
    pub fn create(path: &Path) -> Result<EdgeWriter, RunDirError> {
        let file = std::fs::OpenOptions::new().write(true).create_new(true).open(path).map_err(|e| RunDirError::io(path, e))?;
        let mut out = BufWriter::new(file);
        writeln!(out, "rung_id,gpu,index,kind,intended_ns,achieved_ns").map_err(|e| RunDirError::io(path, e))?;
        Ok(EdgeWriter { path: path.to_path_buf(), out })
    }

    /// Writes one GPU's edges of one rung, then flushes.
    pub fn write(&mut self, rung_id: u32, gpu: &str, edges: &[EdgeRecord]) -> Result<(), RunDirError> {
        for e in edges {
            writeln!(self.out, "{rung_id},{gpu},{},{},{},{}", e.index, e.kind.as_str(), e.intended_ns, e.achieved_ns).map_err(|er| RunDirError::io(&self.path, er))?;
        }
        self.out.flush().map_err(|e| RunDirError::io(&self.path, e))
    }
}

/// Reads `edges.csv` (empty if absent).
pub fn read_edges(path: &Path) -> Result<Vec<EdgeRow>, RunDirError> {
    read_rows(path)
}

/// Reads a CSV table of the run directory into rows (empty if the file is
/// absent). A run killed mid-write leaves a torn last line: every whole row
/// before it is kept; a bad first row is an error naming the file.
pub fn read_rows<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, RunDirError> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let mut rdr = csv::Reader::from_path(path).map_err(|e| RunDirError::Format { path: path.to_path_buf(), message: e.to_string() })?;
    let mut out = Vec::new();
    for (i, row) in rdr.deserialize::<T>().enumerate() {
        match row {
            Ok(r) => out.push(r),
            // A run killed mid-write leaves a torn last line: keep what is whole.
            Err(_) if i > 0 => break,
            Err(e) => return Err(RunDirError::Format { path: path.to_path_buf(), message: format!("row {}: {e}", i + 2) }),
        }
    }
    Ok(out)
}
