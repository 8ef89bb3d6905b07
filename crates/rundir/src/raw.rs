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

/// Append-only writer of one GPU's raw file, and of its index
/// (`raw/<gpu>.idx`): after every flush one line `rows,bytes,last_ts_ns,crc32`
/// says how much of the file is on its way to disk and its checksum, so the
/// collator can tell a file cut short from one that simply ended, and a file
/// changed after it was written from the one the run wrote.
pub struct RawWriter {
    path: PathBuf,
    out: BufWriter<File>,
    index: Option<File>,
    prefix: String,
    last_flush_ns: i64,
    rows: u64,
    bytes: u64,
    last_ts_ns: i64,
    indexed_rows: u64,
    crc: crc32fast::Hasher,
    line: String,
}

/// What a raw file's index says was written, at one flush.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawIndex {
    /// Rows written (header excluded).
    pub rows: u64,
    /// Bytes written (header included).
    pub bytes: u64,
    /// Timestamp of the last row, epoch ns.
    pub last_ts_ns: i64,
    /// CRC-32 of those `bytes` bytes.
    pub crc32: u32,
}

/// The index of `raw/<gpu>.csv`.
pub fn index_path(raw_file: &Path) -> PathBuf {
    let name = raw_file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let stem = name.strip_suffix(".csv.gz").or_else(|| name.strip_suffix(".csv")).unwrap_or(&name).to_string();
    raw_file.with_file_name(format!("{stem}.idx"))
}

/// Every whole line of a raw file's index (one per flush), in order; empty
/// if there is no index (a run written before indexes, or an index lost).
pub fn read_index_all(raw_file: &Path) -> Vec<RawIndex> {
    let Ok(text) = std::fs::read_to_string(index_path(raw_file)) else { return Vec::new() };
    text.lines()
        .filter_map(|l| {
            let mut f = l.split(',');
            let idx = RawIndex { rows: f.next()?.parse().ok()?, bytes: f.next()?.parse().ok()?, last_ts_ns: f.next()?.parse().ok()?, crc32: u32::from_str_radix(f.next()?, 16).ok()? };
            f.next().is_none().then_some(idx)
        })
        .collect()
}

/// The last whole line of a raw file's index; `None` if there is none.
pub fn read_index(raw_file: &Path) -> Option<RawIndex> {
    read_index_all(raw_file).pop()
}

impl RawWriter {
    /// Creates `raw/<gpu>.csv` (must not exist).
    pub fn create(raw_dir: &Path, node: &str, gpu_key: &str) -> Result<RawWriter, RunDirError> {
        let path = raw_dir.join(format!("{gpu_key}.csv"));
        let file = std::fs::OpenOptions::new().write(true).create_new(true).open(&path).map_err(|e| RunDirError::io(&path, e))?;
        let mut out = BufWriter::with_capacity(1 << 16, file);
        writeln!(out, "{RAW_HEADER}").map_err(|e| RunDirError::io(&path, e))?;
        out.flush().map_err(|e| RunDirError::io(&path, e))?;
        let mut crc = crc32fast::Hasher::new();
        crc.update(RAW_HEADER.as_bytes());
        crc.update(b"\n");
        let idx = index_path(&path);
        let index = Some(std::fs::OpenOptions::new().append(true).create_new(true).open(&idx).map_err(|e| RunDirError::io(&idx, e))?);
        Ok(RawWriter {
            path,
            out,
            index,
            prefix: format!(",{node},{gpu_key},"),
            last_flush_ns: 0,
            rows: 0,
            bytes: RAW_HEADER.len() as u64 + 1,
            last_ts_ns: 0,
            indexed_rows: 0,
            crc,
            line: String::with_capacity(96),
        })
    }

    /// Appends samples.
    pub fn write(&mut self, samples: &[Sample]) -> Result<(), RunDirError> {
        use std::fmt::Write as _;
        for s in samples {
            self.line.clear();
            let _ = write!(self.line, "{}{}{},{}\n", s.ts_ns, self.prefix, s.instrument.as_str(), fmt_value(s.value));
            self.out.write_all(self.line.as_bytes()).map_err(|e| RunDirError::io(&self.path, e))?;
            self.bytes += self.line.len() as u64;
            self.crc.update(self.line.as_bytes());
            self.last_ts_ns = s.ts_ns;
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
        // The index follows the data, never leads it.
        if self.rows != self.indexed_rows {
            if let Some(f) = self.index.as_mut() {
                let line = format!("{},{},{},{:08x}\n", self.rows, self.bytes, self.last_ts_ns, self.crc.clone().finalize());
                f.write_all(line.as_bytes()).map_err(|e| RunDirError::io(&index_path(&self.path), e))?;
            }
            self.indexed_rows = self.rows;
        }
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
        let idx = read_index(&tmp.path().join("gpu0.csv")).unwrap();
        let bytes = std::fs::read(tmp.path().join("gpu0.csv")).unwrap();
        assert_eq!(idx, RawIndex { rows: 2, bytes: bytes.len() as u64, last_ts_ns: 6, crc32: crc32fast::hash(&bytes) });
    }

    #[test]
    fn value_format() {
        assert_eq!(fmt_value(700.0), "700");
        assert_eq!(fmt_value(700.1234), "700.123");
        assert_eq!(fmt_value(-1.5), "-1.5");
    }
}
