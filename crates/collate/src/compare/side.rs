//! One side of a comparison: a single-node run as read from its collated
//! report (`report/summary.csv`, `report/per_gpu.csv`), its manifest
//! (campaign, GPUs by UUID, how the run ended) and its idle health capture
//! (`health.json`, when the run took one). [`crate::comparison`] reads it.

use powerlab_analysis::per_gpu::GpuRungRow;
use powerlab_rundir::{Manifest, RunStatus};
use std::path::PathBuf;

pub use powerlab_rundir::summary::SummaryRow;

/// One run, as a comparison reads it.
#[derive(Debug, Clone)]
pub struct Side {
    /// The run directory.
    pub dir: PathBuf,
    /// Its manifest.
    pub manifest: Manifest,
    /// Its report, how it was found (`up to date`, `collated now (…)`…).
    pub report: String,
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
