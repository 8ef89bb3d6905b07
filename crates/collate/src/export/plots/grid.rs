//! A prediction's grid study plots: `plots/safe_gpus` (the largest GPU
//! count within the declared oscillation limits against the iteration
//! period, a line per scenario, the danger bands shaded, the job's own
//! period and GPU count marked) and `plots/grid_response` (the facility
//! bus's frequency deviation in each played window, the screen's dashed,
//! the simulator's solid).

use super::Chart;
use super::draw::{DrawResult, both};
use plotters::coord::Shift;
use plotters::prelude::*;
use powerlab_rundir::PlotFile;
use powerlab_samples::error::CollateError;
use std::path::{Path, PathBuf};

/// What `plots/safe_gpus` shows.
#[derive(Debug, Clone, PartialEq)]
pub struct SafeGpusChart {
    /// The caption.
    pub caption: String,
    /// Per scenario: its label and (period s, GPUs) points.
    pub lines: Vec<(String, Vec<(f64, f64)>)>,
    /// The danger bands, s.
    pub bands: Vec<[f64; 2]>,
    /// The job's period, s, and GPU count.
    pub job: (f64, f64),
}

/// One window's panel of `plots/grid_response`.
#[derive(Debug, Clone, PartialEq)]
pub struct ResponsePanel {
    /// The window's name.
    pub title: String,
    /// The screen's Δf at the bus, (s, mHz).
    pub screen: Vec<(f64, f64)>,
    /// The simulator's (empty: not run).
    pub simulated: Vec<(f64, f64)>,
}

/// Writes `plots/safe_gpus.svg`/`.png` into `dir`.
///
/// # Errors
///
/// [`CollateError::Plot`] naming the file when it cannot be drawn or
/// written.
pub fn write_safe_gpus_plot(c: &SafeGpusChart, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
    both(
        &PlotFile::SafeGpus.stem_in(dir),
        (1000, 520),
        &Chart::SafeGpus(c),
    )
}

/// Writes `plots/grid_response.svg`/`.png` into `dir` (nothing without a
/// panel).
///
/// # Errors
///
/// [`CollateError::Plot`] naming the file when it cannot be drawn or
/// written.
pub fn write_grid_response_plot(
    title: &str,
    panels: &[ResponsePanel],
    dir: &Path,
) -> Result<Vec<PathBuf>, CollateError> {
    if panels.is_empty() {
        return Ok(Vec::new());
    }
    let rows = panels.len().div_ceil(2) as u32;
    both(
        &PlotFile::GridResponse.stem_in(dir),
        (1100, 60 + 230 * rows),
        &Chart::GridResponse(title, panels),
    )
}

/// GPUs against the period, both logarithmic.
pub(super) fn safe_gpus_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    c: &SafeGpusChart,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let pts = c.lines.iter().flat_map(|l| l.1.iter());
    let x = pts.clone().map(|p| p.0).filter(|v| *v > 0.0);
    let (x0, x1) = x.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    let (x0, x1) = if x0 < x1 { (x0, x1) } else { (0.3, 10.0) };
    let y = pts.map(|p| p.1).chain([c.job.1]).filter(|v| *v > 0.0);
    let (y0, y1) = y.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    let (y0, y1) = if y0 < y1 {
        (y0 / 2.0, y1 * 2.0)
    } else {
        (1.0, 10.0)
    };
    let mut chart = ChartBuilder::on(area)
        .caption(&c.caption, ("sans-serif", 15))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(70)
        .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("iteration period (s)")
        .y_desc("largest GPU count within the limits")
        .label_style(("sans-serif", 12))
        .draw()?;
    let shade = RGBColor(230, 120, 60).mix(0.18);
    chart.draw_series(c.bands.iter().map(|b| {
        Rectangle::new(
            [(b[0].max(x0), y0), (b[1].min(x1), y1)],
            ShapeStyle::from(&shade).filled(),
        )
    }))?;
    for (k, (label, line)) in c.lines.iter().enumerate() {
        let col = Palette99::pick(k).to_rgba();
        chart
            .draw_series(LineSeries::new(
                line.iter().copied().filter(|p| p.1 > 0.0),
                ShapeStyle::from(&col).stroke_width(2),
            ))?
            .label(label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col));
    }
    let (t, g) = c.job;
    chart
        .draw_series(std::iter::once(Cross::new(
            (t, g),
            7,
            BLACK.stroke_width(2),
        )))?
        .label("the job (its period, its GPUs)")
        .legend(|(x, y)| Cross::new((x + 10, y), 5, BLACK.stroke_width(2)));
    chart.draw_series(LineSeries::new(
        [(t, y0), (t, y1)],
        BLACK.mix(0.5).stroke_width(1),
    ))?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 11))
        .draw()?;
    Ok(())
}

/// A panel per window: Δf at the bus, mHz, against time.
pub(super) fn grid_response_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    panels: &[ResponsePanel],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (head, body) = area.split_vertically(30);
    head.titled(title, ("sans-serif", 16))?;
    let rows = panels.len().div_ceil(2);
    let cells = body.split_evenly((rows, 2));
    for (cell, p) in cells.iter().zip(panels) {
        let all = p.screen.iter().chain(&p.simulated);
        let x1 = all.clone().map(|v| v.0).fold(1.0f64, f64::max);
        let (lo, hi) = all.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v.1), b.max(v.1)));
        let (lo, hi) = if lo < hi {
            let pad = 0.1 * (hi - lo);
            (lo - pad, hi + pad)
        } else {
            (-1.0, 1.0)
        };
        let mut chart = ChartBuilder::on(cell)
            .caption(&p.title, ("sans-serif", 13))
            .margin(6)
            .x_label_area_size(28)
            .y_label_area_size(55)
            .build_cartesian_2d(0f64..x1, lo..hi)?;
        chart
            .configure_mesh()
            .x_desc("s")
            .y_desc("Δf bus (mHz)")
            .label_style(("sans-serif", 11))
            .draw()?;
        let blue = RGBColor(30, 90, 200);
        chart
            .draw_series(LineSeries::new(
                p.simulated.iter().copied(),
                ShapeStyle::from(&blue).stroke_width(2),
            ))?
            .label("simulator")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], blue));
        let red = RGBColor(220, 60, 40);
        chart
            .draw_series(DashedLineSeries::new(
                p.screen.iter().copied(),
                6,
                4,
                ShapeStyle::from(&red).stroke_width(1),
            ))?
            .label("screen (modal model)")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], red));
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font(("sans-serif", 10))
            .draw()?;
    }
    Ok(())
}
