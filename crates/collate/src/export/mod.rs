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

pub(crate) mod compare;
pub(crate) mod csv;
pub mod handoff;
pub(crate) mod html;
pub mod json;
pub(crate) mod markdown;
pub mod parquet;
pub(crate) mod plots;

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
/// The formats that read no other's files run beside those that do: the
/// tables (the hand-off, CSV, JSON, then Parquet, which copies the CSV)
/// on one core, the plots then Markdown and HTML (which inlines the
/// plots' SVG and renders `report.md`) on another. The files are named in
/// [`REPORT_EXPORTERS`]' order.
///
/// # Errors
///
/// The first exporter's error, in that order.
pub fn export_all(report: &Report, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
    let (tables, pages) = REPORT_EXPORTERS.split_at(TABLE_EXPORTERS);
    let groups = powerlab_samples::parallel::map_in_order(&[tables, pages], |group| {
        let mut files = Vec::new();
        for e in *group {
            files.extend(e.export(report, dir)?);
        }
        Ok::<_, CollateError>(files)
    });
    let mut files = Vec::new();
    for group in groups {
        files.extend(group?);
    }
    Ok(files)
}

/// The first exporters of [`REPORT_EXPORTERS`], the tables: none reads
/// what a later one writes.
const TABLE_EXPORTERS: usize = 4;
