//! Every file the collator writes, one writer per format: [`csv`] (the
//! tables and curves), [`json`] (the summary and the sensor model),
//! [`parquet`] (the rack's tables again, for polars, DuckDB or Spark),
//! [`markdown`] (the reports a person reads), [`html`] (the same report as
//! one self-contained page), [`plots`] (the charts as SVG and PNG) and
//! [`compare`] (the outputs of `powerlab compare`). The analysis modules compute data and never open a file;
//! these writers turn that data into bytes and nothing else.
//!
//! A collation computes one [`Report`] and hands it to every [`Exporter`]
//! in [`REPORT_EXPORTERS`], in order (a later one may read what an earlier
//! one wrote: Parquet copies the CSV tables, HTML renders `report.md`).

pub mod compare;
pub mod csv;
pub mod handoff;
pub mod html;
pub mod json;
pub mod markdown;
pub mod parquet;
pub mod plots;

use crate::report::Report;
use powerlab_samples::error::CollateError;
use std::path::{Path, PathBuf};

/// One output format of a report: writes its files for a [`Report`] into
/// the report directory and names them.
pub trait Exporter: Sync {
    /// Writes the report's files of this format into `dir` (which exists,
    /// with `plots/`); returns their paths.
    ///
    /// # Errors
    ///
    /// [`CollateError::Io`] when a file cannot be written;
    /// [`CollateError::Polars`] or [`CollateError::Plot`] when a table or
    /// plot cannot be made.
    fn export(&self, report: &Report, dir: &Path) -> Result<Vec<PathBuf>, CollateError>;
}

/// Every format of a node or rack report, in the order they are written.
pub const REPORT_EXPORTERS: &[&dyn Exporter] = &[
    &handoff::Handoff,
    &csv::Csv,
    &json::Json,
    &parquet::Parquet,
    &plots::Plots,
    &markdown::Markdown,
    &html::Html,
];

/// Writes `report` into `dir` in every format of [`REPORT_EXPORTERS`].
///
/// # Errors
///
/// The first exporter's error.
pub fn export_all(report: &Report, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
    let mut files = Vec::new();
    for e in REPORT_EXPORTERS {
        files.extend(e.export(report, dir)?);
    }
    Ok(files)
}
