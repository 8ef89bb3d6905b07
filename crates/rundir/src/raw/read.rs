//! Reading raw files: the one reader ([`RawFile`]: a regular file,
//! decompressed when archived, its header checked, its torn last line
//! dropped), and rows with serde ([`read_raw`]).

use super::{RAW_HEADER, RawRow, is_archived};
use crate::layout::RunDirError;
use std::path::{Path, PathBuf};

/// The columns of a raw file, in order (its header is them joined by
/// commas, [`RAW_HEADER`]).
pub const RAW_COLUMNS: [&str; 5] = ["ts_ns", "node", "gpu", "instrument", "value"];

/// A raw file's content as the run wrote it: read as a regular file of a
/// run directory ([`crate::layout::read_regular`]), and decompressed when
/// archived (`.csv.gz`, results committed with compressed raw files). The
/// one reader of raw files: the collator parses [`RawFile::complete_lines`]
/// with polars, [`read_raw`] with serde.
#[derive(Debug, Clone)]
pub struct RawFile {
    /// The file.
    pub path: PathBuf,
    /// Its content, decompressed.
    pub bytes: Vec<u8>,
    /// The file as it lay on disk when read (compressed where archived):
    /// its size and CRC-32, what a report records of its inputs without
    /// reading them a second time.
    pub stored: StoredSum,
}

/// The size and CRC-32 of a file's bytes as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredSum {
    /// Bytes read.
    pub bytes: u64,
    /// Their CRC-32.
    pub crc32: u32,
}

impl RawFile {
    /// Reads `path`, decompressing an archived file.
    ///
    /// # Errors
    ///
    /// As [`crate::layout::read_regular`]; [`RunDirError::Format`] when an
    /// archived file is not a readable gzip file.
    pub fn read(path: &Path) -> Result<RawFile, RunDirError> {
        RawFile::read_into(path, Vec::new())
    }

    /// As [`RawFile::read`], reading into `buffer` (see
    /// [`crate::layout::read_regular_into`]); [`RawFile::bytes`] is the
    /// buffer to pass to the next read.
    ///
    /// # Errors
    ///
    /// As [`RawFile::read`].
    pub fn read_into(path: &Path, buffer: Vec<u8>) -> Result<RawFile, RunDirError> {
        let mut bytes = crate::layout::read_regular_into(path, None, buffer)?;
        let stored = StoredSum {
            bytes: bytes.len() as u64,
            crc32: crc32fast::hash(&bytes),
        };
        if is_archived(path) {
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut out)
                .map_err(|e| RunDirError::Format {
                    path: path.to_path_buf(),
                    message: format!("not a readable gzip file: {e}"),
                })?;
            bytes = out;
        }
        Ok(RawFile {
            path: path.to_path_buf(),
            bytes,
            stored,
        })
    }

    /// Checks the first line is [`RAW_HEADER`].
    ///
    /// # Errors
    ///
    /// [`RunDirError::Format`] naming the header expected.
    pub fn check_header(&self) -> Result<(), RunDirError> {
        let first_line = self.bytes.split(|b| *b == b'\n').next().unwrap_or_default();
        if first_line == RAW_HEADER.as_bytes() {
            Ok(())
        } else {
            Err(RunDirError::Format {
                path: self.path.clone(),
                message: format!("header is not `{RAW_HEADER}`"),
            })
        }
    }

    /// The content up to its last whole line: a file cut mid-line (the
    /// writer killed) ends without a newline, and its torn row is dropped.
    pub fn complete_lines(&self) -> &[u8] {
        let cut = if self.bytes.last() == Some(&b'\n') {
            self.bytes.len()
        } else {
            self.bytes
                .iter()
                .rposition(|b| *b == b'\n')
                .map(|i| i + 1)
                .unwrap_or(0)
        };
        &self.bytes[..cut]
    }
}

/// Reads a raw file's rows with serde (the collator parses the same
/// [`RawFile`] with polars; this is for tests, tools and validation):
/// archived files are decompressed and a torn last line is dropped, as the
/// collator does. Every other bad row is an error naming the line.
///
/// # Errors
///
/// As [`RawFile::read`] and [`RawFile::check_header`];
/// [`RunDirError::Format`] when a row fails to read or to deserialize into
/// a [`RawRow`], the message giving the row's line number.
pub fn read_raw(path: &Path) -> Result<Vec<RawRow>, RunDirError> {
    let file = RawFile::read(path)?;
    file.check_header()?;
    let mut rdr = csv::Reader::from_reader(file.complete_lines());
    let mut out = Vec::new();
    for (i, row) in rdr.deserialize::<RawRow>().enumerate() {
        let row = row.map_err(|e| RunDirError::Format {
            path: path.to_path_buf(),
            message: format!("row {}: {e}", i + 2),
        })?;
        out.push(row);
    }
    Ok(out)
}
