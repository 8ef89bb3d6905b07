//! The excursion envelope: per rung, the highest mean node power over any
//! window of each length in [`WINDOWS_MS`] inside the rung's measured
//! window, and, where the campaign declares a `[supply]`, the supply's
//! limit over that length and the margin to it.
//!
//! - A duty rung with a composed cycle: from the cycle, which repeats, so
//!   a window wraps around the period and a window longer than the period
//!   averages whole periods plus the best partial one. Its finest window is
//!   the cycle's grid step.
//! - Any other rung (or a duty rung without a cycle): a running mean of
//!   the node curve's `node_buffered_w` points inside the rung's window,
//!   only over windows without a gap. A window shorter than what one
//!   buffered sample stands for ([`sample_window_ms`]) is not stated: the
//!   curve holds each sample until the next, so it cannot show what the
//!   node drew between them.
//!
//! A window longer than the rung's measured window is never stated.

use crate::curve::NodeCurve;
use crate::cycle::NodeCycle;
use crate::sensor::model::SensorModel;
use crate::summary::Cycles;
use powerlab_campaign::Supply;
use powerlab_core::units::{ms_to_ns, ns_to_ms};
use powerlab_rundir::PhaseKind;
use powerlab_samples::load::{Run, RungWindow};
use std::fmt;

/// The window lengths of the envelope, ms: 1 ms to 10 s.
pub const WINDOWS_MS: [f64; 13] = [
    1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1_000.0, 2_000.0, 5_000.0, 10_000.0,
];

/// What one buffered sample stands for where the sensor model does not
/// say, ms: the H200's buffered samples come every 20 ms.
pub const SAMPLE_WINDOW_DEFAULT_MS: f64 = 20.0;

/// A window this share shorter than what one sample stands for still
/// counts as that long: a calibrated update period of 20.03 ms does not
/// take away the 20 ms window.
pub const SAMPLE_WINDOW_SLACK: f64 = 0.02;

/// Where a rung's envelope (or grid metrics) comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The rung's composed node cycle.
    ComposedCycle,
    /// The node curve's buffered sum.
    NodeCurve,
    /// A prediction's waveform (`powerlab predict`).
    Prediction,
}

impl Source {
    /// The source in words, as `envelope.csv` and `report.md` name it.
    pub const fn name(self) -> &'static str {
        match self {
            Source::ComposedCycle => "composed cycle",
            Source::NodeCurve => "node curve",
            Source::Prediction => "prediction",
        }
    }
}

/// Why a window length has no figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unsupported {
    /// The window is longer than the rung's measured window.
    LongerThanRung,
    /// Shorter than one buffered sample stands for (ms): the node curve
    /// cannot show it.
    ShorterThanSamples(f64),
    /// Shorter than the composed cycle's grid step (ms).
    ShorterThanCycleStep(f64),
    /// Shorter than a prediction's resolution (ms).
    ShorterThanResolution(f64),
    /// No window of this length inside the rung without a gap in the node
    /// curve.
    NoWholeWindow,
    /// A duty rung whose cycle could not be composed: the held samples'
    /// sum aliases its square wave (it read 200–560 W high on the
    /// simulated node's 20 ms rungs, at windows of 20 ms to 1 s), so no
    /// window of it is stated; its mean is the energy counter's.
    AliasedDuty,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unsupported::LongerThanRung => write!(f, "longer than the rung"),
            Unsupported::ShorterThanSamples(w) => {
                write!(f, "shorter than the buffered samples' {w:.1} ms")
            }
            Unsupported::ShorterThanCycleStep(s) => {
                write!(f, "shorter than the composed cycle's {s:.3} ms step")
            }
            Unsupported::ShorterThanResolution(r) => {
                write!(f, "shorter than the prediction's {r:.3} ms resolution")
            }
            Unsupported::AliasedDuty => write!(
                f,
                "a duty rung without a composed cycle: the held samples' sum aliases it (its mean: the energy counter, summary.csv)"
            ),
            Unsupported::NoWholeWindow => {
                write!(
                    f,
                    "no window of this length without a gap in the node curve"
                )
            }
        }
    }
}

/// A point's verdict against the declared supply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// At or below the limit.
    Pass,
    /// Above the limit.
    Fail,
}

impl Verdict {
    /// `pass` or `fail`.
    pub const fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
        }
    }
}

/// One window length of one rung.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvelopePoint {
    /// The window, ms.
    pub window_ms: f64,
    /// The highest mean node power over any window of this length, W
    /// (None: not supported, see `unsupported`).
    pub max_mean_w: Option<f64>,
    /// Why there is no figure.
    pub unsupported: Option<Unsupported>,
    /// The supply's limit over this length, W (declared or interpolated).
    pub limit_w: Option<f64>,
    /// limit − figure, W.
    pub margin_w: Option<f64>,
}

impl EnvelopePoint {
    /// Pass or fail, where there is both a figure and a limit.
    pub fn verdict(&self) -> Option<Verdict> {
        self.margin_w.map(|m| {
            if m >= 0.0 {
                Verdict::Pass
            } else {
                Verdict::Fail
            }
        })
    }
}

/// One rung's envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct RungEnvelope {
    /// Rung id.
    pub rung_id: u32,
    /// Rung label.
    pub label: String,
    /// Where its figures come from.
    pub source: Source,
    /// The shortest window it can state, ms (the cycle's grid step, or
    /// what one buffered sample stands for).
    pub finest_ms: f64,
    /// One point per length of [`WINDOWS_MS`].
    pub points: Vec<EnvelopePoint>,
}

/// Every rung's envelope, and the supply it is judged against.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// The campaign's `[supply]`, if it declares one.
    pub supply: Option<Supply>,
    /// What one buffered sample stands for, ms: the node curve's finest
    /// window.
    pub sample_window_ms: f64,
    /// Per rung, in run order.
    pub rungs: Vec<RungEnvelope>,
}

/// The campaign's `[supply]` (None: not declared).
pub fn supply_of(run: &Run) -> Option<Supply> {
    run.campaign.supply.clone()
}

/// What one buffered sample stands for, ms: the longest of every GPU's
/// buffered update period and averaging window in `model`, or
/// [`SAMPLE_WINDOW_DEFAULT_MS`] where it states neither.
pub fn sample_window_ms(model: &SensorModel) -> f64 {
    model
        .gpus
        .iter()
        .filter_map(|g| {
            g.paths
                .iter()
                .find(|p| p.instrument == powerlab_core::Instrument::BufferedW)
        })
        .flat_map(|p| [p.update_period_ms, p.window_ms])
        .flatten()
        .filter(|w| w.is_finite() && *w > 0.0)
        .reduce(f64::max)
        .unwrap_or(SAMPLE_WINDOW_DEFAULT_MS)
}

/// Every rung's envelope: duty rungs with a composed cycle from it, the
/// others from `curve`'s buffered sum, judged against the run's supply.
pub fn envelope(run: &Run, curve: &NodeCurve, cycles: &Cycles, sample_window_ms: f64) -> Envelope {
    let supply = supply_of(run);
    let (t_ns, node) = (&curve.columns().t_ns, &curve.columns().buffered_w);
    let rungs = run
        .rungs
        .iter()
        .map(|r| {
            let span_ns = r.end_ns.saturating_sub(r.measure_from_ns).max(0);
            let (source, finest_ms, figures) = match cycles.get(&r.info.id) {
                Some(Ok(c)) if !c.values.is_empty() && c.period_ms > 0.0 => {
                    let step = c.period_ms / c.values.len() as f64;
                    (Source::ComposedCycle, step, cycle_figures(c, span_ns))
                }
                _ if r.info.kind == PhaseKind::Duty => (
                    Source::NodeCurve,
                    sample_window_ms,
                    vec![Err(Unsupported::AliasedDuty); WINDOWS_MS.len()],
                ),
                _ => {
                    let points = curve_points(t_ns, node, r);
                    let figures = curve_figures(
                        &points,
                        curve.grid_ns,
                        span_ns,
                        sample_window_ms,
                        &WINDOWS_MS,
                    );
                    (Source::NodeCurve, sample_window_ms, figures)
                }
            };
            RungEnvelope {
                rung_id: r.info.id,
                label: r.info.label.clone(),
                source,
                finest_ms,
                points: WINDOWS_MS
                    .iter()
                    .zip(figures)
                    .map(|(&w, f)| point(w, f, supply.as_ref()))
                    .collect(),
            }
        })
        .collect();
    Envelope {
        supply,
        sample_window_ms,
        rungs,
    }
}

/// One point: its figure or why not, and the supply's limit and margin.
pub fn point(
    window_ms: f64,
    figure: Result<f64, Unsupported>,
    supply: Option<&Supply>,
) -> EnvelopePoint {
    let limit_w = supply.and_then(|s| s.limit_at(window_ms));
    let (max_mean_w, unsupported) = match figure {
        Ok(w) => (Some(w), None),
        Err(u) => (None, Some(u)),
    };
    EnvelopePoint {
        window_ms,
        max_mean_w,
        unsupported,
        limit_w,
        margin_w: limit_w.zip(max_mean_w).map(|(l, w)| l - w),
    }
}

/// The figures of a composed cycle at every length of [`WINDOWS_MS`]: a
/// window of k grid steps wraps around the cycle's m points, so it holds
/// k / m whole cycles and the best run of k mod m consecutive points.
fn cycle_figures(c: &NodeCycle, span_ns: i64) -> Vec<Result<f64, Unsupported>> {
    let m = c.values.len();
    let step_ms = c.period_ms / m as f64;
    // Prefix sums over two periods: any run of up to m points, wrapped.
    let mut prefix = Vec::with_capacity(2 * m + 1);
    prefix.push(0.0);
    for j in 0..2 * m {
        prefix.push(prefix[j] + c.values[j % m]);
    }
    let total = prefix[m];
    WINDOWS_MS
        .iter()
        .map(|&w| {
            if ms_to_ns(w) > span_ns {
                return Err(Unsupported::LongerThanRung);
            }
            let k = (w / step_ms).round() as usize;
            if w < step_ms || k == 0 {
                return Err(Unsupported::ShorterThanCycleStep(step_ms));
            }
            let (whole, rest) = (k / m, k % m);
            let best = if rest == 0 {
                0.0
            } else {
                (0..m)
                    .map(|j| prefix[j + rest] - prefix[j])
                    .fold(f64::NEG_INFINITY, f64::max)
            };
            Ok((whole as f64 * total + best) / k as f64)
        })
        .collect()
}

/// The node curve's buffered sums inside the rung's measured window.
fn curve_points(t_ns: &[i64], node: &[Option<f64>], r: &RungWindow) -> Vec<Option<f64>> {
    let lo = t_ns.partition_point(|t| *t < r.measure_from_ns);
    let hi = t_ns.partition_point(|t| *t < r.end_ns);
    node.get(lo..hi.max(lo)).unwrap_or(&[]).to_vec()
}

/// The figures of a run of curve points `grid_ns` apart at every length
/// of `windows` (the run's: [`WINDOWS_MS`]): the highest running mean over
/// k points without a gap.
pub fn curve_figures(
    points: &[Option<f64>],
    grid_ns: i64,
    span_ns: i64,
    sample_window_ms: f64,
    windows: &[f64],
) -> Vec<Result<f64, Unsupported>> {
    let mut sums = Vec::with_capacity(points.len() + 1);
    let mut gaps = Vec::with_capacity(points.len() + 1);
    sums.push(0.0);
    gaps.push(0usize);
    for (i, p) in points.iter().enumerate() {
        sums.push(sums[i] + p.unwrap_or(0.0));
        gaps.push(gaps[i] + usize::from(p.is_none()));
    }
    let grid_ms = ns_to_ms(grid_ns.max(1));
    windows
        .iter()
        .map(|&w| {
            if ms_to_ns(w) > span_ns {
                return Err(Unsupported::LongerThanRung);
            }
            if w < sample_window_ms * (1.0 - SAMPLE_WINDOW_SLACK) {
                return Err(Unsupported::ShorterThanSamples(sample_window_ms));
            }
            let k = ((w / grid_ms).round() as usize).max(1);
            (0..(points.len() + 1).saturating_sub(k))
                .filter(|&i| gaps[i + k] == gaps[i])
                .map(|i| (sums[i + k] - sums[i]) / k as f64)
                .reduce(f64::max)
                .ok_or(Unsupported::NoWholeWindow)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square(m: usize, on: usize, hi: f64, lo: f64) -> Vec<f64> {
        (0..m).map(|j| if j < on { hi } else { lo }).collect()
    }

    #[test]
    fn a_cycle_wraps_and_averages_whole_periods_beyond_one() {
        // 100 ms at 0.5 ms: 50 ms at 1000 W, 50 ms at 200 W.
        let c = NodeCycle {
            harmonics: 8,
            step_w: 800.0,
            stats: crate::cycle::CycleStats {
                mean_w: 600.0,
                peak_w: 1000.0,
                p1_w: 200.0,
                p10_w: 200.0,
                p90_w: 1000.0,
                p99_w: 1000.0,
            },
            ..NodeCycle::of_values(100.0, square(200, 100, 1000.0, 200.0))
        };
        let f = cycle_figures(&c, ms_to_ns(3_000.0));
        let at = |w: f64| f[WINDOWS_MS.iter().position(|x| *x == w).unwrap_or(0)];
        assert_eq!(at(1.0), Ok(1000.0));
        assert_eq!(at(50.0), Ok(1000.0));
        assert_eq!(at(100.0), Ok(600.0));
        // 200 ms: two whole periods.
        assert_eq!(at(200.0), Ok(600.0));
        // 1 s: ten periods.
        assert_eq!(at(1_000.0), Ok(600.0));
        assert_eq!(at(5_000.0), Err(Unsupported::LongerThanRung));
        // A 25 ms on-phase: the best 50 ms holds all of it.
        let mut c2 = c.clone();
        c2.values = square(200, 50, 1000.0, 200.0);
        let f2 = cycle_figures(&c2, ms_to_ns(3_000.0));
        // 50 ms: 25 ms on + 25 ms off → 600 W.
        assert_eq!(f2[5], Ok(600.0));
    }

    #[test]
    fn the_curve_skips_gaps_and_refuses_short_windows() {
        let mut p: Vec<Option<f64>> = vec![Some(100.0); 300];
        p[10] = None;
        for v in &mut p[100..105] {
            *v = Some(500.0);
        }
        let f = curve_figures(&p, 10_000_000, ms_to_ns(3_000.0), 20.0, &WINDOWS_MS);
        assert_eq!(f[0], Err(Unsupported::ShorterThanSamples(20.0)));
        // A fitted 20.03 ms sample still allows the 20 ms window.
        assert_eq!(
            curve_figures(&p, 10_000_000, ms_to_ns(3_000.0), 20.03, &WINDOWS_MS)[4],
            Ok(500.0)
        );
        assert_eq!(f[3], Err(Unsupported::ShorterThanSamples(20.0)));
        // 20 ms: two points of 500 W; 50 ms: five.
        assert_eq!(f[4], Ok(500.0));
        assert_eq!(f[5], Ok(500.0));
        // 100 ms: five at 500 W and five at 100 W.
        assert_eq!(f[6], Ok(300.0));
        assert_eq!(f[12], Err(Unsupported::LongerThanRung));
        let gappy: Vec<Option<f64>> = (0..300).map(|i| (i % 50 != 0).then_some(1.0)).collect();
        let g = curve_figures(&gappy, 10_000_000, ms_to_ns(3_000.0), 20.0, &WINDOWS_MS);
        assert_eq!(g[7], Ok(1.0));
        assert_eq!(g[9], Err(Unsupported::NoWholeWindow));
    }
}
