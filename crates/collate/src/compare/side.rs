//! One side of a comparison: a single-node run as read from its collated
//! report (`report/summary.csv`, `report/per_gpu.csv`), its manifest
//! (campaign, GPUs by UUID, how the run ended) and its idle health capture
//! (`health.json`, when the run took one). [`crate::comparison`] reads it.

use powerlab_analysis::per_gpu::GpuRungRow;
use powerlab_rundir::{Manifest, RunStatus};
use std::fmt;
use std::path::PathBuf;

pub use powerlab_rundir::summary::SummaryRow;

/// How a run's report was found.
#[derive(Debug, Clone, PartialEq)]
pub enum ReportState {
    /// Up to date with the run's files.
    UpToDate,
    /// The raw files archived: the report as it was collated.
    RawArchived,
    /// Collated by this comparison: why the report was out of date.
    CollatedNow(String),
}

impl fmt::Display for ReportState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UpToDate => f.write_str("up to date with its files"),
            Self::RawArchived => f.write_str("raw files archived: the report as it was collated"),
            Self::CollatedNow(why) => write!(f, "collated now ({why})"),
        }
    }
}

impl serde::Serialize for ReportState {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One run, as a comparison reads it.
#[derive(Debug, Clone)]
pub struct Side {
    /// The run directory.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
    /// Its report, how it was found.
    pub report: ReportState,
    /// Every rung's summary row.
    pub rungs: Vec<SummaryRow>,
    /// Every GPU in every rung (empty for a report without `per_gpu.csv`).
    pub per_gpu: Vec<GpuRungRow>,
    /// Whether the report has a `per_gpu.csv`.
    pub has_per_gpu: bool,
    /// The idle health capture, if the run took one; Err: why it does not read.
    pub health: Option<Result<serde_json::Value, String>>,
}

/// How a run ended, in words.
pub fn status_text(s: &RunStatus) -> String {
    match s {
        RunStatus::Complete => "complete".into(),
        RunStatus::Running => "no end recorded (still running, or killed)".into(),
        RunStatus::Interrupted { reason } => format!("interrupted: {reason}"),
        RunStatus::Failed { reason } => format!("failed: {reason}"),
    }
}

#[cfg(test)]
mod tests {
    use super::ReportState;

    #[test]
    fn a_report_state_writes_the_words_compare_always_wrote() {
        assert_eq!(
            ReportState::UpToDate.to_string(),
            "up to date with its files"
        );
        assert_eq!(
            ReportState::RawArchived.to_string(),
            "raw files archived: the report as it was collated"
        );
        let now = ReportState::CollatedNow("it was never collated: no report/".into());
        assert_eq!(
            now.to_string(),
            "collated now (it was never collated: no report/)"
        );
        assert_eq!(
            serde_json::to_value(&now).expect("serialises"),
            serde_json::json!("collated now (it was never collated: no report/)")
        );
    }
}
