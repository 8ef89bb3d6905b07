//! A prediction's plots under `plots/`: the headline waveform over its
//! first iterations with the `[supply]`'s rated power, and the excursion
//! envelope of every scenario against the `[supply]`, drawn by the run
//! report's own chart code ([`powerlab_collate::render`]).

use super::super::Prediction;
use powerlab_collate::render::{WaveformChart, write_scenario_envelope_plot, write_waveform_plot};
use powerlab_samples::error::CollateError;
use powerlab_samples::format::fmt_ms;
use std::path::{Path, PathBuf};

/// Iterations the waveform plot shows.
pub const PLOTTED_ITERATIONS: f64 = 3.0;

/// The waveform plot's chart: the headline's first
/// [`PLOTTED_ITERATIONS`] iterations, (s, W).
pub fn waveform_chart(p: &Prediction) -> WaveformChart {
    let per = PLOTTED_ITERATIONS * p.schedule.job.iteration_ms / p.resolution_ms;
    let n = (per.ceil() as usize).clamp(1, p.waveform.len().max(1));
    let head = p.scenarios.first().map_or("", |s| s.label.as_str());
    WaveformChart {
        caption: format!(
            "predicted job power, {} GPUs, {head}: the first {} iterations of {} ms",
            p.schedule.job.gpus,
            PLOTTED_ITERATIONS,
            fmt_ms(p.schedule.job.iteration_ms)
        ),
        points: p
            .waveform
            .iter()
            .take(n)
            .enumerate()
            .map(|(i, w)| (i as f64 * p.resolution_ms / 1000.0, *w))
            .collect(),
        rated_w: p.schedule.supply.as_ref().and_then(|s| s.rated_w),
    }
}

/// Writes `plots/waveform` and `plots/verdict_envelope` (SVG and PNG each)
/// into `plots_dir`.
///
/// # Errors
///
/// [`CollateError::Plot`] naming the file when a chart cannot be drawn or
/// written.
pub fn write_plots(p: &Prediction, plots_dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
    let mut files = write_waveform_plot(&waveform_chart(p), plots_dir)?;
    files.extend(write_scenario_envelope_plot(&p.envelope, plots_dir)?);
    Ok(files)
}
