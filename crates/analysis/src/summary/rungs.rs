//! [`summarize`]: one [`RungSummary`] per rung of a run, its headline
//! figures from the composed cycle, the energy counter or the
//! sample-and-hold curve, its edge figures and its interval.

use super::curve::{CurveFigures, Figures, SampleAndHold, curve_figures};
use super::{Cycles, Resolution, RungSummary};
use crate::curve::NodeCurve;
use crate::cycle::{NoCycle, NodeCycle};
use crate::edges::EdgeStats;
use crate::metric::{self, Levels, MetricValue, MetricValues};
use powerlab_core::Instrument;
use powerlab_core::units::ns_to_s;
use powerlab_rundir::PhaseKind;
use powerlab_rundir::summary::Method;
use powerlab_samples::load::{Run, RungWindow};
use powerlab_samples::stats::r3;
use std::collections::HashMap;

/// Summarizes every rung of the run. `cycles` holds the composed node
/// cycle of each duty rung (a rung missing from it is summarised from the
/// sample-and-hold curve); `energy_means` the energy counter's mean over a
/// rung's window, for duty rungs without a cycle; `held_until` where each
/// rung's curve points stop holding readings taken before its window (the
/// first time every GPU has a reading inside it): the points before that
/// are left out of the rung's figures (a warm-up's last sample held into an
/// idle window read as an idle peak of 824 W on the 2 × H200).
pub fn summarize(
    curve: &NodeCurve,
    run: &Run,
    edges: &HashMap<u32, EdgeStats>,
    cycles: &Cycles,
    energy_means: &HashMap<u32, f64>,
    held_until: &HashMap<u32, i64>,
) -> Vec<RungSummary> {
    if run.rungs.is_empty() {
        return Vec::new();
    }
    let figures = curve_figures(curve, run, held_until);
    let tolerance = edge_tolerance(run);
    let none = CurveFigures::default();
    run.rungs
        .iter()
        .map(|r| {
            let id = r.info.id;
            let cf = figures.get(&id).unwrap_or(&none);
            let raw = cf.sample_and_hold();
            let cycle = cycles.get(&id);
            let head = headline(cycle, energy_means.get(&id).copied(), &raw);
            let mut row = row(r, head, &raw, cf);
            add_edge_figures(&mut row, edges.get(&id), tolerance);
            add_interval(&mut row, cycle.and_then(|c| c.as_ref().ok()));
            row
        })
        .collect()
}

/// The run's edge tolerances, µs: `[limits] edge_p99_us` and
/// `edge_max_us` of the resolved campaign.
fn edge_tolerance(run: &Run) -> (f64, f64) {
    (
        run.campaign.limits.edge_p99_us,
        run.campaign.limits.edge_max_us,
    )
}

/// A rung's headline figures and where they come from.
struct Headline {
    method: Method,
    verdict: Option<String>,
    figures: Figures,
    samples: u64,
    coverage: f64,
    harmonics: Option<u32>,
    instrument: Instrument,
    metrics: MetricValues,
}

/// The headline figures of a rung: its composed cycle's; the energy
/// counter's mean (`energy_mean`) where the cycle could not be composed;
/// else the sample-and-hold figures `raw`.
fn headline(
    cycle: Option<&Result<NodeCycle, NoCycle>>,
    energy_mean: Option<f64>,
    raw: &SampleAndHold,
) -> Headline {
    match cycle {
        Some(Ok(c)) => {
            let st = &c.stats;
            Headline {
                method: Method::ComposedCycle,
                verdict: None,
                figures: Figures {
                    mean: Some(st.mean_w),
                    peak: Some(st.peak_w),
                    p1: Some(st.p1_w),
                    p10: Some(st.p10_w),
                    p90: Some(st.p90_w),
                    p99: Some(st.p99_w),
                },
                samples: c.samples as u64,
                coverage: r3(c.coverage),
                harmonics: Some(c.harmonics as u32),
                instrument: Instrument::BufferedW,
                metrics: c.metrics.clone(),
            }
        }
        Some(Err(NoCycle::Verdict(v))) => Headline {
            method: if energy_mean.is_some() {
                Method::EnergyCounter
            } else {
                Method::None
            },
            verdict: Some(v.clone()),
            figures: Figures {
                mean: energy_mean,
                ..Figures::default()
            },
            samples: 0,
            coverage: 0.0,
            harmonics: None,
            instrument: if energy_mean.is_some() {
                Instrument::EnergyMj
            } else {
                raw.instrument
            },
            metrics: MetricValues::default(),
        },
        Some(Err(NoCycle::NotPeriodic)) | None => Headline {
            method: Method::SampleAndHold,
            verdict: None,
            figures: raw.figures,
            samples: raw.samples as u64,
            coverage: raw.coverage,
            harmonics: None,
            instrument: raw.instrument,
            metrics: held_metrics(raw.levels),
        },
    }
}

/// The registry's own metrics read from the held curve's `levels` (no
/// interval: nothing is resampled).
fn held_metrics(levels: Option<&Levels>) -> MetricValues {
    let mut out = MetricValues::default();
    for m in metric::own() {
        let value = levels.and_then(|l| m.of(l));
        out.set(m.column(), MetricValue { value, ci95: None });
    }
    out
}

/// `x − y`, rounded, where both are known.
fn diff(x: Option<f64>, y: Option<f64>) -> Option<f64> {
    x.zip(y).map(|(x, y)| r3(x - y))
}

/// The row of rung `r`: its headline figures, what NVML sampled (`raw`)
/// and the curve's other fields (`cf`). The edge figures and the interval
/// are left empty for [`add_edge_figures`] and [`add_interval`].
fn row(r: &RungWindow, head: Headline, raw: &SampleAndHold, cf: &CurveFigures) -> RungSummary {
    let window_s = ns_to_s(r.end_ns - r.measure_from_ns);
    let (fig, rf) = (head.figures, raw.figures);
    let (i, a) = (
        Figures::of(cf.instant.as_ref()),
        Figures::of(cf.average.as_ref()),
    );
    RungSummary {
        rung: r.info.clone(),
        method: head.method,
        verdict: head.verdict,
        instrument: head.instrument,
        samples: head.samples,
        coverage: head.coverage,
        harmonics: head.harmonics,
        mean_w: fig.mean.map(r3),
        peak_w: fig.peak.map(r3),
        p1_w: fig.p1.map(r3),
        p99_w: fig.p99.map(r3),
        spread_w: diff(fig.p99, fig.p1),
        swing_w: diff(fig.p90, fig.p10),
        instrument_verdict: None,
        energy_j: fig.mean.map(|m| r3(m * window_s)),
        raw_mean_w: rf.mean.map(r3),
        raw_peak_w: rf.peak.map(r3),
        raw_spread_w: diff(rf.p99, rf.p1),
        raw_swing_w: diff(rf.p90, rf.p10),
        instant_mean_w: i.mean.map(r3),
        instant_spread_w: diff(i.p99, i.p1),
        average_field_mean_w: a.mean.map(r3),
        average_field_spread_w: diff(a.p99, a.p1),
        average_field_swing_w: diff(a.p90, a.p10),
        start_error_max_us: None,
        start_skew_us: None,
        rise_err_p50_us: None,
        rise_err_p99_us: None,
        rise_err_max_us: None,
        fall_err_p50_us: None,
        fall_err_p99_us: None,
        fall_err_max_us: None,
        edge_skew_p99_us: None,
        clock_drift_ppm: None,
        barrier_ok: r.barrier_ok,
        edges_verdict: None,
        window_coverage: None,
        incomplete: None,
        mean_ci95: None,
        peak_ci95: None,
        spread_ci95: None,
        swing_ci95: None,
        step_w: None,
        resolution: None,
        cycles: None,
        metrics: rounded(head.metrics),
    }
}

/// The metrics' values rounded to 3 decimals (their intervals as they are).
fn rounded(metrics: MetricValues) -> MetricValues {
    let mut out = MetricValues::default();
    for (c, v) in metrics.iter() {
        let value = v.value.map(r3);
        out.set(
            c,
            MetricValue {
                value,
                ci95: v.ci95,
            },
        );
    }
    out
}

/// Fills the row's edge figures from its rung's edges `e` and states
/// whether they hold the run's `(p99, max)` tolerance: a duty rung with a
/// barrier verdict but no edges recorded has its timing unverified.
fn add_edge_figures(row: &mut RungSummary, e: Option<&EdgeStats>, tolerance: (f64, f64)) {
    let (rise, fall) = (e.and_then(|e| e.rise), e.and_then(|e| e.fall));
    row.start_error_max_us = e.map(|e| r3(e.start_error_max_us));
    row.start_skew_us = e.map(|e| r3(e.start_skew_us));
    row.rise_err_p50_us = rise.map(|k| r3(k.p50_us));
    row.rise_err_p99_us = rise.map(|k| r3(k.p99_us));
    row.rise_err_max_us = rise.map(|k| r3(k.max_us));
    row.fall_err_p50_us = fall.map(|k| r3(k.p50_us));
    row.fall_err_p99_us = fall.map(|k| r3(k.p99_us));
    row.fall_err_max_us = fall.map(|k| r3(k.max_us));
    row.edge_skew_p99_us = e.and_then(|e| e.edge_skew_p99_us).map(r3);
    row.clock_drift_ppm = e.and_then(|e| e.clock_drift_ppm).map(r3);
    row.edges_verdict = match e {
        Some(e) => e.verdict(tolerance.0, tolerance.1),
        None if row.rung.kind == PhaseKind::Duty && row.barrier_ok.is_some() => {
            Some("no edges recorded for this rung: its timing is unverified".into())
        }
        None => None,
    };
}

/// Fills the row's interval within the run, the node's step and what the
/// interval leaves unresolved, from its composed cycle `cyc`.
fn add_interval(row: &mut RungSummary, cyc: Option<&NodeCycle>) {
    let interval = cyc.and_then(|c| c.interval);
    row.mean_ci95 = interval.map(|i| i.mean);
    row.peak_ci95 = interval.map(|i| i.peak);
    row.spread_ci95 = interval.map(|i| i.spread);
    row.swing_ci95 = interval.map(|i| i.swing);
    row.step_w = cyc.map(|c| c.step_w).filter(|w| w.is_finite()).map(r3);
    row.resolution = cyc.and_then(Resolution::of);
    row.cycles = interval.map(|i| i.cycles);
}
