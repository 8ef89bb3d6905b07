//! The NCCL bus bandwidth plot (`plots/nccl_busbw`).

use super::Chart;
use super::draw::{DrawResult, both};
use plotters::coord::Shift;
use plotters::prelude::*;
use powerlab_analysis::nccl::NcclRow;
use powerlab_rundir::PlotFile;
use powerlab_samples::error::CollateError;
use std::path::{Path, PathBuf};

/// Bus bandwidth against message size, one line per collective (sweep rungs).
///
/// # Errors
///
/// Returns [`CollateError::Plot`] naming the file when the chart cannot be
/// drawn or its SVG or PNG written.
pub fn write_nccl_plot(rows: &[NcclRow], dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
    if rows.len() < 2 {
        return Ok(Vec::new());
    }
    both(
        &PlotFile::NcclBusbw.stem_in(dir),
        (900, 520),
        &Chart::Nccl(rows),
    )
}

/// busbw against message size, one line per rung and collective.
pub(super) fn nccl_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    rows: &[NcclRow],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let x_lo = rows.iter().map(|r| r.bytes).min().unwrap_or(1).max(1) as f64;
    let x_hi = (rows.iter().map(|r| r.bytes).max().unwrap_or(2) as f64).max(x_lo * 2.0);
    let y_hi = rows.iter().map(|r| r.busbw_gbs).fold(1.0, f64::max) * 1.1;
    let ranks = rows.iter().map(|r| r.ranks).max().unwrap_or(0);
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("NCCL bus bandwidth, {}", powerlab_core::words::gpus(ranks)),
            ("sans-serif", 18),
        )
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), 0f64..y_hi)?;
    chart
        .configure_mesh()
        .x_desc("message size (bytes)")
        .y_desc("busbw (GB/s)")
        .x_label_formatter(&|v| powerlab_samples::format::fmt_bytes(v.round() as u64))
        .label_style(("sans-serif", 12))
        .draw()?;
    let colors = [
        RGBColor(20, 90, 200),
        RGBColor(230, 120, 30),
        RGBColor(40, 150, 60),
        RGBColor(180, 40, 120),
    ];
    let mut names: Vec<(u32, String)> = rows
        .iter()
        .map(|r| (r.rung_id, r.collective.clone()))
        .collect();
    names.dedup();
    for (k, (rung_id, name)) in names.iter().enumerate() {
        let pts: Vec<(f64, f64)> = rows
            .iter()
            .filter(|r| r.rung_id == *rung_id && &r.collective == name)
            .map(|r| (r.bytes as f64, r.busbw_gbs))
            .collect();
        if pts.len() < 2 {
            continue;
        }
        let c = colors[k % colors.len()];
        chart
            .draw_series(LineSeries::new(pts, ShapeStyle::from(&c).stroke_width(2)))?
            .label(name.clone())
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
