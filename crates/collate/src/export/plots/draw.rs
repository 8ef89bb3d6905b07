//! What every chart shares: the embedded font, and drawing one chart
//! into both its SVG and its PNG.

use super::Chart;
use plotters::prelude::*;
use powerlab_samples::error::CollateError;
use std::path::{Path, PathBuf};
use std::sync::Once;

static FONT: Once = Once::new();

/// Registers the embedded DejaVu Sans as `sans-serif`, once.
fn register_font() {
    FONT.call_once(|| {
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            include_bytes!("../../../../../assets/DejaVuSans.ttf"),
        );
    });
}

/// What a chart's drawing returns.
pub(super) type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// Draws `chart` at `size` into `path_stem`.svg and `path_stem`.png;
/// returns both paths.
pub(super) fn both(
    path_stem: &Path,
    size: (u32, u32),
    chart: &Chart<'_>,
) -> Result<Vec<PathBuf>, CollateError> {
    register_font();
    let (svg, png) = powerlab_rundir::PlotFile::svg_and_png(path_stem);
    {
        let area = SVGBackend::new(&svg, size).into_drawing_area();
        chart.draw(&area).map_err(|e| CollateError::Plot {
            path: svg.clone(),
            message: e.to_string(),
        })?;
        area.present().map_err(|e| CollateError::Plot {
            path: svg.clone(),
            message: e.to_string(),
        })?;
    }
    {
        let area = BitMapBackend::new(&png, size).into_drawing_area();
        chart.draw(&area).map_err(|e| CollateError::Plot {
            path: png.clone(),
            message: e.to_string(),
        })?;
        area.present().map_err(|e| CollateError::Plot {
            path: png.clone(),
            message: e.to_string(),
        })?;
    }
    Ok(vec![svg, png])
}

/// Draws independent charts on every core (each into its SVG and PNG at
/// `size`), each core taking the next chart not yet taken (a duty rung's
/// chart, with its composed cycle, costs more than an idle rung's); returns
/// their files in the order of `jobs`. A chart whose drawing panics is an
/// error naming `dir`.
pub(super) fn draw_in_parallel(
    jobs: &[(PathBuf, Chart<'_>)],
    size: (u32, u32),
    dir: &Path,
) -> Result<Vec<PathBuf>, CollateError> {
    let drawn = powerlab_samples::parallel::map_in_order(jobs, |(stem, chart)| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| both(stem, size, chart)))
            .unwrap_or_else(|_| {
                Err(CollateError::Plot {
                    path: dir.to_path_buf(),
                    message: "a plotting thread panicked".into(),
                })
            })
    });
    let mut files = Vec::new();
    for r in drawn {
        files.extend(r?);
    }
    Ok(files)
}
