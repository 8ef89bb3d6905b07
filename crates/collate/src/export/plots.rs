//! Charts (SVG and PNG) with plotters and an embedded font, so they render
//! the same on a machine with no fonts installed.

use crate::columns::{f64_column, i64_column};
use crate::curve::NodeCurve;
use crate::error::CollateError;
use crate::load::Run;
use crate::nccl::NcclRow;
use crate::sensor::verdict::PeriodAnswer;
use crate::soak::SoakLines;
use crate::summary::{Cycles, PhaseCompare, RepeatStats, RungSummary};
use plotters::coord::Shift;
use plotters::prelude::*;
use powerlab_core::units::ns_to_s;
use powerlab_rundir::{Mode, PhaseKind};
use std::path::{Path, PathBuf};
use std::sync::Once;

static FONT: Once = Once::new();

fn register_font() {
    FONT.call_once(|| {
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            include_bytes!("../../../../assets/DejaVuSans.ttf"),
        );
    });
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

enum Chart<'a> {
    Rung {
        title: String,
        series: Series3,
        x_max: f64,
    },
    Spread(&'a [RepeatStats]),
    Compare(&'a [PhaseCompare]),
    Nccl(&'a [NcclRow]),
    Sensor(&'a [PeriodAnswer]),
    NodePower(&'a NodePowerSeries),
    Soak(&'a str, &'a [SoakLines]),
}

/// The node power plot's lines: the GPU sum and each source's readings,
/// against seconds since the run's start.
pub struct NodePowerSeries {
    /// GPU sum (buffered), 1 s means: (s, W).
    pub gpu: Vec<(f64, f64)>,
    /// Each source's readings as of their answers: (name, [(s, W)]).
    pub sources: Vec<(String, Vec<(f64, f64)>)>,
}

impl Chart<'_> {
    fn draw<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        match self {
            Chart::Rung {
                title,
                series,
                x_max,
            } => rung_chart(area, title, series, *x_max),
            Chart::Spread(r) => spread_chart(area, r),
            Chart::Compare(c) => compare_chart(area, c),
            Chart::Nccl(r) => nccl_chart(area, r),
            Chart::Sensor(a) => sensor_chart(area, a),
            Chart::NodePower(n) => node_power_chart(area, n),
            Chart::Soak(label, lines) => soak_chart(area, label, lines),
        }
    }
}

fn both(
    path_stem: &Path,
    size: (u32, u32),
    chart: &Chart<'_>,
) -> Result<Vec<PathBuf>, CollateError> {
    register_font();
    let svg = path_stem.with_extension("svg");
    let png = path_stem.with_extension("png");
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

struct Series3 {
    buffered: Vec<(f64, f64)>,
    instant: Vec<(f64, f64)>,
    average: Vec<(f64, f64)>,
    /// The composed node cycle repeated over the measured window (duty rungs).
    composed: Vec<(f64, f64)>,
}

fn rung_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    s: &Series3,
    x_max: f64,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE)?;
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

fn spread_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    repeats: &[RepeatStats],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE)?;
    let duty: Vec<&RepeatStats> = repeats
        .iter()
        .filter(|r| r.kind == PhaseKind::Duty && r.period_ms.is_some())
        .collect();
    let pmin = duty
        .iter()
        .filter_map(|r| r.period_ms)
        .fold(f64::INFINITY, f64::min);
    let pmax = duty.iter().filter_map(|r| r.period_ms).fold(0.0, f64::max);
    let smax = duty
        .iter()
        .flat_map(|r| {
            [
                r.spread_w.map(|s| s + r.spread_w_ci95.unwrap_or(0.0)),
                r.raw_spread_w,
            ]
        })
        .flatten()
        .fold(1.0, f64::max);
    let (pmin, pmax) = if pmin.is_finite() {
        (pmin / 1.5, pmax * 1.5)
    } else {
        (1.0, 10.0)
    };
    let mut chart = ChartBuilder::on(area)
        .caption("node spread (p99 − p1) vs duty period", ("sans-serif", 18))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d((pmin..pmax).log_scale(), 0f64..smax * 1.1)?;
    chart
        .configure_mesh()
        .x_desc("duty period (ms, log)")
        .y_desc("spread (W)")
        .label_style(("sans-serif", 12))
        .draw()?;
    for (mode, color, faded) in [
        (
            Mode::InPhase,
            RGBColor(200, 40, 40),
            RGBColor(235, 175, 175),
        ),
        (
            Mode::Staggered,
            RGBColor(20, 90, 200),
            RGBColor(170, 195, 235),
        ),
    ] {
        let mut raw: Vec<(f64, f64)> = duty
            .iter()
            .filter(|r| r.mode == mode)
            .filter_map(|r| Some((r.period_ms?, r.raw_spread_w?)))
            .collect();
        raw.sort_by(|a, b| a.0.total_cmp(&b.0));
        if !raw.is_empty() {
            chart
                .draw_series(LineSeries::new(
                    raw.iter().copied(),
                    ShapeStyle::from(&faded).stroke_width(1),
                ))?
                .label(format!(
                    "{mode}, sample and hold (what NVML sampled; not the node)"
                ))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], faded));
            chart.draw_series(raw.iter().map(|p| Circle::new(*p, 3, faded)))?;
        }
        let mut pts: Vec<(f64, f64, f64)> = duty
            .iter()
            .filter(|r| r.mode == mode)
            .filter_map(|r| Some((r.period_ms?, r.spread_w?, r.spread_w_ci95.unwrap_or(0.0))))
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        if pts.is_empty() {
            continue;
        }
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|p| (p.0, p.1)),
                color.stroke_width(2),
            ))?
            .label(format!("{mode} (composed node cycle)"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart.draw_series(
            pts.iter()
                .map(|p| Circle::new((p.0, p.1), 4, color.filled())),
        )?;
        chart.draw_series(
            pts.iter()
                .filter(|p| p.2 > 0.0)
                .map(|p| PathElement::new(vec![(p.0, p.1 - p.2), (p.0, p.1 + p.2)], color)),
        )?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 12))
        .draw()?;
    Ok(())
}

fn compare_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    compare: &[PhaseCompare],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE)?;
    let panels = area.split_evenly((1, 3));
    let z = |v: Option<f64>| v.unwrap_or(0.0);
    type Pick = fn(&PhaseCompare) -> (Option<f64>, Option<f64>);
    let metrics: [(&str, Pick); 3] = [
        ("mean (W)", |c| (c.in_phase_mean_w, c.staggered_mean_w)),
        ("peak (W)", |c| (c.in_phase_peak_w, c.staggered_peak_w)),
        ("spread (W)", |c| {
            (c.in_phase_spread_w, c.staggered_spread_w)
        }),
    ];
    for (panel, (name, get)) in panels.iter().zip(metrics) {
        let top = compare
            .iter()
            .map(|c| z(get(c).0).max(z(get(c).1)))
            .fold(1.0, f64::max)
            * 1.15;
        let n = compare.len().max(1) as f64;
        let mut chart = ChartBuilder::on(panel)
            .caption(
                format!("{name}: in phase (red) vs staggered (blue)"),
                ("sans-serif", 14),
            )
            .margin(8)
            .x_label_area_size(35)
            .y_label_area_size(55)
            .build_cartesian_2d(0f64..n, 0f64..top)?;
        let labels: Vec<String> = compare
            .iter()
            .map(|c| format!("{}ms", c.period_ms))
            .collect();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(compare.len().max(1))
            .x_label_formatter(&|x| labels.get(x.floor() as usize).cloned().unwrap_or_default())
            .label_style(("sans-serif", 11))
            .draw()?;
        for (i, c) in compare.iter().enumerate() {
            let (a, b) = (z(get(c).0), z(get(c).1));
            let x = i as f64;
            chart.draw_series([
                Rectangle::new(
                    [(x + 0.1, 0.0), (x + 0.48, a)],
                    RGBColor(200, 40, 40).filled(),
                ),
                Rectangle::new(
                    [(x + 0.52, 0.0), (x + 0.9, b)],
                    RGBColor(20, 90, 200).filled(),
                ),
            ])?;
        }
    }
    Ok(())
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
    let mut files = Vec::new();
    let t = i64_column(&curve.df, "t_ns");
    let b = f64_column(&curve.df, "node_buffered_w");
    let i = f64_column(&curve.df, "node_instant_w");
    let a = f64_column(&curve.df, "node_average_field_w");
    let mut jobs: Vec<(PathBuf, Chart<'_>)> = Vec::new();
    for r in &run.rungs {
        let lo = t.partition_point(|x| *x < r.epoch_ns);
        let hi = t.partition_point(|x| *x < r.end_ns);
        if hi <= lo {
            continue;
        }
        let secs: Vec<f64> = t[lo..hi].iter().map(|x| ns_to_s(x - r.epoch_ns)).collect();
        let pick = |v: &Vec<Option<f64>>| {
            if v.len() >= hi {
                envelope(&secs, &v[lo..hi], 1500)
            } else {
                Vec::new()
            }
        };
        // The composed cycle over the measured window, at 0.5 ms.
        let composed = match cycles.get(&r.info.id) {
            Some(Ok(c)) => {
                let step = 500_000i64;
                let n = ((r.end_ns - r.measure_from_ns) / step).clamp(0, 2_000_000);
                let ts: Vec<f64> = (0..n)
                    .map(|k| ns_to_s(r.measure_from_ns + k * step - r.epoch_ns))
                    .collect();
                let vs: Vec<Option<f64>> = (0..n)
                    .map(|k| Some(c.at(r.epoch_ns, r.measure_from_ns + k * step)))
                    .collect();
                envelope(&ts, &vs, 1500)
            }
            _ => Vec::new(),
        };
        let chart = Chart::Rung {
            title: format!("rung {} — {}", r.info.id, r.info.label),
            series: Series3 {
                buffered: pick(&b),
                instant: pick(&i),
                average: pick(&a),
                composed,
            },
            x_max: ns_to_s(r.end_ns - r.epoch_ns),
        };
        jobs.push((dir.join(format!("rung-{:03}", r.info.id)), chart));
    }
    // Rung charts are independent: draw them on every core.
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .max(1);
    let per = jobs.len().div_ceil(workers).max(1);
    let results: Vec<Result<Vec<PathBuf>, CollateError>> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .chunks(per)
            .map(|chunk| {
                s.spawn(move || {
                    let mut out = Vec::new();
                    for (stem, chart) in chunk {
                        out.extend(both(stem, (1000, 420), chart)?);
                    }
                    Ok(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(CollateError::Plot {
                        path: dir.to_path_buf(),
                        message: "a plotting thread panicked".into(),
                    })
                })
            })
            .collect()
    });
    for r in results {
        files.extend(r?);
    }
    if rungs.iter().any(|r| r.rung.kind == PhaseKind::Duty) {
        files.extend(both(
            &dir.join("spread_vs_period"),
            (800, 480),
            &Chart::Spread(repeats),
        )?);
    }
    if !compare.is_empty() {
        files.extend(both(
            &dir.join("in_phase_vs_staggered"),
            (1200, 420),
            &Chart::Compare(compare),
        )?);
    }
    Ok(files)
}

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
    both(&dir.join("nccl_busbw"), (900, 520), &Chart::Nccl(rows))
}

fn nccl_chart<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, rows: &[NcclRow]) -> DrawResult
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE)?;
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
        .x_label_formatter(&|v| crate::format::fmt_bytes(v.round() as u64))
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
        &dir.join("swing_vs_period"),
        (900, 520),
        &Chart::Sensor(answers),
    )
}

fn sensor_chart<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, a: &[PeriodAnswer]) -> DrawResult
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE)?;
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
    both(&dir.join("node_power"), (1100, 520), &Chart::NodePower(n))
}

fn node_power_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    n: &NodePowerSeries,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE)?;
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
    both(&dir.join("soak"), (1100, 900), &Chart::Soak(label, lines))
}

fn soak_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    label: &str,
    lines: &[SoakLines],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    area.fill(&WHITE)?;
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
