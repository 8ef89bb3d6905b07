//! Charts (SVG and PNG) with plotters and an embedded font, so they render
//! the same on a machine with no fonts installed: one file per family
//! (the node curve of every rung, the duty cycles across periods and
//! modes, NCCL, the instruments, the node's own power, the soak, and the
//! verdict above the answer: swing and excursion envelope), and what they
//! share in `draw`.

mod cycles;
mod draw;
mod excursion;
mod grid;
mod meters_vs_gpus;
mod nccl_busbw;
mod node_curve;
mod sensor;
mod soak;
mod verdict;
mod waveform;

pub use excursion::supply_words;
pub use grid::{ResponsePanel, SafeGpusChart, write_grid_response_plot, write_safe_gpus_plot};
pub use meters_vs_gpus::write_node_power_plot;
pub use nccl_busbw::write_nccl_plot;
pub use sensor::write_sensor_plot;
pub use soak::write_soak_plot;
pub use verdict::{SwingLimit, has_envelope_plot, has_swing_plot, write_verdict_plots};
pub use waveform::{
    WAVEFORM_STEM, WaveformChart, write_scenario_envelope_plot, write_waveform_plot,
};

use crate::report::NodePowerSeries;
use crate::report::{NodeParts, Report, Scope};
use draw::DrawResult;
use node_curve::Series3;
use plotters::coord::Shift;
use plotters::prelude::*;
use powerlab_analysis::curve::NodeCurve;
use powerlab_analysis::envelope::Envelope;
use powerlab_analysis::nccl::NcclRow;
use powerlab_analysis::sensor::verdict::PeriodAnswer;
use powerlab_analysis::soak::SoakLines;
use powerlab_analysis::summary::{Cycles, PhaseCompare, RepeatStats, RungSummary};
use powerlab_rundir::PhaseKind;
use powerlab_rundir::PlotFile;
use powerlab_rundir::ReportFile;
use powerlab_samples::error::CollateError;
use powerlab_samples::load::Run;
use std::path::{Path, PathBuf};

/// A chart of any family, as the drawing of both its files takes it.
enum Chart<'a> {
    /// One rung's node curve, `x_max` s long.
    Rung {
        title: String,
        series: Series3,
        x_max: f64,
    },
    /// Spread against the duty period.
    Spread(&'a [RepeatStats]),
    /// In phase vs staggered.
    Compare(&'a [PhaseCompare]),
    /// NCCL bus bandwidth against message size.
    Nccl(&'a [NcclRow]),
    /// NVML-visible vs reconstructed swing per duty period.
    Sensor(&'a [PeriodAnswer]),
    /// The node's own meters against the GPU sum.
    NodePower(&'a NodePowerSeries),
    /// The soak rung's label and every GPU's lines.
    Soak(&'a str, &'a [SoakLines]),
    /// The node's swing against the period, against the `[grid]`.
    VerdictSwing(&'a verdict::SwingChart),
    /// The excursion envelope against the `[supply]`.
    VerdictEnvelope(&'a Envelope, &'a [RungSummary]),
    /// A prediction's envelope, a line per scenario, against the
    /// `[supply]`.
    ScenarioEnvelope(&'a Envelope),
    /// A prediction's waveform against time.
    Waveform(&'a WaveformChart),
    /// A prediction's largest GPU count against the period.
    SafeGpus(&'a SafeGpusChart),
    /// A prediction's played windows: the bus frequency.
    GridResponse(&'a str, &'a [ResponsePanel]),
}

impl Chart<'_> {
    /// Draws the chart on `area`.
    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        // Every chart's prologue: a white canvas.
        area.fill(&WHITE)?;
        match self {
            Chart::Rung {
                title,
                series,
                x_max,
            } => node_curve::rung_chart(area, title, series, *x_max),
            Chart::Spread(r) => cycles::spread_chart(area, r),
            Chart::Compare(c) => cycles::compare_chart(area, c),
            Chart::Nccl(r) => nccl_busbw::nccl_chart(area, r),
            Chart::Sensor(a) => sensor::sensor_chart(area, a),
            Chart::NodePower(n) => meters_vs_gpus::node_power_chart(area, n),
            Chart::Soak(label, lines) => soak::soak_chart(area, label, lines),
            Chart::VerdictSwing(c) => verdict::swing_chart(area, c),
            Chart::VerdictEnvelope(e, r) => excursion::envelope_chart(area, e, r),
            Chart::ScenarioEnvelope(e) => waveform::scenario_envelope_chart(area, e),
            Chart::Waveform(c) => waveform::waveform_chart(area, c),
            Chart::SafeGpus(c) => grid::safe_gpus_chart(area, c),
            Chart::GridResponse(t, p) => grid::grid_response_chart(area, t, p),
        }
    }
}

/// Writes every plot; returns the files.
///
/// # Errors
///
/// Returns [`CollateError::Plot`] naming the file when a chart cannot be
/// drawn or its SVG or PNG written, or naming `dir` when one of the
/// plotting threads panics.
pub fn write_plots(
    curve: &NodeCurve,
    run: &Run,
    rungs: &[RungSummary],
    repeats: &[RepeatStats],
    compare: &[PhaseCompare],
    cycles: &Cycles,
    dir: &Path,
) -> Result<Vec<PathBuf>, CollateError> {
    // Rung charts are independent: draw them on every core.
    let jobs = node_curve::rung_charts(curve, run, cycles, dir);
    let mut files = draw::draw_in_parallel(&jobs, (1000, 420), dir)?;
    if rungs.iter().any(|r| r.rung.kind == PhaseKind::Duty) {
        files.extend(draw::both(
            &PlotFile::SpreadVsPeriod.stem_in(dir),
            (800, 480),
            &Chart::Spread(repeats),
        )?);
    }
    if !compare.is_empty() {
        files.extend(draw::both(
            &PlotFile::InPhaseVsStaggered.stem_in(dir),
            (1200, 420),
            &Chart::Compare(compare),
        )?);
    }
    Ok(files)
}

/// Every plot of a node or a rack report, under `plots/`.
pub struct Plots;

impl super::Exporter for Plots {
    fn export(&self, report: &Report, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
        let plots_dir = dir.join(ReportFile::Plots.file_name());
        let mut files = write_plots(
            &report.curve,
            &report.run,
            &report.rungs,
            &report.repeats,
            &report.compare,
            &report.cycles,
            &plots_dir,
        )?;
        files.extend(write_verdict_plots(
            &report.rungs,
            &report.repeats,
            &report.envelope,
            &report.grid,
            &plots_dir,
        )?);
        if let Scope::Node(n) = &report.scope {
            files.extend(node_plots(n, &plots_dir)?);
        }
        Ok(files)
    }
}

/// A node's own plots: NCCL, the sensor, the soak and the node's meters
/// (those the run has).
fn node_plots(n: &NodeParts, plots_dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
    let mut files = write_nccl_plot(&n.nccl, plots_dir)?;
    files.extend(write_sensor_plot(&n.sensor.answers, plots_dir)?);
    if let Some((label, lines)) = &n.soak.plot {
        files.extend(write_soak_plot(label, lines, plots_dir)?);
    }
    if !n.node_power.facts.is_empty() {
        files.extend(write_node_power_plot(&n.node_power.plot, plots_dir)?);
    }
    Ok(files)
}
