//! The soak plot (`plots/soak`): every GPU's power, temperature and SM
//! clock over the soak.

use super::Chart;
use super::draw::{DrawResult, both};
use plotters::coord::Shift;
use plotters::prelude::*;
use powerlab_analysis::soak::SoakLines;
use powerlab_rundir::PlotFile;
use powerlab_samples::error::CollateError;
use std::path::{Path, PathBuf};

/// The soak plot (`plots/soak.svg`/`.png`): each GPU's power (1 s means),
/// GPU temperature and SM clock against seconds since the soak's start.
///
/// # Errors
///
/// Returns [`CollateError::Plot`] naming the file when the chart cannot be
/// drawn or written.
pub fn write_soak_plot(
    label: &str,
    lines: &[SoakLines],
    dir: &Path,
) -> Result<Vec<PathBuf>, CollateError> {
    both(
        &PlotFile::Soak.stem_in(dir),
        (1100, 900),
        &Chart::Soak(label, lines),
    )
}

/// Three panels (power, temperature, SM clock), one line per GPU.
pub(super) fn soak_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    label: &str,
    lines: &[SoakLines],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (title, body) = area.split_vertically(30);
    title.titled(
        &format!("Soak `{label}`: each GPU's power, temperature and SM clock (GPU draw only)"),
        ("sans-serif", 18),
    )?;
    let panels = body.split_evenly((3, 1));
    type Pick = fn(&SoakLines) -> &Vec<(f64, f64)>;
    let picks: [(Pick, &str); 3] = [
        (|l| &l.power_w, "W (1 s means)"),
        (|l| &l.temp_c, "GPU °C"),
        (|l| &l.sm_clock_mhz, "SM MHz"),
    ];
    let x_hi = lines
        .iter()
        .flat_map(|l| l.power_w.iter().chain(&l.temp_c).chain(&l.sm_clock_mhz))
        .fold(1.0f64, |x, p| x.max(p.0));
    for (panel, (pick, unit)) in panels.iter().zip(picks) {
        let pts = lines.iter().flat_map(|l| pick(l).iter());
        let (lo, hi) = pts.fold((f64::MAX, f64::MIN), |(l, h), p| (l.min(p.1), h.max(p.1)));
        let (lo, hi) = if lo <= hi {
            let pad = ((hi - lo) * 0.1).max(1.0);
            (lo - pad, hi + pad)
        } else {
            (0.0, 1.0)
        };
        let mut chart = ChartBuilder::on(panel)
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..x_hi * 1.02, lo..hi)?;
        chart
            .configure_mesh()
            .x_desc("time since the soak's start (s)")
            .y_desc(unit)
            .label_style(("sans-serif", 12))
            .draw()?;
        for (k, l) in lines.iter().enumerate() {
            let c = Palette99::pick(k).to_rgba();
            chart
                .draw_series(LineSeries::new(
                    pick(l).iter().copied(),
                    ShapeStyle::from(&c).stroke_width(1),
                ))?
                .label(l.gpu.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c));
        }
        if lines.len() <= 8 {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::LowerRight)
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .label_font(("sans-serif", 11))
                .draw()?;
        }
    }
    Ok(())
}
