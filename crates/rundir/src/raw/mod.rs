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
    /// The reading (its unit is in the instrument name: W, MHz, °C …).
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

/// The suffix of an archived (gzip-compressed) raw file: `raw/<gpu>.csv.gz`.
pub const ARCHIVED_SUFFIX: &str = ".gz";

/// Whether `raw_file` is archived (gzip-compressed).
pub fn is_archived(raw_file: &Path) -> bool {
    raw_file.to_string_lossy().ends_with(ARCHIVED_SUFFIX)
}

/// A raw file's name without `.csv` or `.csv.gz` (`raw/gpu3.csv.gz` →
/// `gpu3`, `raw/gpu3-part2.csv` → `gpu3-part2`).
pub fn raw_stem(raw_file: &Path) -> String {
    let name = raw_file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.strip_suffix(".csv.gz")
        .or_else(|| name.strip_suffix(".csv"))
        .unwrap_or(&name)
        .to_string()
}

/// The index of `raw/<gpu>.csv`.
pub fn index_path(raw_file: &Path) -> PathBuf {
    raw_file.with_file_name(format!("{}.idx", raw_stem(raw_file)))
}

/// Whose file an index describes: its first line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexOwner {
    /// The run's start, epoch ns (the manifest's `started_ns`).
    pub run_start_ns: i64,
    /// Node id.
    pub node: String,
    /// GPU key.
    pub gpu: String,
    /// The run-directory format of the run that wrote it (1 for an index
    /// written before the format was named on this line): a manifest of an
    /// older format beside it was edited to look older.
    pub format: u32,
}

impl IndexOwner {
    fn line(&self) -> String {
        format!(
            "# powerlab raw index: run {} node {} gpu {} format {}",
            self.run_start_ns, self.node, self.gpu, self.format
        )
    }

    fn parse(l: &str) -> Option<IndexOwner> {
        let f: Vec<&str> = l
            .strip_prefix("# powerlab raw index: ")?
            .split(' ')
            .collect();
        match f.as_slice() {
            ["run", start, "node", node, "gpu", gpu] => Some(IndexOwner {
                run_start_ns: start.parse().ok()?,
                node: node.to_string(),
                gpu: gpu.to_string(),
                format: 1,
            }),
            ["run", start, "node", node, "gpu", gpu, "format", format] => Some(IndexOwner {
                run_start_ns: start.parse().ok()?,
                node: node.to_string(),
                gpu: gpu.to_string(),
                format: format.parse().ok()?,
            }),
            _ => None,
        }
    }
}

/// A raw file's index as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexFile {
    /// Whose file it describes (absent in an index with no first line).
    pub owner: Option<IndexOwner>,
    /// Checkpoints in order. A torn last line (a run killed mid-write) is
    /// dropped.
    pub checkpoints: Vec<RawIndex>,
}

fn parse_checkpoint(l: &str) -> Option<RawIndex> {
    let f: Vec<&str> = l.split(',').collect();
    let [rows, bytes, ts, crc] = f.as_slice() else {
        return None;
    };
    if crc.len() != 8 || !crc.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(RawIndex {
        rows: rows.parse().ok()?,
        bytes: bytes.parse().ok()?,
        last_ts_ns: ts.parse().ok()?,
        crc32: u32::from_str_radix(crc, 16).ok()?,
    })
}

/// Reads a raw file's index. `Ok(None)` when there is none; an error (in
/// words) when it is damaged: a line that is not a checkpoint anywhere but
/// a torn end, or checkpoints that do not grow.
///
/// # Errors
///
/// Returns a message naming the index file if it exists but cannot be read,
/// if its first line starts with `#` but is not a valid owner header, if a
/// whole line is not a `rows,bytes,last_ts_ns,crc32` checkpoint, or if a
/// checkpoint does not grow on the one before it (rows and bytes must rise,
/// the timestamp must not fall). A missing index is `Ok(None)`, not an
/// error, and a torn last line is dropped rather than reported.
pub fn read_index_file(raw_file: &Path) -> Result<Option<IndexFile>, String> {
    let path = index_path(raw_file);
    let text = match crate::layout::read_regular(&path, None) {
        Ok(t) => String::from_utf8(t).map_err(|e| format!("{}: {e}", path.display()))?,
        Err(crate::layout::RunDirError::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            return Ok(None);
        }
        Err(e) => return Err(e.to_string()),
    };
    let mut lines: Vec<&str> = text.split('\n').collect();
    // The text after the last newline is a torn line, or empty.
    let torn = lines.pop().filter(|l| !l.is_empty());
    let mut owner = None;
    let mut checkpoints: Vec<RawIndex> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if i == 0 && l.starts_with('#') {
            owner = Some(
                IndexOwner::parse(l)
                    .ok_or_else(|| format!("{} line 1 is not an index header", path.display()))?,
            );
            continue;
        }
        let c = parse_checkpoint(l).ok_or_else(|| {
            format!(
                "{} line {} is not a checkpoint (`rows,bytes,last_ts_ns,crc32`)",
                path.display(),
                i + 1
            )
        })?;
        if let Some(p) = checkpoints.last()
            && (c.rows <= p.rows || c.bytes <= p.bytes || c.last_ts_ns < p.last_ts_ns)
        {
            return Err(format!(
                "{} line {}: checkpoints do not grow (rows {} after {}, bytes {} after {})",
                path.display(),
                i + 1,
                c.rows,
                p.rows,
                c.bytes,
                p.bytes
            ));
        }
        checkpoints.push(c);
    }
    // A complete line without its newline is a checkpoint all the same.
    if let Some(c) = torn.and_then(parse_checkpoint).filter(|c| {
        checkpoints
            .last()
            .is_none_or(|p| c.rows > p.rows && c.bytes > p.bytes)
    }) {
        checkpoints.push(c);
    }
    Ok(Some(IndexFile { owner, checkpoints }))
}

impl RawWriter {
    /// Creates `raw/<gpu>.csv` (must not exist) and its index, whose first
    /// line ties it to this run (`run_start_ns`), node and GPU.
    ///
    /// # Errors
    ///
    /// Returns [`RunDirError::Io`] if `raw/<gpu>.csv` or its `.idx` cannot be
    /// created (both are opened with `create_new`, so either one already
    /// existing is an error), or if writing and flushing the CSV header or
    /// writing the index's owner line fails.
    pub fn create(
        raw_dir: &Path,
        node: &str,
        gpu_key: &str,
        run_start_ns: i64,
    ) -> Result<RawWriter, RunDirError> {
        let path = raw_dir.join(format!("{gpu_key}.csv"));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| RunDirError::io(&path, e))?;
        let mut out = BufWriter::with_capacity(1 << 16, file);
        writeln!(out, "{RAW_HEADER}").map_err(|e| RunDirError::io(&path, e))?;
        out.flush().map_err(|e| RunDirError::io(&path, e))?;
        let mut crc = crc32fast::Hasher::new();
        crc.update(RAW_HEADER.as_bytes());
        crc.update(b"\n");
        let idx = index_path(&path);
        let mut index = std::fs::OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(&idx)
            .map_err(|e| RunDirError::io(&idx, e))?;
        let owner = IndexOwner {
            run_start_ns,
            node: node.to_string(),
            gpu: gpu_key.to_string(),
            format: crate::manifest::FORMAT_VERSION,
        };
        writeln!(index, "{}", owner.line()).map_err(|e| RunDirError::io(&idx, e))?;
        let index = Some(index);
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
    ///
    /// # Errors
    ///
    /// Returns [`RunDirError::Io`] if writing a row fails; rows go through a
    /// buffer, so this is reported when the buffer spills to the file. The
    /// rows of `samples` before the failing one may already be written.
    pub fn write(&mut self, samples: &[Sample]) -> Result<(), RunDirError> {
        use std::fmt::Write as _;
        for s in samples {
            self.line.clear();
            let _ = writeln!(
                self.line,
                "{}{}{},{}",
                s.ts_ns,
                self.prefix,
                s.instrument.as_str(),
                fmt_value(s.value)
            );
            self.out
                .write_all(self.line.as_bytes())
                .map_err(|e| RunDirError::io(&self.path, e))?;
            self.bytes += self.line.len() as u64;
            self.crc.update(self.line.as_bytes());
            self.last_ts_ns = s.ts_ns;
        }
        self.rows += samples.len() as u64;
        Ok(())
    }

    /// Flushes to the OS if `interval_ns` has passed since the last flush.
    ///
    /// # Errors
    ///
    /// Returns [`RunDirError::Io`] when a flush is due and it fails, as
    /// [`RawWriter::flush`] does; when no flush is due it cannot fail.
    pub fn flush_if_due(&mut self, now_ns: i64, interval_ns: i64) -> Result<bool, RunDirError> {
        if now_ns - self.last_flush_ns >= interval_ns {
            self.flush(now_ns)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// Flushes to the OS now.
    ///
    /// # Errors
    ///
    /// Returns [`RunDirError::Io`] if flushing the buffered rows to the raw
    /// file fails, or if appending the new checkpoint line to the index file
    /// fails (the error then names the `.idx` path).
    pub fn flush(&mut self, now_ns: i64) -> Result<(), RunDirError> {
        self.out
            .flush()
            .map_err(|e| RunDirError::io(&self.path, e))?;
        self.last_flush_ns = now_ns;
        // The index follows the data, never leads it.
        if self.rows != self.indexed_rows {
            if let Some(f) = self.index.as_mut() {
                let line = format!(
                    "{},{},{},{:08x}\n",
                    self.rows,
                    self.bytes,
                    self.last_ts_ns,
                    self.crc.clone().finalize()
                );
                f.write_all(line.as_bytes())
                    .map_err(|e| RunDirError::io(&index_path(&self.path), e))?;
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

mod read;
pub use read::{RAW_COLUMNS, RawFile, StoredSum, read_raw};

#[cfg(test)]
mod tests {
    use super::*;
    use powerlab_core::Instrument;

    #[test]
    fn the_reader_drops_a_torn_last_line_reads_gzip_and_refuses_a_foreign_header() {
        let tmp = tempfile::tempdir().unwrap();
        let csv = tmp.path().join("gpu0.csv");
        std::fs::write(
            &csv,
            format!("{RAW_HEADER}\n5,n,gpu0,buffered_w,700\n6,n,gpu0,buff"),
        )
        .unwrap();
        let rows = read_raw(&csv).unwrap();
        assert_eq!(rows.len(), 1, "the torn row is dropped");
        let gz = tmp.path().join("gpu1.csv.gz");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(
            &mut enc,
            format!("{RAW_HEADER}\n5,n,gpu1,instant_w,1.5\n").as_bytes(),
        )
        .unwrap();
        std::fs::write(&gz, enc.finish().unwrap()).unwrap();
        assert_eq!(read_raw(&gz).unwrap()[0].value, 1.5);
        std::fs::write(&gz, b"not gzip").unwrap();
        let e = read_raw(&gz).unwrap_err().to_string();
        assert!(e.contains("not a readable gzip file"), "{e}");
        std::fs::write(&csv, "ts,node,gpu,instrument,value\n").unwrap();
        let e = read_raw(&csv).unwrap_err().to_string();
        assert!(e.contains("header is not"), "{e}");
    }

    #[test]
    fn writes_and_reads_back() {
        let tmp = tempfile::tempdir().unwrap();
        let mut w = RawWriter::create(tmp.path(), "node-a", "gpu0", 5).unwrap();
        w.write(&[
            Sample {
                ts_ns: 5,
                instrument: Instrument::BufferedW,
                value: 700.25,
            },
            Sample {
                ts_ns: 6,
                instrument: Instrument::EnergyMj,
                value: 12.0,
            },
        ])
        .unwrap();
        w.flush(0).unwrap();
        let rows = read_raw(&tmp.path().join("gpu0.csv")).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            rows[0],
            RawRow {
                ts_ns: 5,
                node: "node-a".into(),
                gpu: "gpu0".into(),
                instrument: "buffered_w".into(),
                value: 700.25
            }
        );
        assert_eq!(rows[1].value, 12.0);
        assert!(
            RawWriter::create(tmp.path(), "node-a", "gpu0", 5).is_err(),
            "never overwrite"
        );
        let idx = *read_index_file(&tmp.path().join("gpu0.csv"))
            .unwrap()
            .unwrap()
            .checkpoints
            .last()
            .unwrap();
        let bytes = std::fs::read(tmp.path().join("gpu0.csv")).unwrap();
        assert_eq!(
            idx,
            RawIndex {
                rows: 2,
                bytes: bytes.len() as u64,
                last_ts_ns: 6,
                crc32: crc32fast::hash(&bytes)
            }
        );
        let file = read_index_file(&tmp.path().join("gpu0.csv"))
            .unwrap()
            .unwrap();
        assert_eq!(
            file.owner,
            Some(IndexOwner {
                run_start_ns: 5,
                node: "node-a".into(),
                gpu: "gpu0".into(),
                format: crate::manifest::FORMAT_VERSION,
            })
        );
    }

    #[test]
    fn a_damaged_index_is_an_error_and_a_torn_end_is_dropped() {
        let tmp = tempfile::tempdir().unwrap();
        let raw = tmp.path().join("gpu0.csv");
        let idx = tmp.path().join("gpu0.idx");
        let head = "# powerlab raw index: run 1 node n gpu gpu0\n";
        std::fs::write(
            &idx,
            format!("{head}2,100,7,0000abcd\n4,200,9,0000abce\n6,30"),
        )
        .unwrap();
        assert_eq!(
            read_index_file(&raw).unwrap().unwrap().checkpoints.len(),
            2,
            "torn end dropped"
        );
        std::fs::write(&idx, format!("{head}2,100,7,0000abcd\n4,200,9,9e84\n")).unwrap();
        assert!(
            read_index_file(&raw).unwrap_err().contains("line 3"),
            "a short CRC mid-file"
        );
        std::fs::write(&idx, format!("{head}4,200,9,0000abce\n2,100,7,0000abcd\n")).unwrap();
        assert!(read_index_file(&raw).unwrap_err().contains("do not grow"));
        std::fs::write(&idx, "zzz\n").unwrap();
        assert!(read_index_file(&raw).is_err());
        std::fs::remove_file(&idx).unwrap();
        assert_eq!(read_index_file(&raw).unwrap(), None);
    }

    #[test]
    fn value_format() {
        assert_eq!(fmt_value(700.0), "700");
        assert_eq!(fmt_value(700.1234), "700.123");
        assert_eq!(fmt_value(-1.5), "-1.5");
    }
}
