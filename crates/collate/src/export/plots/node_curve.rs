//! The node curve of every rung (`plots/rung-NNN`): the driver-buffered,
//! instant and 1 s average fields summed over the GPUs, and the composed
//! node cycle of a duty rung, decimated to what a chart can show.

use super::Chart;
use super::draw::DrawResult;
use plotters::coord::Shift;
use plotters::prelude::*;
use powerlab_analysis::curve::NodeCurve;
use powerlab_analysis::summary::Cycles;
use powerlab_core::units::ns_to_s;
use powerlab_rundir::PlotFile;
use powerlab_samples::load::Run;
use std::path::{Path, PathBuf};

/// Min/max decimation into at most `buckets` buckets, so spikes survive.
fn envelope(t: &[f64], v: &[Option<f64>], buckets: usize) -> Vec<(f64, f64)> {
    let pts: Vec<(f64, f64)> = t
        .iter()
        .zip(v)
        .filter_map(|(t, v)| v.map(|v| (*t, v)))
        .collect();
    if pts.len() <= 2 * buckets {
        return pts;
    }
    let per = pts.len().div_ceil(buckets);
    let mut out = Vec::with_capacity(2 * buckets);
    for chunk in pts.chunks(per) {
        let (mut lo, mut hi) = (chunk[0], chunk[0]);
        for p in chunk {
            if p.1 < lo.1 {
                lo = *p;
            }
            if p.1 > hi.1 {
                hi = *p;
            }
        }
        if lo.0 <= hi.0 {
            out.push(lo);
            out.push(hi);
        } else {
            out.push(hi);
            out.push(lo);
        }
    }
    out
}

/// A rung chart's lines: (s since the rung's epoch, W).
pub(super) struct Series3 {
    /// The driver-buffered samples summed.
    pub(super) buffered: Vec<(f64, f64)>,
    /// The instant field summed.
    pub(super) instant: Vec<(f64, f64)>,
    /// The 1 s average field summed.
    pub(super) average: Vec<(f64, f64)>,
    /// The composed node cycle repeated over the measured window (duty rungs).
    pub(super) composed: Vec<(f64, f64)>,
}

/// One rung's node curve: the sample-and-hold lines, and the composed
/// cycle on top where there is one.
pub(super) fn rung_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    s: &Series3,
    x_max: f64,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let all = s
        .buffered
        .iter()
        .chain(&s.instant)
        .chain(&s.average)
        .chain(&s.composed)
        .map(|p| p.1);
    let (lo, hi) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    let (lo, hi) = if lo.is_finite() {
        (0f64.min(lo), hi * 1.08 + 1.0)
    } else {
        (0.0, 1.0)
    };
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..x_max.max(1e-3), lo..hi)?;
    chart
        .configure_mesh()
        .x_desc("time in rung (s)")
        .y_desc("node power (W)")
        .label_style(("sans-serif", 12))
        .draw()?;
    chart
        .draw_series(LineSeries::new(
            s.average.iter().copied(),
            ShapeStyle::from(&RGBColor(150, 150, 150)).stroke_width(1),
        ))?
        .label("1 s average field (comparison only)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RGBColor(150, 150, 150)));
    chart
        .draw_series(LineSeries::new(
            s.instant.iter().copied(),
            ShapeStyle::from(&RGBColor(230, 120, 30)).stroke_width(1),
        ))?
        .label("instant field")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RGBColor(230, 120, 30)));
    let raw_label = if s.composed.is_empty() {
        "driver-buffered samples (sum of each GPU's latest)"
    } else {
        "driver-buffered samples, sample and hold (what NVML sampled)"
    };
    let raw_color = if s.composed.is_empty() {
        RGBColor(20, 90, 200)
    } else {
        RGBColor(120, 160, 220)
    };
    chart
        .draw_series(LineSeries::new(
            s.buffered.iter().copied(),
            ShapeStyle::from(&raw_color).stroke_width(1),
        ))?
        .label(raw_label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], raw_color));
    if !s.composed.is_empty() {
        chart
            .draw_series(LineSeries::new(
                s.composed.iter().copied(),
                ShapeStyle::from(&RGBColor(200, 30, 30)).stroke_width(2),
            ))?
            .label("node cycle composed from every GPU's folded cycle (the figures)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RGBColor(200, 30, 30)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 12))
        .draw()?;
    Ok(())
}

/// Every rung's chart with the file stem it is drawn to (`rung-NNN` in
/// `dir`): its slice of the node curve and, for a duty rung, its composed
/// cycle over the measured window at 0.5 ms; a rung with no curve point
/// has none.
pub(super) fn rung_charts<'a>(
    curve: &NodeCurve,
    run: &Run,
    cycles: &Cycles,
    dir: &Path,
) -> Vec<(PathBuf, Chart<'a>)> {
    let columns = curve.columns();
    let (t, b, i, a) = (
        &columns.t_ns,
        &columns.buffered_w,
        &columns.instant_w,
        &columns.average_field_w,
    );
    // Each rung's slice and cycle laid out on every core.
    powerlab_samples::parallel::map_in_order(&run.rungs, |r| {
        let lo = t.partition_point(|x| *x < r.epoch_ns);
        let hi = t.partition_point(|x| *x < r.end_ns);
        if hi <= lo {
            return None;
        }
        let secs: Vec<f64> = t[lo..hi].iter().map(|x| ns_to_s(x - r.epoch_ns)).collect();
        let pick = |v: &Vec<Option<f64>>| {
            if v.len() >= hi {
                envelope(&secs, &v[lo..hi], 1500)
            } else {
                Vec::new()
            }
        };
        let chart = Chart::Rung {
            title: format!("rung {} — {}", r.info.id, r.info.label),
            series: Series3 {
                buffered: pick(b),
                instant: pick(i),
                average: pick(a),
                composed: composed(cycles, r),
            },
            x_max: ns_to_s(r.end_ns - r.epoch_ns),
        };
        Some((PlotFile::Rung(r.info.id).stem_in(dir), chart))
    })
    .into_iter()
    .flatten()
    .collect()
}

/// The composed cycle over the measured window, at 0.5 ms (empty where the
/// rung has none).
fn composed(cycles: &Cycles, r: &powerlab_samples::load::RungWindow) -> Vec<(f64, f64)> {
    match cycles.get(&r.info.id) {
        Some(Ok(c)) => {
            let step = 500_000i64;
            let n = ((r.end_ns - r.measure_from_ns) / step).clamp(0, 2_000_000);
            let ts: Vec<f64> = (0..n)
                .map(|k| ns_to_s(r.measure_from_ns + k * step - r.epoch_ns))
                .collect();
            let vs: Vec<Option<f64>> = c
                .along(r.epoch_ns, r.measure_from_ns, step, n as usize)
                .into_iter()
                .map(Some)
                .collect();
            envelope(&ts, &vs, 1500)
        }
        _ => Vec::new(),
    }
}
