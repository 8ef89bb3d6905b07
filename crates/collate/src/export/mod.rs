//! Every file the collator writes, one writer per format: [`csv`] (the
//! tables and curves), [`json`] (the summary and the sensor model),
//! [`parquet`] (the rack's tables again, for polars, DuckDB or Spark),
//! [`markdown`] (the reports a person reads), [`html`] (the same report as
//! one self-contained page), [`plots`] (the charts as SVG and PNG) and
//! [`compare`] (the outputs of `powerlab compare`). The analysis modules compute data and never open a file;
//! these writers turn that data into bytes and nothing else.
//!
//! A collation computes one [`Report`] and hands it to every [`Exporter`]
//! in [`REPORT_EXPORTERS`]: two chains written beside each other, each in
//! order (a later one may read what an earlier one of its chain wrote:
//! Parquet copies the CSV tables, HTML renders `report.md`).

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

/// Every format of a node or rack report, in chains: the chains are
/// written beside each other (one core each), the exporters of a chain in
/// order. An exporter may read what an earlier one of its own chain wrote,
/// never another chain's files: Parquet copies the CSV tables; HTML
/// inlines the plots' SVG and renders `report.md`. A new format joins the
/// chain whose files it reads, or either if it reads none.
pub const REPORT_EXPORTERS: &[&[&dyn Exporter]] = &[
    // The tables.
    &[&handoff::Handoff, &csv::Csv, &json::Json, &parquet::Parquet],
    // The pages.
    &[&plots::Plots, &markdown::Markdown, &html::Html],
];

/// Writes `report` into `dir` in every format of [`REPORT_EXPORTERS`],
/// the chains beside each other. The files are named chain by chain, each
/// in its exporters' order.
///
/// # Errors
///
/// The first error of the first chain that fails, in
/// [`REPORT_EXPORTERS`]' order.
pub fn export_all(report: &Report, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
    let chains = powerlab_samples::parallel::map_in_order(REPORT_EXPORTERS, |chain| {
        let mut files = Vec::new();
        for e in *chain {
            files.extend(e.export(report, dir)?);
        }
        Ok::<_, CollateError>(files)
    });
    let mut files = Vec::new();
    for chain in chains {
        files.extend(chain?);
    }
    Ok(files)
}
