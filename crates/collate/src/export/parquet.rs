//! Parquet copies of CSV tables, so the same files load in polars, DuckDB
//! or Spark with their column types.

use crate::report::{Report, Scope};
use powerlab_rundir::ReportFile;
use powerlab_samples::error::CollateError;
use powerlab_samples::parquet_io::{beside_csv, write_frame};
use std::path::{Path, PathBuf};

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
