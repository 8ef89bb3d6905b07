//! The instrument plot (`plots/swing_vs_period`): what NVML shows of the
//! node's swing against what the board did, per duty period.

use super::Chart;
use super::draw::{DrawResult, both};
use plotters::coord::Shift;
use plotters::prelude::*;
use powerlab_analysis::sensor::verdict::PeriodAnswer;
use powerlab_rundir::PlotFile;
use powerlab_samples::error::CollateError;
use std::path::{Path, PathBuf};

/// NVML-visible vs reconstructed node swing against the duty period.
///
/// # Errors
///
/// Returns [`CollateError::Plot`] naming the file when the chart cannot be
/// drawn or its SVG or PNG written.
pub fn write_sensor_plot(
    answers: &[PeriodAnswer],
    dir: &Path,
) -> Result<Vec<PathBuf>, CollateError> {
    if answers.len() < 2 {
        return Ok(Vec::new());
    }
    both(
        &PlotFile::SwingVsPeriod.stem_in(dir),
        (900, 520),
        &Chart::Sensor(answers),
    )
}

/// The NVML-visible and the reconstructed swing against the period.
pub(super) fn sensor_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    a: &[PeriodAnswer],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let lo = a
        .iter()
        .map(|x| x.period_ms)
        .fold(f64::INFINITY, f64::min)
        .max(0.1);
    let hi = a
        .iter()
        .map(|x| x.period_ms)
        .fold(0.0, f64::max)
        .max(lo * 2.0);
    let top = a
        .iter()
        .flat_map(|x| [x.visible_swing_w, x.reconstructed_swing_w])
        .flatten()
        .fold(1.0, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(area)
        .caption(
            "Node swing per duty period: what NVML shows vs what the board did",
            ("sans-serif", 18),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d((lo * 0.8..hi * 1.25).log_scale(), 0f64..top)?;
    chart
        .configure_mesh()
        .x_desc("duty period (ms)")
        .y_desc("swing (W)")
        .label_style(("sans-serif", 12))
        .draw()?;
    let pts = |f: &dyn Fn(&PeriodAnswer) -> Option<f64>| -> Vec<(f64, f64)> {
        let mut v: Vec<(f64, f64)> = a
            .iter()
            .filter_map(|x| f(x).map(|y| (x.period_ms, y)))
            .collect();
        v.sort_by(|p, q| p.0.total_cmp(&q.0));
        v
    };
    let series = [
        (
            "NVML-visible (p90 − p10 of buffered samples)",
            RGBColor(150, 150, 150),
            pts(&|x| x.visible_swing_w),
        ),
        (
            "reconstructed (folded on edges, window-corrected)",
            RGBColor(20, 90, 200),
            pts(&|x| x.reconstructed_swing_w),
        ),
    ];
    for (name, c, p) in series {
        if p.is_empty() {
            continue;
        }
        chart
            .draw_series(
                LineSeries::new(p, ShapeStyle::from(&c).filled().stroke_width(2)).point_size(4),
            )?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 12))
        .draw()?;
    Ok(())
}
