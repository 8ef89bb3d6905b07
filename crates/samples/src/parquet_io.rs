//! Parquet files: a frame written as Parquet, and a CSV table copied
//! beside itself as Parquet (the same columns, their types). The file
//! helpers every writer of Parquet shares: the report's exporter
//! ([`crate::export::parquet`]), the raw files' copies ([`crate::load`]) and
//! the hand-off to a rack ([`crate::handoff`]).

use crate::error::CollateError;
use polars::prelude::*;
use std::path::{Path, PathBuf};

/// Writes `<name>.parquet` beside a CSV file, with the same columns (none
/// for a table without rows: its CSV is empty too).
///
/// # Errors
///
/// Returns [`CollateError::Polars`] when the CSV cannot be read as a table
/// or the Parquet writer fails, and [`CollateError::Io`] when the
/// `.parquet` file cannot be created.
pub fn beside_csv(csv_path: &Path) -> Result<Option<PathBuf>, CollateError> {
    let out = powerlab_rundir::files::parquet_beside(csv_path);
    let len = std::fs::metadata(csv_path).map(|m| m.len()).unwrap_or(0);
    if len == 0 {
        return Ok(None);
    }
    let mut df = CsvReadOptions::default()
        .with_has_header(true)
        .try_into_reader_with_file_path(Some(csv_path.to_path_buf()))
        .and_then(|r| r.finish())
        .map_err(CollateError::polars("reading a table for Parquet"))?;
    let file = std::fs::File::create(&out).map_err(|e| CollateError::io(&out, e))?;
    ParquetWriter::new(file)
        .finish(&mut df)
        .map_err(CollateError::polars("writing Parquet"))?;
    Ok(Some(out))
}

/// Writes `df` to `path` as Parquet.
///
/// # Errors
///
/// Returns [`CollateError::Io`] when the file cannot be created and
/// [`CollateError::Polars`] when the Parquet writer fails.
pub fn write_frame(df: &mut DataFrame, path: &Path) -> Result<PathBuf, CollateError> {
    let file = std::fs::File::create(path).map_err(|e| CollateError::io(path, e))?;
    ParquetWriter::new(file)
        .finish(df)
        .map_err(CollateError::polars("writing Parquet"))?;
    Ok(path.to_path_buf())
}

/// Writes a raw file's copy `df` to `path` as Parquet compressed with
/// LZ4 (raw): the copies hold every sample of a run, and zstd made writing
/// them half of a long run's reading (a 4-hour 8-GPU run's 2.3 M-row file:
/// 0.86 s with zstd, 0.37 s with LZ4, 14 MB against 20 MB). DuckDB, Arrow,
/// polars and Spark read it.
///
/// # Errors
///
/// As [`write_frame`].
pub fn write_raw_copy(df: &mut DataFrame, path: &Path) -> Result<PathBuf, CollateError> {
    let file = std::fs::File::create(path).map_err(|e| CollateError::io(path, e))?;
    ParquetWriter::new(file)
        .with_compression(ParquetCompression::Lz4Raw)
        .finish(df)
        .map_err(CollateError::polars("writing Parquet"))?;
    Ok(path.to_path_buf())
}
