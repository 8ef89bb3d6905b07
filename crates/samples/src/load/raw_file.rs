//! One raw file read whole: checked against its index and header,
//! parsed, and copied to Parquet.

use super::{Run, bad_raw, raw_schema, without_hints};
use crate::error::CollateError;
use polars::prelude::*;
use std::path::Path;

/// One raw file read by [`read_raw_file`].
pub(crate) struct RawRead {
    /// Its rows.
    pub df: DataFrame,
    /// The size and CRC-32 of the file as read.
    pub stored: powerlab_rundir::raw::StoredSum,
    /// The buffer its bytes were read into, for the next file.
    pub buffer: Vec<u8>,
}

/// Reads one raw file whole into `buffer` (checked against its index, its
/// torn last line dropped), copying it to `parquet_dir` when given.
pub(crate) fn read_raw_file(
    path: &Path,
    run: &Run,
    parquet_dir: Option<&Path>,
    problems: &mut Vec<String>,
    buffer: Vec<u8>,
) -> Result<RawRead, CollateError> {
    let file =
        powerlab_rundir::raw::RawFile::read_into(path, buffer).map_err(|e| bad_raw(path, e))?;
    problems.extend(crate::integrity::verify_raw(
        path,
        &file.bytes,
        &run.manifest,
    )?);
    file.check_header().map_err(|e| bad_raw(path, e))?;
    let df = CsvReadOptions::default()
        .with_has_header(true)
        .with_schema(Some(raw_schema()))
        .into_reader_with_file_handle(std::io::Cursor::new(file.complete_lines()))
        .finish()
        .map_err(|e| CollateError::BadRaw {
            path: path.to_path_buf(),
            message: format!("unreadable raw samples: {}", without_hints(&e.to_string())),
        })?;
    if let Some(out) = parquet_dir {
        let stem = powerlab_rundir::raw::raw_stem(path);
        crate::parquet_io::write_raw_copy(
            &df,
            &powerlab_rundir::ReportFile::raw_parquet(out, &stem),
        )?;
    }
    Ok(RawRead {
        df,
        stored: file.stored,
        buffer: file.bytes,
    })
}
