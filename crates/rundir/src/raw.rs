//! Raw sample files: `raw/<gpu>.csv`, one row a reading:
//! `ts_ns,node,gpu,instrument,value`. Append-only, flushed at least every
//! second, readable by any CSV tool, and sufficient on their own (with the
//! manifest's GPU table) to rebuild every node curve.

use crate::layout::RunDirError;
use powerlab_core::Sample;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Header of every raw file.
pub const RAW_HEADER: &str = "ts_ns,node,gpu,instrument,value";

/// One raw row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawRow {
    /// Epoch ns.
    pub ts_ns: i64,
    /// Node id.
    pub node: String,
    /// GPU key (manifest maps it to the UUID).
    pub gpu: String,
    /// Instrument name.
    pub instrument: String,
    /// Value.
    pub value: f64,
}

/// Append-only writer of one GPU's raw file.
pub struct RawWriter {
    path: PathBuf,
    out: BufWriter<File>,
    prefix: String,
    last_flush_ns: i64,
    rows: u64,
    line: String,
}

impl RawWriter {
    /// Creates `raw/<gpu>.csv` (must not exist).
    pub fn create(raw_dir: &Path, node: &str, gpu_key: &str) -> Result<RawWriter, RunDirError> {
        let path = raw_dir.join(format!("{gpu_key}.csv"));
        let file = std::fs::OpenOptions::new().write(true).create_new(true).open(&path).map_err(|e| RunDirError::io(&path, e))?;
        let mut out = BufWriter::with_capacity(1 << 16, file);
        writeln!(out, "{RAW_HEADER}").map_err(|e| RunDirError::io(&path, e))?;
        out.flush().map_err(|e| RunDirError::io(&path, e))?;
        Ok(RawWriter { path, out, prefix: format!(",{node},{gpu_key},"), last_flush_ns: 0, rows: 0, line: String::with_capacity(96) })
    }

    /// Appends samples.
    pub fn write(&mut self, samples: &[Sample]) -> Result<(), RunDirError> {
        use std::fmt::Write as _;
        for s in samples {
            self.line.clear();
            let _ = write!(self.line, "{}{}{},{}\n", s.ts_ns, self.prefix, s.instrument.as_str(), fmt_value(s.value));
            self.out.write_all(self.line.as_bytes()).map_err(|e| RunDirError::io(&self.path, e))?;
        }
        self.rows += samples.len() as u64;
        Ok(())
    }

    /// Flushes to the OS if `interval_ns` has passed since the last flush.
    pub fn flush_if_due(&mut self, now_ns: i64, interval_ns: i64) -> Result<bool, RunDirError> {
        if now_ns - self.last_flush_ns >= interval_ns {
            self.flush(now_ns)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Flushes to the OS now.
    pub fn flush(&mut self, now_ns: i64) -> Result<(), RunDirError> {
        self.out.flush().map_err(|e| RunDirError::io(&self.path, e))?;
        self.last_flush_ns = now_ns;
        Ok(())
    }

    /// Rows written.
    pub fn rows(&self) -> u64 {
        self.rows
    }
}

/// Formats a value compactly and losslessly enough (0.001 W / 1 mJ).
pub fn fmt_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        let s = format!("{v:.3}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        s.to_string()
    }
}

/// Reads a raw file with serde (the collator uses polars; this is for
/// tests, tools and validation). Every bad row is an error naming the line.
pub fn read_raw(path: &Path) -> Result<Vec<RawRow>, RunDirError> {
    let mut rdr = csv::Reader::from_path(path).map_err(|e| RunDirError::Format { path: path.to_path_buf(), message: e.to_string() })?;
    let mut out = Vec::new();
    for (i, row) in rdr.deserialize::<RawRow>().enumerate() {
        let row = row.map_err(|e| RunDirError::Format { path: path.to_path_buf(), message: format!("row {}: {e}", i + 2) })?;
        out.push(row);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use powerlab_core::Instrument;

    #[test]
    fn writes_and_reads_back() {
        let tmp = tempfile::tempdir().unwrap();
        let mut w = RawWriter::create(tmp.path(), "node-a", "gpu0").unwrap();
        w.write(&[Sample { ts_ns: 5, instrument: Instrument::BufferedW, value: 700.25 }, Sample { ts_ns: 6, instrument: Instrument::EnergyMj, value: 12.0 }]).unwrap();
        w.flush(0).unwrap();
        let rows = read_raw(&tmp.path().join("gpu0.csv")).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0], RawRow { ts_ns: 5, node: "node-a".into(), gpu: "gpu0".into(), instrument: "buffered_w".into(), value: 700.25 });
        assert_eq!(rows[1].value, 12.0);
        assert!(RawWriter::create(tmp.path(), "node-a", "gpu0").is_err(), "never overwrite");
    }

    #[test]
    fn value_format() {
        assert_eq!(fmt_value(700.0), "700");
        assert_eq!(fmt_value(700.1234), "700.123");
        assert_eq!(fmt_value(-1.5), "-1.5");
    }
}
