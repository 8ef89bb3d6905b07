//! JSON outputs: `summary.json` (the three summary tables and the grid
//! metrics in one document)
//! and `sensor.json` (the sensor model a run was judged by, in the format
//! `powerlab calibrate` writes and `run --sensor` reads). Pretty-printed,
//! with a final newline.

use crate::report::Report;
use powerlab_analysis::grid::GridMetrics;
use powerlab_analysis::lifecycle::LifecycleEdge;
use powerlab_analysis::sensor::model::SensorModel;
use powerlab_analysis::summary::{PhaseCompare, RepeatStats, RungSummary};
use powerlab_samples::error::CollateError;
use std::path::{Path, PathBuf};

/// Writes `value` pretty-printed to `path`, with a final newline.
fn write_pretty<T: serde::Serialize + ?Sized>(value: &T, path: &Path) -> Result<(), CollateError> {
    let text = serde_json::to_string_pretty(value).unwrap_or_default();
    std::fs::write(path, text + "\n").map_err(|e| CollateError::io(path, e))
}

/// Writes `summary.json`: the rung summaries, the statistics across repeats
/// and the in-phase vs staggered rows, under `rungs`, `repeats` and
/// `in_phase_vs_staggered`, the grid metrics under `grid`, and the
/// lifecycle edges with their mean shapes under `lifecycle` (only given
/// a run that recorded a process's lifecycle).
///
/// # Errors
///
/// Returns [`CollateError::Io`] when `summary.json` cannot be written.
pub fn write_summary(
    rungs: &[RungSummary],
    repeats: &[RepeatStats],
    compare: &[PhaseCompare],
    grid: &GridMetrics,
    lifecycle: Option<&[LifecycleEdge]>,
    dir: &Path,
) -> Result<PathBuf, CollateError> {
    let path = dir.join(powerlab_rundir::ReportFile::SummaryJson.file_name());
    let mut json = serde_json::json!({
        "rungs": rungs,
        "repeats": repeats,
        "in_phase_vs_staggered": compare,
        "grid": grid,
    });
    if let (Some(l), Some(m)) = (lifecycle, json.as_object_mut()) {
        m.insert("lifecycle".into(), serde_json::json!(l));
    }
    write_pretty(&json, &path)?;
    Ok(path)
}

/// Writes `sensor.json`: the model the run's verdicts were judged by.
///
/// # Errors
///
/// Returns [`CollateError::Io`] when `sensor.json` cannot be written.
pub fn write_sensor_model(model: &SensorModel, dir: &Path) -> Result<PathBuf, CollateError> {
    let path = powerlab_rundir::RunFile::SensorModel.path_in(dir);
    write_pretty(model, &path)?;
    Ok(path)
}

/// The JSON documents of a report: the summary, and a node's sensor model.
pub struct Json;

impl super::Exporter for Json {
    fn export(&self, report: &Report, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
        let lifecycle = report
            .node()
            .filter(|n| n.lifecycle_moments > 0)
            .map(|n| n.lifecycle.as_slice());
        let mut files = vec![write_summary(
            &report.rungs,
            &report.repeats,
            &report.compare,
            &report.grid,
            lifecycle,
            dir,
        )?];
        if let Some(n) = report.node() {
            files.push(write_sensor_model(&n.sensor.model, dir)?);
        }
        Ok(files)
    }
}
