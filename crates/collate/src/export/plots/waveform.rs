//! A predicted job's power against time (`plots/waveform`): the headline
//! waveform's first iterations in MW, with the `[supply]`'s rated power
//! dotted where declared; and the prediction's excursion envelope
//! (`plots/verdict_envelope`), one line per scenario, drawn by
//! [`super::excursion`].

use super::Chart;
use super::draw::{DrawResult, both};
use super::excursion::{PowerAxis, lines_chart, scenario_lines};
use plotters::coord::Shift;
use plotters::prelude::*;
use powerlab_analysis::envelope::Envelope;
use powerlab_core::units::W_PER_MW;
use powerlab_rundir::PlotFile;
use powerlab_samples::error::CollateError;
use std::path::{Path, PathBuf};

/// The stem of the waveform plot under `plots/`.
pub const WAVEFORM_STEM: &str = "waveform";

/// What the waveform plot draws.
#[derive(Debug, Clone, PartialEq)]
pub struct WaveformChart {
    /// The caption.
    pub caption: String,
    /// (time s, power W), in time order.
    pub points: Vec<(f64, f64)>,
    /// The `[supply]`'s rated power, W, where declared.
    pub rated_w: Option<f64>,
}

/// Writes `plots/waveform.svg` and `.png` into `dir` (the plots folder).
///
/// # Errors
///
/// [`CollateError::Plot`] naming the file when the chart cannot be drawn
/// or written.
pub fn write_waveform_plot(c: &WaveformChart, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
    both(&dir.join(WAVEFORM_STEM), (1000, 420), &Chart::Waveform(c))
}

/// Writes a prediction's `plots/verdict_envelope.svg` and `.png` into
/// `dir`: one line per scenario against the `[supply]`, in MW (nothing
/// where no scenario has a figure).
///
/// # Errors
///
/// [`CollateError::Plot`] naming the file when the chart cannot be drawn
/// or written.
pub fn write_scenario_envelope_plot(
    envelope: &Envelope,
    dir: &Path,
) -> Result<Vec<PathBuf>, CollateError> {
    if !super::has_envelope_plot(envelope) {
        return Ok(Vec::new());
    }
    both(
        &PlotFile::VerdictEnvelope.stem_in(dir),
        (900, 480),
        &Chart::ScenarioEnvelope(envelope),
    )
}

/// A prediction's envelope chart: a line per scenario, MW.
pub(super) fn scenario_envelope_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    envelope: &Envelope,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let lines = scenario_lines(envelope);
    lines_chart(area, envelope.supply.as_ref(), &lines, PowerAxis::JOB)
}

/// The waveform in MW against time, from 0 MW, with the rated power
/// dotted.
pub(super) fn waveform_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    c: &WaveformChart,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let mw: Vec<(f64, f64)> = c.points.iter().map(|p| (p.0, p.1 / W_PER_MW)).collect();
    let x1 = mw.last().map_or(1.0, |p| p.0).max(1e-3);
    let top = mw
        .iter()
        .map(|p| p.1)
        .chain(c.rated_w.map(|r| r / W_PER_MW))
        .fold(1e-6, f64::max)
        * 1.15;
    let mut chart = ChartBuilder::on(area)
        .caption(&c.caption, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..x1, 0f64..top)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("job power (MW)")
        .x_label_formatter(&|x| format!("{x:.2}"))
        .y_label_formatter(&|y| format!("{y:.1}"))
        .label_style(("sans-serif", 12))
        .draw()?;
    let red = RGBColor(200, 40, 40);
    chart
        .draw_series(LineSeries::new(mw.iter().copied(), red.stroke_width(1)))?
        .label("predicted job power")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], red));
    if let Some(r) = c.rated_w {
        let grey = RGBColor(60, 60, 60);
        let r = r / W_PER_MW;
        chart
            .draw_series(DashedLineSeries::new(
                [(0.0, r), (x1, r)],
                2,
                4,
                grey.stroke_width(2),
            ))?
            .label(format!("[supply] rated {r:.1} MW"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], grey));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 12))
        .draw()?;
    Ok(())
}
