//! Parquet copies of CSV tables, so the same files load in polars, DuckDB
//! or Spark with their column types.

use crate::error::CollateError;
use crate::report::{Report, Scope};
use polars::prelude::*;
use powerlab_rundir::ReportFile;
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
    let out = csv_path.with_extension("parquet");
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

/// The Parquet copies of a report's tables (and the rack curve).
pub struct Parquet;

impl super::Exporter for Parquet {
    fn export(&self, report: &Report, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
        let mut files = Vec::new();
        let tables: &[ReportFile] = match &report.scope {
            Scope::Node(_) => &[
                ReportFile::SummaryCsv,
                ReportFile::RepeatsCsv,
                ReportFile::InPhaseVsStaggeredCsv,
                ReportFile::PerGpuCsv,
            ],
            Scope::Rack(r) => {
                files.push(write_frame(
                    &mut r.curve_table.clone(),
                    &dir.join(ReportFile::RackCurveParquet.file_name()),
                )?);
                &[
                    ReportFile::SummaryCsv,
                    ReportFile::InPhaseVsStaggeredCsv,
                    ReportFile::NodesCsv,
                ]
            }
        };
        for t in tables {
            files.extend(beside_csv(&dir.join(t.file_name()))?);
        }
        Ok(files)
    }
}
