//! Per-rung node summaries, statistics across repeats, and the in-phase vs
//! staggered comparison.
//!
//! Definitions (also printed in the report): mean; peak = max; p1/p99;
//! spread = p99 − p1; swing = p90 − p10 (the square wave's amplitude without
//! its overshoot spikes); energy = mean × measured window.
//!
//! Where the figures come from (`method`):
//! - a duty rung's from its composed node cycle ([`crate::cycle`]): every
//!   GPU's buffered samples folded on its own edges, window-corrected and
//!   summed at the GPUs' measured offsets. A duty rung whose cycle cannot be
//!   composed has no peak, spread or swing, only a `verdict` saying why
//!   (and a mean from the energy counter where the run read it);
//! - every other rung's from the sample-and-hold node curve (each GPU's
//!   latest buffered reading on a common grid, summed), which is fine for
//!   constant load.
//!
//! The sample-and-hold figures of every rung are kept in the `raw_*`
//! columns, labelled as what NVML sampled: for a duty rung they are not the
//! node's draw (they pair one GPU's reading with another's from another
//! moment). The 1 s average field appears only in columns named
//! `average_field_*`, as a comparison.

use crate::columns::{f64_column, i64_column};
use crate::curve::NodeCurve;
use crate::cycle::interval::MIN_CYCLES_FOR_INTERVAL;
use crate::cycle::{Bounds, NoCycle, NodeCycle};
use crate::edges::EdgeStats;
use crate::load::Run;
use crate::stats::{mean_sd_ci, quantile_sorted, r3, sum_compensated, welch_difference};
use powerlab_core::units::{fraction_to_ppm, ms_to_us_rounded, ns_to_s};
use powerlab_rundir::RungInfo;
use powerlab_rundir::{Mode, PhaseKind};
use serde::ser::{Serialize, SerializeStruct, Serializer};
use std::collections::HashMap;

/// One rung's node summary: the rung's facts as the run recorded them,
/// and the node figures collated from its samples. Its CSV and JSON rows
/// are written field by field (see the `Serialize` impl below), because the
/// `csv` crate cannot write a flattened struct: the rung's facts come first,
/// as `rung_id`, `label`, `phase`, `kind`, `mode`, `period_ms`,
/// `nominal_period_ms` (the requested period), `duty` and `repeat`.
#[derive(Debug, Clone, PartialEq)]
pub struct RungSummary {
    /// The rung as the run recorded it (`events.jsonl`).
    pub rung: RungInfo,
    /// How the node figures were obtained: `composed cycle` (duty rungs),
    /// `sample and hold` (constant load), `energy counter` (a duty rung
    /// without a composed cycle: the mean only), or `none`.
    pub method: String,
    /// Why figures are missing or qualified (empty when all is stated).
    pub verdict: Option<String>,
    /// Instrument the figures come from (`buffered_w` or `instant_w`).
    pub instrument: String,
    /// Samples behind the figures: grid points with every GPU present
    /// (sample and hold), or buffered samples folded (composed cycle).
    pub samples: u64,
    /// Sample and hold: fraction of the window's grid points with every GPU
    /// present. Composed cycle: the lowest share of the cycle any GPU's
    /// samples covered. Energy counter: the share of the window the
    /// counter's readings span (the mean is theirs).
    pub coverage: f64,
    /// Harmonics in the composed cycle.
    pub harmonics: Option<u32>,
    /// Mean node power, W.
    pub mean_w: Option<f64>,
    /// Peak, W.
    pub peak_w: Option<f64>,
    /// 1st percentile, W.
    pub p1_w: Option<f64>,
    /// 99th percentile, W.
    pub p99_w: Option<f64>,
    /// p99 − p1, W.
    pub spread_w: Option<f64>,
    /// p90 − p10, W.
    pub swing_w: Option<f64>,
    /// For duty rungs: what the raw readings of `instrument` can make of
    /// the period (resolvable / instrument limit / aliased), from the run's
    /// sensor model. The raw figures of an aliased rung are meaningless.
    pub instrument_verdict: Option<String>,
    /// Energy over the measured window, J.
    pub energy_j: Option<f64>,
    /// What NVML sampled: mean of the sample-and-hold node curve, W.
    pub raw_mean_w: Option<f64>,
    /// What NVML sampled: its peak, W.
    pub raw_peak_w: Option<f64>,
    /// What NVML sampled: its p99 − p1, W (not the node's spread for a duty rung).
    pub raw_spread_w: Option<f64>,
    /// What NVML sampled: its p90 − p10, W.
    pub raw_swing_w: Option<f64>,
    /// The instant field's mean, W (second instrument).
    pub instant_mean_w: Option<f64>,
    /// The instant field's spread, W.
    pub instant_spread_w: Option<f64>,
    /// The 1 s average field's mean, W — comparison only.
    pub average_field_mean_w: Option<f64>,
    /// The 1 s average field's spread, W — comparison only, never a result.
    pub average_field_spread_w: Option<f64>,
    /// The 1 s average field's swing (p90 − p10), W — comparison only.
    pub average_field_swing_w: Option<f64>,
    /// Largest |start error| of any GPU against its intended start, µs.
    pub start_error_max_us: Option<f64>,
    /// Start skew across GPUs after removing intended offsets, µs.
    pub start_skew_us: Option<f64>,
    /// Rising edges: median of achieved − intended (signed), µs.
    pub rise_err_p50_us: Option<f64>,
    /// Rising edges: 99th percentile of |achieved − intended|, µs.
    pub rise_err_p99_us: Option<f64>,
    /// Rising edges: largest |achieved − intended|, µs.
    pub rise_err_max_us: Option<f64>,
    /// Falling edges: median of achieved − intended (signed), µs.
    pub fall_err_p50_us: Option<f64>,
    /// Falling edges: 99th percentile of |achieved − intended|, µs.
    pub fall_err_p99_us: Option<f64>,
    /// Falling edges: largest |achieved − intended|, µs.
    pub fall_err_max_us: Option<f64>,
    /// Per edge, the spread across GPUs of achieved − intended: 99th percentile, µs.
    pub edge_skew_p99_us: Option<f64>,
    /// Largest |drift| of a GPU's device clock against the run clock over the rung, µs/s.
    pub clock_drift_ppm: Option<f64>,
    /// Every GPU started within the barrier tolerance of its intended start.
    pub barrier_ok: Option<bool>,
    /// Why the rung's edges are out of tolerance (`[limits] edge_p99_us`,
    /// `edge_max_us`) or its on-phases drew less than the sustained level;
    /// empty when both hold.
    pub edges_verdict: Option<String>,
    /// Lowest share of the measured window that any GPU's readings cover.
    pub window_coverage: Option<f64>,
    /// Why the rung's raw data are incomplete (a GPU's file missing or cut
    /// short, a run stopped mid-rung); empty when every GPU covers the window.
    pub incomplete: Option<String>,
    /// A composed figure's 95 % interval within the run (a bootstrap over
    /// whole cycles, [`crate::cycle::interval`]): the mean's, W.
    pub mean_ci95: Option<Bounds>,
    /// The peak's.
    pub peak_ci95: Option<Bounds>,
    /// The spread's.
    pub spread_ci95: Option<Bounds>,
    /// The swing's.
    pub swing_ci95: Option<Bounds>,
    /// The node's on−off step of a composed duty rung, W.
    pub step_w: Option<f64>,
    /// The composed figures whose interval is wider than the figure itself
    /// or than [`UNRESOLVED_STEP_SHARE`] of the step: they are not resolved
    /// by this run (empty when every figure is).
    pub unresolved: Option<String>,
    /// Whole cycles the intervals were resampled from (a rack: the fewest
    /// of any node).
    pub cycles: Option<usize>,
}

/// A composed figure whose 95 % interval is wider than this share of the
/// node's step is said to be unresolved.
pub const UNRESOLVED_STEP_SHARE: f64 = 0.25;

/// The figures of `c` whose interval is wider than the figure or than
/// [`UNRESOLVED_STEP_SHARE`] of the step, named with their interval; every
/// figure when the interval rests on fewer than
/// [`MIN_CYCLES_FOR_INTERVAL`] cycles.
fn unresolved_of(c: &NodeCycle) -> Option<String> {
    let i = c.interval.as_ref()?;
    let st = &c.stats;
    let figures = [
        ("mean", st.mean_w, i.mean),
        ("peak", st.peak_w, i.peak),
        ("spread", st.p99_w - st.p1_w, i.spread),
        ("swing", st.p90_w - st.p10_w, i.swing),
    ];
    let named = |f: &[(&str, f64, Bounds)]| {
        f.iter()
            .map(|(name, v, b)| format!("{name} {v:.0} W [{:.0}, {:.0}]", b.lo, b.hi))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if i.cycles < MIN_CYCLES_FOR_INTERVAL {
        return Some(format!(
            "interval from {} whole cycles, fewer than {MIN_CYCLES_FOR_INTERVAL}: too few to resample (lengthen the rung): {}",
            i.cycles,
            named(&figures)
        ));
    }
    let wide: Vec<(&str, f64, Bounds)> = figures
        .into_iter()
        .filter(|(_, v, b)| {
            b.width() > v.abs() || b.width() > UNRESOLVED_STEP_SHARE * c.step_w.abs()
        })
        .collect();
    (!wide.is_empty()).then(|| {
        format!(
            "interval wider than the figure or than {:.0} % of the {:.0} W step: {}",
            100.0 * UNRESOLVED_STEP_SHARE,
            c.step_w,
            named(&wide)
        )
    })
}

/// Writes fields of `$row` under their own names, in the order given.
macro_rules! fields {
    ($st:ident, $row:ident, $($f:ident),* $(,)?) => {
        $($st.serialize_field(stringify!($f), &$row.$f)?;)*
    };
}

/// Columns of `summary.csv` (and keys of `summary.json`'s rungs) taken
/// from the rung's facts.
const FACT_COLUMNS: usize = 9;
/// Columns holding the node figures, after the facts.
const FIGURE_COLUMNS: usize = 48;

/// The interval columns, low and high of each composed figure.
const CI_COLUMNS: [&str; 8] = [
    "mean_ci95_lo_w",
    "mean_ci95_hi_w",
    "peak_ci95_lo_w",
    "peak_ci95_hi_w",
    "spread_ci95_lo_w",
    "spread_ci95_hi_w",
    "swing_ci95_lo_w",
    "swing_ci95_hi_w",
];

impl Serialize for RungSummary {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (row, r) = (self, &self.rung);
        let mut st = serializer.serialize_struct("RungSummary", FACT_COLUMNS + FIGURE_COLUMNS)?;
        st.serialize_field("rung_id", &r.id)?;
        st.serialize_field("label", &r.label)?;
        st.serialize_field("phase", &r.phase)?;
        st.serialize_field("kind", r.kind.as_str())?;
        st.serialize_field("mode", r.mode.as_str())?;
        st.serialize_field("period_ms", &r.period_ms)?;
        st.serialize_field("nominal_period_ms", &r.requested_period_ms())?;
        st.serialize_field("duty", &r.duty)?;
        st.serialize_field("repeat", &r.repeat)?;
        fields!(
            st,
            row,
            method,
            verdict,
            instrument,
            samples,
            coverage,
            harmonics,
            mean_w,
            peak_w,
            p1_w,
            p99_w,
            spread_w,
            swing_w,
            instrument_verdict,
            energy_j,
            raw_mean_w,
            raw_peak_w,
            raw_spread_w,
            raw_swing_w,
            instant_mean_w,
            instant_spread_w,
            average_field_mean_w,
            average_field_spread_w,
            average_field_swing_w,
            start_error_max_us,
            start_skew_us,
            rise_err_p50_us,
            rise_err_p99_us,
            rise_err_max_us,
            fall_err_p50_us,
            fall_err_p99_us,
            fall_err_max_us,
            edge_skew_p99_us,
            clock_drift_ppm,
            barrier_ok,
            edges_verdict,
            window_coverage,
            incomplete,
        );
        let cis = [
            row.mean_ci95,
            row.peak_ci95,
            row.spread_ci95,
            row.swing_ci95,
        ];
        for (names, b) in CI_COLUMNS.chunks_exact(2).zip(cis) {
            st.serialize_field(names[0], &b.map(|b| r3(b.lo)))?;
            st.serialize_field(names[1], &b.map(|b| r3(b.hi)))?;
        }
        fields!(st, row, step_w, unresolved, cycles);
        st.end()
    }
}

/// One node column's figures over a rung's curve points (`None` where the
/// rung has no non-null point of that column).
#[derive(Default)]
struct Stats {
    n: f64,
    mean: Option<f64>,
    max: Option<f64>,
    p1: Option<f64>,
    p10: Option<f64>,
    p90: Option<f64>,
    p99: Option<f64>,
}

impl Stats {
    /// The figures of one rung's non-null `values`.
    fn of(values: &mut [f64]) -> Stats {
        values.sort_by(f64::total_cmp);
        let some = !values.is_empty();
        let q = |q: f64| some.then(|| quantile_sorted(values, q));
        Stats {
            n: values.len() as f64,
            mean: some.then(|| sum_compensated(values) / values.len() as f64),
            max: values.last().copied(),
            p1: q(0.01),
            p10: q(0.10),
            p90: q(0.90),
            p99: q(0.99),
        }
    }
}

/// A rung's sample-and-hold figures from the node curve: how many grid
/// points fall in its window, and each node column's figures over them.
#[derive(Default)]
struct CurveFigures {
    grid_n: f64,
    buffered: Stats,
    instant: Stats,
    average: Stats,
}

/// The curve's points by rung: a point belongs to the rung whose window
/// starts last at or before it, if it falls before that window's end.
/// Returns the rung ids with any point (ascending) and, for each, the
/// indices of its points.
fn points_by_rung(t_ns: &[i64], windows: &[(u32, i64, i64)]) -> Vec<(u32, Vec<usize>)> {
    let mut by: std::collections::BTreeMap<u32, Vec<usize>> = std::collections::BTreeMap::new();
    for (k, t) in t_ns.iter().enumerate() {
        let after = windows.partition_point(|w| w.1 <= *t);
        if let Some(w) = after.checked_sub(1).map(|i| windows[i])
            && *t < w.2
        {
            by.entry(w.0).or_default().push(k);
        }
    }
    by.into_iter().collect()
}

/// How each rung's node cycle came out (see [`crate::cycle::compose_all`]).
pub type Cycles = HashMap<u32, Result<NodeCycle, NoCycle>>;

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
    let mut windows: Vec<(u32, i64, i64)> = run
        .rungs
        .iter()
        .map(|r| {
            let from = held_until.get(&r.info.id).map_or(r.measure_from_ns, |t| {
                (*t).clamp(r.measure_from_ns, r.end_ns)
            });
            (r.info.id, from, r.end_ns)
        })
        .collect();
    windows.sort_by_key(|w| w.1);
    let t_ns = i64_column(&curve.df, "t_ns");
    // A column the curve lacks reads as empty: its figures stay None.
    let (bv, iv, av) = (
        f64_column(&curve.df, "node_buffered_w"),
        f64_column(&curve.df, "node_instant_w"),
        f64_column(&curve.df, "node_average_field_w"),
    );
    let over = |values: &[Option<f64>], pts: &[usize]| {
        Stats::of(
            &mut pts
                .iter()
                .filter_map(|k| values.get(*k).copied().flatten())
                .collect::<Vec<f64>>(),
        )
    };
    let figures: HashMap<u32, CurveFigures> = points_by_rung(&t_ns, &windows)
        .into_iter()
        .map(|(id, pts)| {
            let f = CurveFigures {
                grid_n: pts.len() as f64,
                buffered: over(&bv, &pts),
                instant: over(&iv, &pts),
                average: over(&av, &pts),
            };
            (id, f)
        })
        .collect();
    let limit = |key: &str, default: f64| {
        run.manifest
            .campaign_resolved
            .pointer(&format!("/limits/{key}"))
            .and_then(|v| v.as_f64())
            .unwrap_or(default)
    };
    let edge_tol = (
        limit(
            "edge_p99_us",
            powerlab_campaign::Limits::default().edge_p99_us,
        ),
        limit(
            "edge_max_us",
            powerlab_campaign::Limits::default().edge_max_us,
        ),
    );

    let mut out = Vec::new();
    for r in &run.rungs {
        let none = CurveFigures::default();
        let cf = figures.get(&r.info.id).unwrap_or(&none);
        let (total, i, a) = (cf.grid_n, &cf.instant, &cf.average);
        let use_buffered = total > 0.0 && cf.buffered.n / total >= 0.5;
        let (s, n, instrument) = if use_buffered {
            (&cf.buffered, cf.buffered.n, "buffered_w")
        } else {
            (i, i.n, "instant_w")
        };
        let window_s = ns_to_s(r.end_ns - r.measure_from_ns);
        let diff = |x: Option<f64>, y: Option<f64>| x.zip(y).map(|(x, y)| r3(x - y));
        let raw = Figures {
            mean: s.mean,
            peak: s.max,
            p1: s.p1,
            p10: s.p10,
            p90: s.p90,
            p99: s.p99,
        };
        let raw_coverage = if total > 0.0 { r3(n / total) } else { 0.0 };
        // The headline figures.
        let (method, verdict, fig, samples, coverage, harmonics, instrument) =
            match cycles.get(&r.info.id) {
                Some(Ok(c)) => {
                    let st = &c.stats;
                    let fig = Figures {
                        mean: Some(st.mean_w),
                        peak: Some(st.peak_w),
                        p1: Some(st.p1_w),
                        p10: Some(st.p10_w),
                        p90: Some(st.p90_w),
                        p99: Some(st.p99_w),
                    };
                    (
                        "composed cycle",
                        None,
                        fig,
                        c.samples as u64,
                        r3(c.coverage),
                        Some(c.harmonics as u32),
                        "buffered_w",
                    )
                }
                Some(Err(NoCycle::Verdict(v))) => {
                    let mean = energy_means.get(&r.info.id).copied();
                    let fig = Figures {
                        mean,
                        ..Figures::default()
                    };
                    (
                        if mean.is_some() {
                            "energy counter"
                        } else {
                            "none"
                        },
                        Some(v.clone()),
                        fig,
                        0,
                        0.0,
                        None,
                        if mean.is_some() {
                            "energy_mj"
                        } else {
                            instrument
                        },
                    )
                }
                Some(Err(NoCycle::NotPeriodic)) | None => (
                    "sample and hold",
                    None,
                    raw,
                    n as u64,
                    raw_coverage,
                    None,
                    instrument,
                ),
            };
        let e = edges.get(&r.info.id);
        let cyc = cycles.get(&r.info.id).and_then(|c| c.as_ref().ok());
        out.push(RungSummary {
            rung: r.info.clone(),
            method: method.into(),
            verdict,
            instrument: instrument.into(),
            samples,
            coverage,
            harmonics,
            mean_w: fig.mean.map(r3),
            peak_w: fig.peak.map(r3),
            p1_w: fig.p1.map(r3),
            p99_w: fig.p99.map(r3),
            spread_w: diff(fig.p99, fig.p1),
            swing_w: diff(fig.p90, fig.p10),
            instrument_verdict: None,
            energy_j: fig.mean.map(|m| r3(m * window_s)),
            raw_mean_w: raw.mean.map(r3),
            raw_peak_w: raw.peak.map(r3),
            raw_spread_w: diff(raw.p99, raw.p1),
            raw_swing_w: diff(raw.p90, raw.p10),
            instant_mean_w: i.mean.map(r3),
            instant_spread_w: diff(i.p99, i.p1),
            average_field_mean_w: a.mean.map(r3),
            average_field_spread_w: diff(a.p99, a.p1),
            average_field_swing_w: diff(a.p90, a.p10),
            start_error_max_us: e.map(|e| r3(e.start_error_max_us)),
            start_skew_us: e.map(|e| r3(e.start_skew_us)),
            rise_err_p50_us: e.and_then(|e| e.rise).map(|k| r3(k.p50_us)),
            rise_err_p99_us: e.and_then(|e| e.rise).map(|k| r3(k.p99_us)),
            rise_err_max_us: e.and_then(|e| e.rise).map(|k| r3(k.max_us)),
            fall_err_p50_us: e.and_then(|e| e.fall).map(|k| r3(k.p50_us)),
            fall_err_p99_us: e.and_then(|e| e.fall).map(|k| r3(k.p99_us)),
            fall_err_max_us: e.and_then(|e| e.fall).map(|k| r3(k.max_us)),
            edge_skew_p99_us: e.and_then(|e| e.edge_skew_p99_us).map(r3),
            clock_drift_ppm: e.and_then(|e| e.clock_drift_ppm).map(r3),
            barrier_ok: r.barrier_ok,
            edges_verdict: match e {
                Some(e) => e.verdict(edge_tol.0, edge_tol.1),
                None if r.info.kind == PhaseKind::Duty && r.barrier_ok.is_some() => {
                    Some("no edges recorded for this rung: its timing is unverified".into())
                }
                None => None,
            },
            window_coverage: None,
            incomplete: None,
            mean_ci95: cyc.and_then(|c| c.interval.map(|i| i.mean)),
            peak_ci95: cyc.and_then(|c| c.interval.map(|i| i.peak)),
            spread_ci95: cyc.and_then(|c| c.interval.map(|i| i.spread)),
            swing_ci95: cyc.and_then(|c| c.interval.map(|i| i.swing)),
            step_w: cyc.map(|c| c.step_w).filter(|w| w.is_finite()).map(r3),
            unresolved: cyc.and_then(unresolved_of),
            cycles: cyc.and_then(|c| c.interval.map(|i| i.cycles)),
        });
    }
    out
}

/// One set of node figures, W.
#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    mean: Option<f64>,
    peak: Option<f64>,
    p1: Option<f64>,
    p10: Option<f64>,
    p90: Option<f64>,
    p99: Option<f64>,
}

/// Statistics across repeats of one rung configuration.
#[derive(Debug, Clone, serde::Serialize, PartialEq)]
pub struct RepeatStats {
    /// The rung's label without its `/r<repeat>` suffix (what the repeats
    /// have in common).
    pub label: String,
    /// The campaign phase the repeats belong to.
    pub phase: String,
    /// The rungs' kind (`idle`, `sustained`, `duty`, `nccl`, `soak` or
    /// `ramp_up`).
    pub kind: PhaseKind,
    /// The rungs' mode: `in_phase` or `staggered`.
    pub mode: Mode,
    /// Period the campaign asked for, ms (repeats are grouped by it).
    pub period_ms: Option<f64>,
    /// Period the GPUs ran, ms.
    pub achieved_period_ms: Option<f64>,
    /// The rungs' duty fraction: the share of each period the GPUs run
    /// (that of the group's first repeat).
    pub duty: f64,
    /// Repeats with a value.
    pub n: usize,
    /// Mean of the rung means, W.
    pub mean_w: Option<f64>,
    /// SD of the rung means.
    pub mean_w_sd: Option<f64>,
    /// 95% CI half-width of the mean.
    pub mean_w_ci95: Option<f64>,
    /// Mean peak, W.
    pub peak_w: Option<f64>,
    /// SD of peaks.
    pub peak_w_sd: Option<f64>,
    /// 95% CI half-width.
    pub peak_w_ci95: Option<f64>,
    /// Mean spread, W.
    pub spread_w: Option<f64>,
    /// SD of spreads.
    pub spread_w_sd: Option<f64>,
    /// 95% CI half-width.
    pub spread_w_ci95: Option<f64>,
    /// Mean swing, W.
    pub swing_w: Option<f64>,
    /// SD of swings.
    pub swing_w_sd: Option<f64>,
    /// 95% CI half-width.
    pub swing_w_ci95: Option<f64>,
    /// Mean of the raw (sample-and-hold) spreads, W: what NVML sampled.
    pub raw_spread_w: Option<f64>,
    /// Mean of the raw swings, W.
    pub raw_swing_w: Option<f64>,
}

/// Repeats of one configuration share their label (less the `/r<repeat>`
/// suffix), phase, kind, mode, requested period and duty. Two rungs of one
/// phase that differ in any of these (the NCCL sweep and the fabric rung;
/// two duty fractions at one period) are never pooled as repeats.
#[derive(Debug, Clone, PartialEq)]
struct GroupKey {
    label: String,
    phase: String,
    kind: PhaseKind,
    mode: Mode,
    period_us: Option<i64>,
    duty_ppm: i64,
}

/// The label shared by every repeat of a rung: `swing/p100ms/in_phase/r2`
/// → `swing/p100ms/in_phase`.
pub fn base_label(r: &RungSummary) -> String {
    base_label_of(&r.rung.label, r.rung.repeat)
}

/// [`base_label`] of a rung known by its label and repeat number (a row
/// read back from `summary.csv`).
pub fn base_label_of(label: &str, repeat: u32) -> String {
    let suffix = format!("/r{repeat}");
    label.strip_suffix(&suffix).unwrap_or(label).to_string()
}

fn group_key(r: &RungSummary) -> GroupKey {
    GroupKey {
        label: base_label(r),
        phase: r.rung.phase.clone(),
        kind: r.rung.kind,
        mode: r.rung.mode,
        period_us: r.rung.requested_period_ms().map(ms_to_us_rounded),
        duty_ppm: fraction_to_ppm(r.rung.duty),
    }
}

fn groups(rungs: &[RungSummary]) -> Vec<(GroupKey, Vec<&RungSummary>)> {
    let mut out: Vec<(GroupKey, Vec<&RungSummary>)> = Vec::new();
    for r in rungs {
        let key = group_key(r);
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, g)) => g.push(r),
            None => out.push((key, vec![r])),
        }
    }
    out
}

fn pick(g: &[&RungSummary], f: fn(&RungSummary) -> Option<f64>) -> Vec<f64> {
    g.iter().filter_map(|r| f(r)).collect()
}

/// Groups the repeats of each rung (see [`GroupKey`]) and summarizes across them.
pub fn repeat_stats(rungs: &[RungSummary]) -> Vec<RepeatStats> {
    let mut out = Vec::new();
    for (_, g) in groups(rungs) {
        // Mean (None without values), SD and CI half-width, rounded.
        let st = |f: fn(&RungSummary) -> Option<f64>| {
            let v = pick(&g, f);
            let (m, sd, ci) = mean_sd_ci(&v);
            ((!v.is_empty()).then(|| r3(m)), sd.map(r3), ci.map(r3))
        };
        let (m, m_sd, m_ci) = st(|r| r.mean_w);
        let (p, p_sd, p_ci) = st(|r| r.peak_w);
        let (s, s_sd, s_ci) = st(|r| r.spread_w);
        let (w, w_sd, w_ci) = st(|r| r.swing_w);
        let (rs, _, _) = st(|r| r.raw_spread_w);
        let (rw, _, _) = st(|r| r.raw_swing_w);
        out.push(RepeatStats {
            label: base_label(g[0]),
            phase: g[0].rung.phase.clone(),
            kind: g[0].rung.kind,
            mode: g[0].rung.mode,
            period_ms: g[0].rung.requested_period_ms(),
            achieved_period_ms: g[0].rung.period_ms,
            duty: g[0].rung.duty,
            n: pick(&g, |r| r.mean_w).len(),
            mean_w: m,
            mean_w_sd: m_sd,
            mean_w_ci95: m_ci,
            peak_w: p,
            peak_w_sd: p_sd,
            peak_w_ci95: p_ci,
            spread_w: s,
            spread_w_sd: s_sd,
            spread_w_ci95: s_ci,
            swing_w: w,
            swing_w_sd: w_sd,
            swing_w_ci95: w_ci,
            raw_spread_w: rs,
            raw_swing_w: rw,
        });
    }
    out
}

/// In-phase vs staggered at one period of one phase: each figure's mean
/// over the repeats of both modes, and the difference with its 95 %
/// half-width: Welch's interval across repeats (two or more a side) and
/// the rungs' own intervals within their runs, in quadrature (None when
/// neither exists).
#[derive(Debug, Clone, serde::Serialize, PartialEq)]
pub struct PhaseCompare {
    /// The campaign phase compared.
    pub phase: String,
    /// Period the campaign asked for, ms.
    pub period_ms: f64,
    /// Period the GPUs ran, ms.
    pub achieved_period_ms: f64,
    /// The duty fraction: the share of each period the GPUs run (that of
    /// the first in-phase repeat).
    pub duty: f64,
    /// Repeats in phase / staggered.
    pub n: String,
    /// Mean, in phase.
    pub in_phase_mean_w: Option<f64>,
    /// Mean, staggered.
    pub staggered_mean_w: Option<f64>,
    /// Staggered − in phase.
    pub delta_mean_w: Option<f64>,
    /// 95% half-width of the difference.
    pub delta_mean_w_ci95: Option<f64>,
    /// Peak, in phase.
    pub in_phase_peak_w: Option<f64>,
    /// Peak, staggered.
    pub staggered_peak_w: Option<f64>,
    /// Staggered − in phase.
    pub delta_peak_w: Option<f64>,
    /// 95% half-width of the difference.
    pub delta_peak_w_ci95: Option<f64>,
    /// Spread, in phase.
    pub in_phase_spread_w: Option<f64>,
    /// Spread, staggered.
    pub staggered_spread_w: Option<f64>,
    /// Staggered − in phase.
    pub delta_spread_w: Option<f64>,
    /// 95% half-width of the difference.
    pub delta_spread_w_ci95: Option<f64>,
    /// Swing, in phase.
    pub in_phase_swing_w: Option<f64>,
    /// Swing, staggered.
    pub staggered_swing_w: Option<f64>,
    /// Staggered − in phase.
    pub delta_swing_w: Option<f64>,
    /// 95% half-width of the difference.
    pub delta_swing_w_ci95: Option<f64>,
    /// What NVML sampled (sample and hold): spread in phase, W.
    pub raw_in_phase_spread_w: Option<f64>,
    /// What NVML sampled: spread staggered, W.
    pub raw_staggered_spread_w: Option<f64>,
}

/// The 95 % half-width, within their runs, of the mean of the figures `f`
/// of rungs `g`: their own intervals' half-widths ([`RungSummary`]'s
/// `*_ci95`) added in quadrature, over the count. None unless every rung
/// with a figure has an interval.
fn within_run_half_width(
    g: &[&RungSummary],
    f: fn(&RungSummary) -> Option<f64>,
    ci: fn(&RungSummary) -> Option<Bounds>,
) -> Option<f64> {
    crate::stats::half_width_of_mean(
        g.iter()
            .filter(|r| f(r).is_some())
            .map(|r| ci(r).map(|b| b.width() / 2.0)),
    )
}

/// Pairs the in-phase and staggered repeats of each duty period. Each
/// difference's 95 % half-width combines Welch's interval across repeats
/// (two or more a side) with the rungs' own intervals within their runs,
/// so one repeat a side still has one.
pub fn compare_modes(rungs: &[RungSummary]) -> Vec<PhaseCompare> {
    let gs = groups(rungs);
    let mut out = Vec::new();
    for (ka, a) in &gs {
        if ka.mode != Mode::InPhase || ka.kind != PhaseKind::Duty || ka.period_us.is_none() {
            continue;
        }
        let Some((_, b)) = gs.iter().find(|(kb, _)| {
            kb.mode == Mode::Staggered
                && kb.kind == ka.kind
                && kb.phase == ka.phase
                && kb.period_us == ka.period_us
                && kb.duty_ppm == ka.duty_ppm
        }) else {
            continue;
        };
        // Means of each side (None without a value) and the difference,
        // its half-width the Welch interval across repeats and each rung's
        // own interval within its run, combined in quadrature.
        let cmp = |f: fn(&RungSummary) -> Option<f64>, ci: fn(&RungSummary) -> Option<Bounds>| {
            let (xa, xb) = (pick(a, f), pick(b, f));
            let mean = |x: &[f64]| (!x.is_empty()).then(|| r3(mean_sd_ci(x).0));
            let (d, welch) = welch_difference(&xa, &xb);
            let both = !xa.is_empty() && !xb.is_empty();
            let within = within_run_half_width(a, f, ci)
                .zip(within_run_half_width(b, f, ci))
                .map(|(ha, hb)| (ha * ha + hb * hb).sqrt());
            let half = match (welch, within) {
                (Some(w), Some(h)) => Some((w * w + h * h).sqrt()),
                (w, h) => w.or(h),
            };
            (
                mean(&xa),
                mean(&xb),
                both.then(|| r3(d)),
                half.filter(|_| both).map(r3),
            )
        };
        let (ma, mb, md, mci) = cmp(|r| r.mean_w, |r| r.mean_ci95);
        let (pa, pb, pd, pci) = cmp(|r| r.peak_w, |r| r.peak_ci95);
        let (sa, sb, sd, sci) = cmp(|r| r.spread_w, |r| r.spread_ci95);
        let (wa, wb, wd, wci) = cmp(|r| r.swing_w, |r| r.swing_ci95);
        let (ra, rb, _, _) = cmp(|r| r.raw_spread_w, |_| None);
        out.push(PhaseCompare {
            phase: ka.phase.clone(),
            period_ms: a[0].rung.requested_period_ms().unwrap_or(0.0),
            achieved_period_ms: a[0].rung.period_ms.unwrap_or(0.0),
            duty: a[0].rung.duty,
            n: format!(
                "{}/{}",
                pick(a, |r| r.spread_w).len(),
                pick(b, |r| r.spread_w).len()
            ),
            in_phase_mean_w: ma,
            staggered_mean_w: mb,
            delta_mean_w: md,
            delta_mean_w_ci95: mci,
            in_phase_peak_w: pa,
            staggered_peak_w: pb,
            delta_peak_w: pd,
            delta_peak_w_ci95: pci,
            in_phase_spread_w: sa,
            staggered_spread_w: sb,
            delta_spread_w: sd,
            delta_spread_w_ci95: sci,
            in_phase_swing_w: wa,
            staggered_swing_w: wb,
            delta_swing_w: wd,
            delta_swing_w_ci95: wci,
            raw_in_phase_spread_w: ra,
            raw_staggered_spread_w: rb,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The columns of `summary.csv`, in the order every earlier run wrote them.
    const COLUMNS: &str = "rung_id,label,phase,kind,mode,period_ms,nominal_period_ms,duty,repeat,method,verdict,instrument,samples,coverage,harmonics,mean_w,peak_w,p1_w,p99_w,spread_w,swing_w,instrument_verdict,energy_j,raw_mean_w,raw_peak_w,raw_spread_w,raw_swing_w,instant_mean_w,instant_spread_w,average_field_mean_w,average_field_spread_w,average_field_swing_w,start_error_max_us,start_skew_us,rise_err_p50_us,rise_err_p99_us,rise_err_max_us,fall_err_p50_us,fall_err_p99_us,fall_err_max_us,edge_skew_p99_us,clock_drift_ppm,barrier_ok,edges_verdict,window_coverage,incomplete,mean_ci95_lo_w,mean_ci95_hi_w,peak_ci95_lo_w,peak_ci95_hi_w,spread_ci95_lo_w,spread_ci95_hi_w,swing_ci95_lo_w,swing_ci95_hi_w,step_w,unresolved,cycles";

    fn summary(nominal: Option<f64>) -> RungSummary {
        RungSummary {
            rung: RungInfo {
                id: 7,
                label: "sweep/p100ms".into(),
                phase: "sweep".into(),
                kind: PhaseKind::Duty,
                mode: Mode::InPhase,
                period_ms: Some(100.3),
                nominal_period_ms: nominal,
                duty: 0.5,
                repeat: 2,
                repeats: 3,
                no_context: false,
                swinging: None,
            },
            method: "composed cycle".into(),
            verdict: None,
            instrument: "buffered_w".into(),
            samples: 10,
            coverage: 1.0,
            harmonics: Some(4),
            mean_w: Some(1.5),
            peak_w: None,
            p1_w: None,
            p99_w: None,
            spread_w: None,
            swing_w: None,
            instrument_verdict: None,
            energy_j: None,
            raw_mean_w: None,
            raw_peak_w: None,
            raw_spread_w: None,
            raw_swing_w: None,
            instant_mean_w: None,
            instant_spread_w: None,
            average_field_mean_w: None,
            average_field_spread_w: None,
            average_field_swing_w: None,
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
            barrier_ok: Some(true),
            edges_verdict: None,
            window_coverage: None,
            incomplete: None,
            mean_ci95: None,
            peak_ci95: None,
            spread_ci95: None,
            swing_ci95: None,
            step_w: None,
            unresolved: None,
            cycles: None,
        }
    }

    #[test]
    fn a_point_belongs_to_the_rung_whose_window_holds_it() {
        // Windows [start, end): rung 3 from 100 to 200, rung 1 from 200 to
        // 250, rung 2 from 300 to 400 (a gap between 250 and 300).
        let windows = [(3, 100, 200), (1, 200, 250), (2, 300, 400)];
        let t: Vec<i64> = vec![50, 100, 199, 200, 249, 250, 299, 300, 399, 400, 500];
        let got = points_by_rung(&t, &windows);
        // Ascending by rung id; each with the indices of its points.
        assert_eq!(got, vec![(1, vec![3, 4]), (2, vec![7, 8]), (3, vec![1, 2])]);
        assert!(points_by_rung(&t, &[]).is_empty());
    }

    #[test]
    fn rung_figures_use_the_linear_quantile_and_skip_missing_points() {
        let mut v: Vec<f64> = (1..=101).rev().map(f64::from).collect();
        let (st, empty) = (Stats::of(&mut v), Stats::of(&mut []));
        assert_eq!((st.n, empty.n), (101.0, 0.0));
        assert_eq!((st.mean, empty.mean), (Some(51.0), None));
        assert_eq!((st.max, empty.max), (Some(101.0), None));
        // Rank q·(n−1) of 1..=101 is exactly 1 + 100·q.
        assert_eq!((st.p1, empty.p1), (Some(2.0), None));
        assert_eq!((st.p10, empty.p10), (Some(11.0), None));
        assert_eq!((st.p90, empty.p90), (Some(91.0), None));
        assert_eq!((st.p99, empty.p99), (Some(100.0), None));
    }

    #[test]
    fn a_summary_row_keeps_its_columns_and_states_the_requested_period() {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.serialize(summary(Some(100.0))).unwrap();
        w.serialize(summary(None)).unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], COLUMNS);
        assert_eq!(lines[0].split(',').count(), FACT_COLUMNS + FIGURE_COLUMNS);
        // A detuned rung states the period asked for; a run from before
        // detuning existed states the one it ran, and never `repeats`.
        assert!(lines[1].starts_with("7,sweep/p100ms,sweep,duty,in_phase,100.3,100.0,0.5,2,"));
        assert!(lines[2].starts_with("7,sweep/p100ms,sweep,duty,in_phase,100.3,100.3,0.5,2,"));
        let json = serde_json::to_value(summary(None)).unwrap();
        let keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys.len(), FACT_COLUMNS + FIGURE_COLUMNS);
        assert!(!keys.contains(&"repeats") && !keys.contains(&"id"));
    }

    fn rung(
        label: &str,
        phase: &str,
        kind: PhaseKind,
        mode: Mode,
        duty: f64,
        repeat: u32,
        mean: f64,
    ) -> RungSummary {
        let mut r = summary(if kind == PhaseKind::Duty {
            Some(100.0)
        } else {
            None
        });
        r.rung.label = label.into();
        r.rung.phase = phase.into();
        r.rung.kind = kind;
        r.rung.mode = mode;
        r.rung.duty = duty;
        r.rung.repeat = repeat;
        if kind != PhaseKind::Duty {
            r.rung.period_ms = None;
        }
        r.mean_w = Some(mean);
        r.spread_w = Some(mean / 10.0);
        r
    }

    #[test]
    fn distinct_rungs_of_one_phase_are_never_pooled_as_repeats() {
        // The NCCL sweep and the fabric rung share phase, kind and mode and
        // have no period; two duty fractions share a period. Each is its
        // own configuration: pooled, the sweep's 700 W and the fabric's
        // 300 W would read as one rung of 500 W with a wide interval.
        let rungs = vec![
            rung(
                "nccl/sweep",
                "nccl",
                PhaseKind::Nccl,
                Mode::InPhase,
                1.0,
                1,
                700.0,
            ),
            rung(
                "nccl/fabric",
                "nccl",
                PhaseKind::Nccl,
                Mode::InPhase,
                1.0,
                1,
                300.0,
            ),
            rung(
                "s/p100ms/in_phase/r1",
                "s",
                PhaseKind::Duty,
                Mode::InPhase,
                0.5,
                1,
                900.0,
            ),
            rung(
                "s/p100ms/in_phase/r2",
                "s",
                PhaseKind::Duty,
                Mode::InPhase,
                0.5,
                2,
                910.0,
            ),
            rung(
                "s/p100ms/staggered/r1",
                "s",
                PhaseKind::Duty,
                Mode::Staggered,
                0.5,
                1,
                880.0,
            ),
            rung(
                "s/p100ms/staggered/r2",
                "s",
                PhaseKind::Duty,
                Mode::Staggered,
                0.5,
                2,
                890.0,
            ),
            rung(
                "t/p100ms/in_phase",
                "s",
                PhaseKind::Duty,
                Mode::InPhase,
                0.25,
                1,
                500.0,
            ),
        ];
        let stats = repeat_stats(&rungs);
        let find = |l: &str| stats.iter().find(|s| s.label == l).unwrap();
        assert_eq!(stats.len(), 5);
        assert_eq!(
            (find("nccl/sweep").n, find("nccl/sweep").mean_w),
            (1, Some(700.0))
        );
        assert_eq!(
            (find("nccl/fabric").n, find("nccl/fabric").mean_w),
            (1, Some(300.0))
        );
        assert_eq!(
            (
                find("s/p100ms/in_phase").n,
                find("s/p100ms/in_phase").mean_w
            ),
            (2, Some(905.0))
        );
        assert_eq!(find("t/p100ms/in_phase").n, 1);
        // In phase meets staggered only at its own duty.
        let cmp = compare_modes(&rungs);
        assert_eq!(cmp.len(), 1);
        assert_eq!(
            (cmp[0].in_phase_mean_w, cmp[0].staggered_mean_w),
            (Some(905.0), Some(885.0))
        );
        assert_eq!(cmp[0].n, "2/2");
    }
}
