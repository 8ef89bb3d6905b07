//! `edges.csv`: every intended edge of every GPU with its achieved time.
//!
//! A running rung's edges are appended as the GPUs report them (each
//! write flushed: a run killed mid-rung keeps them, provisional), and
//! replaced at the rung's end by its final edges in one rewrite of the
//! rung's part of the file, so each edge has one row. Only the rung in
//! flight can have provisional rows: its rows are the file's last.

use crate::layout::RunDirError;
use powerlab_core::hw::EdgeRecord;
use powerlab_core::shape::EdgeKind;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

/// The columns of `edges.csv`, in order.
pub const EDGE_COLUMNS: [&str; 6] = [
    "rung_id",
    "gpu",
    "index",
    "kind",
    "intended_ns",
    "achieved_ns",
];

/// The header line of `edges.csv`: [`EDGE_COLUMNS`] joined by commas.
pub const EDGES_HEADER: &str = "rung_id,gpu,index,kind,intended_ns,achieved_ns";

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
    pub kind: EdgeKind,
    /// Intended, epoch ns.
    pub intended_ns: i64,
    /// Achieved, epoch ns.
    pub achieved_ns: i64,
}

/// Appends edge rows.
pub struct EdgeWriter {
    path: PathBuf,
    out: BufWriter<File>,
    /// Where the rows of the rung in flight begin, bytes.
    rung_start: u64,
}

impl EdgeWriter {
    /// Creates `edges.csv`.
    ///
    /// # Errors
    ///
    /// Returns [`RunDirError::Io`] if the file cannot be created (it is
    /// opened with `create_new`, so an existing `edges.csv` is an error), or
    /// if writing or flushing its header line fails.
    pub fn create(path: &Path) -> Result<EdgeWriter, RunDirError> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| RunDirError::io(path, e))?;
        let mut out = BufWriter::new(file);
        writeln!(out, "{EDGES_HEADER}").map_err(|e| RunDirError::io(path, e))?;
        // On disk at once: the file is whole at every moment after this.
        out.flush().map_err(|e| RunDirError::io(path, e))?;
        let rung_start = out
            .get_mut()
            .stream_position()
            .map_err(|e| RunDirError::io(path, e))?;
        Ok(EdgeWriter {
            path: path.to_path_buf(),
            out,
            rung_start,
        })
    }

    /// Marks the end of the file as where the next rung's rows begin: what
    /// [`EdgeWriter::write`] appends from now on is that rung's, until
    /// [`EdgeWriter::replace_rung`].
    ///
    /// # Errors
    ///
    /// Returns [`RunDirError::Io`] if flushing or querying the file's
    /// position fails.
    pub fn start_rung(&mut self) -> Result<(), RunDirError> {
        self.out
            .flush()
            .map_err(|e| RunDirError::io(&self.path, e))?;
        self.rung_start = self
            .out
            .get_mut()
            .stream_position()
            .map_err(|e| RunDirError::io(&self.path, e))?;
        Ok(())
    }

    /// Replaces every row written since [`EdgeWriter::start_rung`] (the
    /// rung's provisional edges) by `rows`, one GPU's edges of rung
    /// `rung_id` after another. The final rows are written over the
    /// provisional ones in one write, and the file is cut only after it,
    /// where they came out shorter: a process killed during the
    /// replacement leaves the provisional rows or the final ones, never a
    /// file without the rung (cutting first and writing one GPU at a time
    /// left only the header after a kill in between).
    ///
    /// # Errors
    ///
    /// Returns [`RunDirError::Io`] if seeking, writing, cutting or
    /// flushing `edges.csv` fails.
    pub fn replace_rung(
        &mut self,
        rung_id: u32,
        rows: &[(&str, &[EdgeRecord])],
    ) -> Result<(), RunDirError> {
        let mut block = Vec::new();
        for (gpu, edges) in rows {
            for e in *edges {
                row(&mut block, rung_id, gpu, e);
            }
        }
        let io = |e| RunDirError::io(&self.path, e);
        self.out.flush().map_err(io)?;
        let file = self.out.get_mut();
        file.seek(std::io::SeekFrom::Start(self.rung_start))
            .map_err(io)?;
        file.write_all(&block).map_err(io)?;
        let end = self.rung_start + block.len() as u64;
        file.set_len(end).map_err(io)?;
        self.start_rung()
    }

    /// Writes one GPU's edges of one rung, then flushes.
    ///
    /// # Errors
    ///
    /// Returns [`RunDirError::Io`] if writing a row or the final flush to
    /// `edges.csv` fails.
    pub fn write(
        &mut self,
        rung_id: u32,
        gpu: &str,
        edges: &[EdgeRecord],
    ) -> Result<(), RunDirError> {
        let mut block = Vec::new();
        for e in edges {
            row(&mut block, rung_id, gpu, e);
        }
        self.out
            .write_all(&block)
            .map_err(|er| RunDirError::io(&self.path, er))?;
        self.out.flush().map_err(|e| RunDirError::io(&self.path, e))
    }
}

/// One row of `edges.csv`.
fn row(out: &mut Vec<u8>, rung_id: u32, gpu: &str, e: &EdgeRecord) {
    out.extend_from_slice(
        format!(
            "{rung_id},{gpu},{},{},{},{}\n",
            e.index,
            e.kind.as_str(),
            e.intended_ns,
            e.achieved_ns
        )
        .as_bytes(),
    );
}

/// The whole rows of `edges.csv` as bytes, header first: the one reader
/// of the file (the collator parses them with polars, [`read_edges`] with
/// serde). A torn last line (a killed run) is dropped. None when the file
/// is absent or holds no whole row (no rung got as far as an edge).
///
/// # Errors
///
/// As [`crate::layout::read_regular`]; [`RunDirError::Format`] when the
/// first line is not [`EDGES_HEADER`].
pub fn edges_bytes(path: &Path) -> Result<Option<Vec<u8>>, RunDirError> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(None);
    }
    let mut bytes = crate::layout::read_regular(path, None)?;
    // The header first: a foreign or edited header is refused even on a
    // file with no whole row yet (a torn header is a file with no row).
    let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    let whole_header = bytes.len() > first.len();
    if whole_header && first != EDGES_HEADER.as_bytes() {
        return Err(RunDirError::Format {
            path: path.to_path_buf(),
            message: format!(
                "its header is not `{EDGES_HEADER}` (a line ending, byte-order mark or column order the run never writes): the file was edited or comes from another tool; restore it from the original run directory"
            ),
        });
    }
    let cut = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    bytes.truncate(cut);
    if bytes.iter().filter(|b| **b == b'\n').count() < 2 {
        return Ok(None);
    }
    Ok(Some(bytes))
}

/// Reads `edges.csv` into rows (empty if absent or without a whole row).
///
/// # Errors
///
/// As [`edges_bytes`]; [`RunDirError::Format`] when a row does not parse
/// as an [`EdgeRow`] (the message names the line) or an edge (rung, GPU,
/// index) is listed twice ([`check_unique`]).
pub fn read_edges(path: &Path) -> Result<Vec<EdgeRow>, RunDirError> {
    let Some(bytes) = edges_bytes(path)? else {
        return Ok(Vec::new());
    };
    let mut rdr = csv::Reader::from_reader(&bytes[..]);
    let mut rows = Vec::new();
    for (i, row) in rdr.deserialize::<EdgeRow>().enumerate() {
        rows.push(row.map_err(|e| RunDirError::Format {
            path: path.to_path_buf(),
            message: format!("line {}: {e}", i + 2),
        })?);
    }
    check_unique(
        path,
        rows.iter().map(|r| (r.rung_id, r.gpu.as_str(), r.index)),
    )?;
    Ok(rows)
}

/// Refuses an edge (rung, GPU, index) listed twice: the run writes each
/// edge once, so a repeated one was added or copied.
///
/// # Errors
///
/// [`RunDirError::Format`] naming the first edge listed twice.
pub fn check_unique<'a>(
    path: &Path,
    edges: impl Iterator<Item = (u32, &'a str, u32)>,
) -> Result<(), RunDirError> {
    // Sorted, not hashed: each edge a key of three integers (its GPU by
    // the order its key was first seen) beside its row. A set of the
    // keys took 0.6 s of a 4-hour 8-GPU run's 1.7 M edges.
    // A run's file names a few GPUs; an edited one may name a new one on
    // every row, so they are numbered by a map, not a list searched.
    let mut gpus: Vec<&str> = Vec::new();
    let mut numbers: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut keys: Vec<(u128, usize)> = Vec::with_capacity(edges.size_hint().0);
    for (row, (rung, gpu, index)) in edges.enumerate() {
        let g = *numbers.entry(gpu).or_insert_with(|| {
            gpus.push(gpu);
            gpus.len() - 1
        });
        keys.push((
            (u128::from(rung) << 96) | ((g as u128) << 32) | u128::from(index),
            row,
        ));
    }
    keys.sort_unstable();
    // The row a reader going down the file finds repeated first: the
    // earliest second row of any key.
    let first_repeat = keys
        .windows(2)
        .filter(|w| w[0].0 == w[1].0)
        .map(|w| (w[1].1, w[1].0))
        .min();
    match first_repeat {
        None => Ok(()),
        Some((_, key)) => {
            let (rung, g, index) = ((key >> 96) as u32, (key >> 32) as u64 as usize, key as u32);
            Err(RunDirError::Format {
                path: path.to_path_buf(),
                message: format!(
                    "edge {index} of {} in rung {rung} is listed twice: the file was edited after the run",
                    gpus[g]
                ),
            })
        }
    }
}

/// Reads a CSV table of the run directory into rows (empty if the file is
/// absent). A run killed mid-write leaves a torn last line: every whole row
/// before it is kept. Any other bad row is an error naming the file and the
/// line, so a damaged file never loses its rest without a word.
///
/// # Errors
///
/// Returns [`RunDirError::Format`] if the file exists but cannot be opened
/// or its header line cannot be read, or if any row fails to read or to
/// deserialize into `T` (the message gives the line number), except a last
/// line without its newline (torn by a kill mid-write: dropped). A file
/// that is absent is not an error.
pub fn read_rows<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, RunDirError> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(Vec::new());
    }
    let bytes = crate::layout::read_regular(path, None)?;
    // A last line cut off mid-write has no newline; a whole last line that
    // does not read is an error like any other.
    let torn_tail = !bytes.ends_with(b"\n");
    let bad = |line: usize, e: &dyn std::fmt::Display| RunDirError::Format {
        path: path.to_path_buf(),
        message: format!("line {line}: {e}"),
    };
    let mut rdr = csv::Reader::from_reader(std::io::Cursor::new(bytes));
    let headers = rdr.headers().map_err(|e| bad(1, &e))?.clone();
    let records: Vec<Result<csv::StringRecord, csv::Error>> = rdr.records().collect();
    let last = records.len().saturating_sub(1);
    let mut out = Vec::with_capacity(records.len());
    for (i, rec) in records.into_iter().enumerate() {
        let row = rec.map_err(|e| e.to_string()).and_then(|r| {
            r.deserialize::<T>(Some(&headers))
                .map_err(|e| e.to_string())
        });
        match row {
            Ok(r) => out.push(r),
            // A torn last line (killed mid-write): keep what is whole.
            Err(_) if i == last && i > 0 && torn_tail => break,
            Err(e) => return Err(bad(i + 2, &e)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{EDGES_HEADER, edges_bytes, read_edges};

    #[test]
    fn a_foreign_header_is_refused_even_without_rows_and_a_torn_one_is_no_rows() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("edges.csv");
        std::fs::write(&p, "rung,gpu,index,kind,intended_ns,achieved_ns\n").unwrap();
        let e = edges_bytes(&p).unwrap_err().to_string();
        assert!(e.contains("header is not") && e.contains("restore"), "{e}");
        std::fs::write(&p, format!("{EDGES_HEADER}\r\n1,gpu0,0,rise,1,2\n")).unwrap();
        assert!(edges_bytes(&p).is_err(), "a CRLF header is not the run's");
        std::fs::write(&p, "rung_id,gpu,ind").unwrap();
        assert_eq!(edges_bytes(&p).unwrap(), None);
        std::fs::write(
            &p,
            format!("{EDGES_HEADER}\n1,gpu0,0,rise,1,2\n1,gpu0,0,rise,1,2\n"),
        )
        .unwrap();
        let e = read_edges(&p).unwrap_err().to_string();
        assert!(e.contains("listed twice"), "{e}");
    }
    /// The first repeat a reader going down the rows finds, by a set.
    fn first_repeat_by_set(edges: &[(u32, &str, u32)]) -> Option<String> {
        let mut seen = std::collections::HashSet::new();
        edges
            .iter()
            .find(|e| !seen.insert(**e))
            .map(|(r, g, i)| format!("edge {i} of {g} in rung {r} is listed twice"))
    }

    #[test]
    fn the_sorted_check_names_the_repeat_a_set_finds_first() {
        let gpus = ["gpu0", "gpu1", "GPU-0123456789abcdef-long"];
        let mut x: u64 = 20261207;
        let mut next = |n: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        for case in 0..300 {
            let len = 1 + next(80) as usize;
            // Small ranges make repeats common; the widest make keys that
            // differ only in their high bits.
            let span = if case % 3 == 0 {
                u64::from(u32::MAX)
            } else {
                4
            };
            let edges: Vec<(u32, &str, u32)> = (0..len)
                .map(|_| {
                    (
                        next(span.min(3) + 1) as u32 * if span > 4 { u32::MAX / 3 } else { 1 },
                        gpus[next(3) as usize],
                        next(span) as u32,
                    )
                })
                .collect();
            let got = super::check_unique(std::path::Path::new("edges.csv"), edges.iter().copied())
                .err()
                .map(|e| e.to_string());
            match (first_repeat_by_set(&edges), got) {
                (None, None) => {}
                (Some(want), Some(got)) => assert!(got.contains(&want), "{got} / {want}"),
                (want, got) => panic!("case {case}: {want:?} against {got:?} for {edges:?}"),
            }
        }
    }

    use super::{EdgeRow, read_rows};

    fn file(body: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("edges.csv");
        std::fs::write(
            &p,
            format!("rung_id,gpu,index,kind,intended_ns,achieved_ns\n{body}"),
        )
        .unwrap();
        (tmp, p)
    }

    /// A rung's provisional rows are replaced by its final ones: one row
    /// per edge, earlier rungs untouched.
    #[test]
    fn a_rungs_provisional_rows_are_replaced_by_its_final_ones() {
        use powerlab_core::hw::EdgeRecord;
        use powerlab_core::shape::EdgeKind;
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("edges.csv");
        let edge = |index: u32, achieved_ns: i64| EdgeRecord {
            index,
            kind: EdgeKind::Rise,
            intended_ns: 100 * i64::from(index),
            achieved_ns,
        };
        let mut w = super::EdgeWriter::create(&p).unwrap();
        w.start_rung().unwrap();
        w.replace_rung(0, &[("gpu0", &[edge(0, 1)])]).unwrap();
        w.write(1, "gpu1", &[edge(0, 5), edge(1, 105)]).unwrap();
        w.write(1, "gpu0", &[edge(0, 4)]).unwrap();
        let provisional: Vec<EdgeRow> = read_rows(&p).unwrap();
        assert_eq!(provisional.len(), 4, "on disk while the rung runs");
        let finals = [edge(0, 3), edge(1, 103)];
        w.replace_rung(1, &[("gpu0", &finals), ("gpu1", &finals)])
            .unwrap();
        let rows: Vec<EdgeRow> = read_rows(&p).unwrap();
        let got: Vec<(u32, &str, u32, i64)> = rows
            .iter()
            .map(|r| (r.rung_id, r.gpu.as_str(), r.index, r.achieved_ns))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, "gpu0", 0, 1),
                (1, "gpu0", 0, 3),
                (1, "gpu0", 1, 103),
                (1, "gpu1", 0, 3),
                (1, "gpu1", 1, 103),
            ]
        );
    }

    #[test]
    fn a_torn_last_line_keeps_the_whole_rows() {
        let (_t, p) = file("1,gpu0,0,rise,100,101\n1,gpu0,1,fall,200,201\n1,gpu0,2,ri");
        let rows: Vec<EdgeRow> = read_rows(&p).unwrap();
        assert_eq!(rows.len(), 2);
    }

    /// Issue 19 case 14: a bad row in the middle used to end the table
    /// silently, dropping every row after it.
    #[test]
    fn a_bad_row_in_the_middle_is_an_error_naming_file_and_line() {
        let (_t, p) = file(
            "1,gpu0,0,rise,100,101\n1,gpu0,1,fall,2x0,201\n1,gpu0,2,rise,300,301\n1,gpu0,3,fall,400,401\n",
        );
        let e = read_rows::<EdgeRow>(&p).unwrap_err().to_string();
        assert!(e.contains("edges.csv") && e.contains("line 3"), "{e}");
    }
}
