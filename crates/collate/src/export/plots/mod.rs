//! Charts (SVG and PNG) with plotters and an embedded font, so they render
//! the same on a machine with no fonts installed: one file per family
//! (the node curve of every rung, the duty cycles across periods and
//! modes, NCCL, the instruments, the node's own power, the soak), and what
//! they share in `draw`.

mod cycles;
mod draw;
mod nccl;
mod node_curve;
mod node_power;
mod sensor;
mod soak;

pub use nccl::write_nccl_plot;
pub use node_power::{NodePowerSeries, write_node_power_plot};
pub use sensor::write_sensor_plot;
pub use soak::write_soak_plot;

use crate::curve::NodeCurve;
use crate::error::CollateError;
use crate::load::Run;
use crate::nccl::NcclRow;
use crate::sensor::verdict::PeriodAnswer;
use crate::soak::SoakLines;
use crate::summary::{Cycles, PhaseCompare, RepeatStats, RungSummary};
use draw::DrawResult;
use node_curve::Series3;
use plotters::coord::Shift;
use plotters::prelude::*;
use powerlab_rundir::PhaseKind;
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
}

impl Chart<'_> {
    /// Draws the chart on `area`.
    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        match self {
            Chart::Rung {
                title,
                series,
                x_max,
            } => node_curve::rung_chart(area, title, series, *x_max),
            Chart::Spread(r) => cycles::spread_chart(area, r),
            Chart::Compare(c) => cycles::compare_chart(area, c),
            Chart::Nccl(r) => nccl::nccl_chart(area, r),
            Chart::Sensor(a) => sensor::sensor_chart(area, a),
            Chart::NodePower(n) => node_power::node_power_chart(area, n),
            Chart::Soak(label, lines) => soak::soak_chart(area, label, lines),
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
            &dir.join("spread_vs_period"),
            (800, 480),
            &Chart::Spread(repeats),
        )?);
    }
    if !compare.is_empty() {
        files.extend(draw::both(
            &dir.join("in_phase_vs_staggered"),
            (1200, 420),
            &Chart::Compare(compare),
        )?);
    }
    Ok(files)
}
