//! One side of a comparison: a single-node run as read from its collated
//! report (`report/summary.csv`, `report/per_gpu.csv`), its manifest
//! (campaign, GPUs by UUID, how the run ended) and its idle health capture
//! (`health.json`, when the run took one). [`crate::comparison`] reads it.

use powerlab_analysis::per_gpu::GpuRungRow;
use powerlab_rundir::{Manifest, Mode, PhaseKind, RunStatus};
use serde::Deserialize;
use std::path::PathBuf;

/// The columns of `summary.csv` a comparison reads back.
#[derive(Debug, Clone, Deserialize)]
pub struct SummaryRow {
    /// Rung id.
    pub rung_id: u32,
    /// The rung's label (with its `/r<repeat>` suffix).
    pub label: String,
    /// Campaign phase.
    pub phase: String,
    /// `idle`, `sustained`, `duty`, `nccl`, `soak` or `ramp_up`.
    pub kind: PhaseKind,
    /// `in_phase` or `staggered`.
    pub mode: Mode,
    /// Period the GPUs ran, ms.
    pub period_ms: Option<f64>,
    /// Duty fraction.
    pub duty: f64,
    /// Repeat number.
    pub repeat: u32,
    /// How the figures were obtained.
    pub method: String,
    /// Why figures are missing or qualified.
    pub verdict: Option<String>,
    /// Mean node power, W.
    pub mean_w: Option<f64>,
    /// Peak, W.
    pub peak_w: Option<f64>,
    /// p99 − p1, W.
    pub spread_w: Option<f64>,
    /// p90 − p10, W.
    pub swing_w: Option<f64>,
    /// Why the rung's raw data are incomplete.
    pub incomplete: Option<String>,
    /// The composed figures' 95 % intervals within the run (reports
    /// collated before they existed have none).
    #[serde(default)]
    pub mean_ci95_lo_w: Option<f64>,
    /// Upper end.
    #[serde(default)]
    pub mean_ci95_hi_w: Option<f64>,
    /// The peak's.
    #[serde(default)]
    pub peak_ci95_lo_w: Option<f64>,
    /// Upper end.
    #[serde(default)]
    pub peak_ci95_hi_w: Option<f64>,
    /// The spread's.
    #[serde(default)]
    pub spread_ci95_lo_w: Option<f64>,
    /// Upper end.
    #[serde(default)]
    pub spread_ci95_hi_w: Option<f64>,
    /// The swing's.
    #[serde(default)]
    pub swing_ci95_lo_w: Option<f64>,
    /// Upper end.
    #[serde(default)]
    pub swing_ci95_hi_w: Option<f64>,
}

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
