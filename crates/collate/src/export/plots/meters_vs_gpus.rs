//! The node power plot (`plots/node_power`): the node's own meters
//! against the GPU sum over the run.

use super::Chart;
use super::draw::{DrawResult, both};
use crate::report::NodePowerSeries;
use plotters::coord::Shift;
use plotters::prelude::*;
use powerlab_rundir::PlotFile;
use powerlab_samples::error::CollateError;
use std::path::{Path, PathBuf};

/// The node's own power against the GPU sum over the run
/// (`plots/node_power.svg`/`.png`); nothing without a source.
///
/// # Errors
///
/// Returns [`CollateError::Plot`] naming the file when the chart cannot be
/// drawn or written.
pub fn write_node_power_plot(
    n: &NodePowerSeries,
    dir: &Path,
) -> Result<Vec<PathBuf>, CollateError> {
    if n.sources.iter().all(|(_, p)| p.is_empty()) {
        return Ok(Vec::new());
    }
    both(
        &PlotFile::NodePower.stem_in(dir),
        (1100, 520),
        &Chart::NodePower(n),
    )
}

/// The GPU sum and each source's readings, held until the next one.
pub(super) fn node_power_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    n: &NodePowerSeries,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let all = n
        .gpu
        .iter()
        .chain(n.sources.iter().flat_map(|(_, p)| p.iter()));
    let (x_hi, y_hi) = all.fold((1.0f64, 1.0f64), |(x, y), p| (x.max(p.0), y.max(p.1)));
    let mut chart = ChartBuilder::on(area)
        .caption(
            "Node power: chassis / meter readings vs the GPU sum (GPU draw only)",
            ("sans-serif", 18),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..x_hi * 1.02, 0f64..y_hi * 1.1)?;
    chart
        .configure_mesh()
        .x_desc("time since the run's start (s)")
        .y_desc("W")
        .label_style(("sans-serif", 12))
        .draw()?;
    let gpu_color = RGBColor(20, 90, 200);
    chart
        .draw_series(LineSeries::new(
            n.gpu.iter().copied(),
            ShapeStyle::from(&gpu_color).stroke_width(1),
        ))?
        .label("GPU sum (buffered, 1 s means)")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], gpu_color));
    let colors = [
        RGBColor(230, 120, 30),
        RGBColor(40, 150, 60),
        RGBColor(180, 40, 120),
    ];
    for (k, (name, pts)) in n.sources.iter().enumerate() {
        let c = colors[k % colors.len()];
        // Held until the next reading, as a meter shows it.
        let mut steps = Vec::with_capacity(pts.len() * 2);
        for w in pts.windows(2) {
            steps.push(w[0]);
            steps.push((w[1].0, w[0].1));
        }
        steps.extend(pts.last().copied());
        chart
            .draw_series(LineSeries::new(steps, ShapeStyle::from(&c).stroke_width(2)))?
            .label(format!("{name} (as answered)"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 12))
        .draw()?;
    Ok(())
}
