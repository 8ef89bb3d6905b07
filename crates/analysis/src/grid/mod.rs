//! Grid metrics: per rung, what a utility interconnect limits (arXiv
//! 2508.14318): the node's 10–90 % ramp-up and ramp-down rate, its dynamic
//! range (max − min) and the share of its fluctuation's energy inside a
//! critical band, each judged against the campaign's `[grid]` where it
//! declares a limit.
//!
//! - A rung with a composed node cycle: everything from the cycle. The
//!   step is the cycle's two plateaus ([`shape::plateaus`]); a rate is
//!   0.8 × step over the shortest 10–90 % time of any edge. The cycle
//!   holds its restored harmonics, so an edge cannot look faster than one
//!   of an ideal step cut to them: [`RESOLUTION_PER_CUTOFF`] / (harmonics
//!   / period), or the grid step where that is longer. That is the
//!   figure's resolution; an edge shorter than [`NUMBER_ABOVE_RESOLUTION`]
//!   times it is stated as a lower bound on the rate. The band share
//!   counts the cycle's harmonics k / period, and is withheld where the
//!   band reaches above the highest restored one.
//! - Any other rung: the dynamic range and the band share from the node
//!   curve's buffered sum inside the rung, the band share withheld where
//!   the band reaches above the samples' Nyquist frequency (half the rate
//!   of what one sample stands for); no rates (a held sample cannot time
//!   an edge).

mod curve;
pub mod judge;
pub mod modes;
mod rates;
pub mod shape;
#[cfg(test)]
mod tests;

use curve::{Spacing, curve_figures};
pub use judge::GridVerdict;
pub use rates::{edge_rate, window_changes};

use crate::curve::NodeCurve;
use crate::cycle::NodeCycle;
use crate::envelope::Source;
use crate::summary::Cycles;
use powerlab_campaign::{DEFAULT_BAND_HZ, Grid, Ramp};
use powerlab_core::units::{ms_to_s, ns_to_ms};
use powerlab_samples::load::Run;
use serde::Serialize;
use std::fmt;

/// The 10–90 % rise time of an ideal step cut to its harmonics below
/// f_c is 0.446 / f_c (the sine integral reaches ±0.4 π at ±1.40).
pub const RESOLUTION_PER_CUTOFF: f64 = 0.446;

/// An edge at least this many times the resolution is stated as a rate:
/// a measured time t holds the resolution r about as √(t² − r²) + r would,
/// so the rate is then within 6 % of what the edge alone would give.
pub const NUMBER_ABOVE_RESOLUTION: f64 = 3.0;

/// A rate is timed only on a step at least 1 / this times the half-width
/// of the cycle's 95 % swing interval: on the simulated node, staggered
/// rungs whose step was 5–7 half-widths (130–175 W against 25 W) showed
/// reconstructed edges faster than the true ones, lower bounds 16–60 %
/// above the true rate.
pub const MAX_STEP_NOISE: f64 = 0.1;

/// A window over which the fastest change of the power is stated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Window {
    /// 1 ms.
    Ms1,
    /// 10 ms.
    Ms10,
    /// 100 ms.
    Ms100,
    /// 1 s.
    S1,
}

impl Window {
    /// Every window, shortest first.
    pub const ALL: [Window; 4] = [Window::Ms1, Window::Ms10, Window::Ms100, Window::S1];

    /// Its length, ms.
    pub const fn ms(self) -> f64 {
        match self {
            Window::Ms1 => 1.0,
            Window::Ms10 => 10.0,
            Window::Ms100 => 100.0,
            Window::S1 => 1000.0,
        }
    }
}

/// What a row of the grid metrics states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// The fastest 10–90 % rise, W/s at the node.
    RampUp,
    /// The fastest 10–90 % fall, W/s at the node.
    RampDown,
    /// The fastest rise over a window, W/s at the node.
    RiseOver(Window),
    /// The fastest fall over a window, W/s at the node.
    FallOver(Window),
    /// Max − min over the rung, W.
    DynamicRange,
    /// The same as a share of the max, %.
    DynamicRangePct,
    /// The share of the fluctuation's energy inside the band, %.
    BandShare,
}

impl Metric {
    /// Every metric, in the order a rung's rows list them.
    pub const ALL: [Metric; 13] = [
        Metric::RampUp,
        Metric::RampDown,
        Metric::DynamicRange,
        Metric::DynamicRangePct,
        Metric::BandShare,
        Metric::RiseOver(Window::Ms1),
        Metric::RiseOver(Window::Ms10),
        Metric::RiseOver(Window::Ms100),
        Metric::RiseOver(Window::S1),
        Metric::FallOver(Window::Ms1),
        Metric::FallOver(Window::Ms10),
        Metric::FallOver(Window::Ms100),
        Metric::FallOver(Window::S1),
    ];

    /// The direction of a rate (None: not a rate).
    pub const fn ramp(self) -> Option<Ramp> {
        match self {
            Metric::RampUp | Metric::RiseOver(_) => Some(Ramp::Up),
            Metric::RampDown | Metric::FallOver(_) => Some(Ramp::Down),
            _ => None,
        }
    }

    /// Its name in `grid.csv`.
    pub const fn name(self) -> &'static str {
        match self {
            Metric::RampUp => "ramp_up",
            Metric::RampDown => "ramp_down",
            Metric::RiseOver(Window::Ms1) => "rise_over_1ms",
            Metric::RiseOver(Window::Ms10) => "rise_over_10ms",
            Metric::RiseOver(Window::Ms100) => "rise_over_100ms",
            Metric::RiseOver(Window::S1) => "rise_over_1s",
            Metric::FallOver(Window::Ms1) => "fall_over_1ms",
            Metric::FallOver(Window::Ms10) => "fall_over_10ms",
            Metric::FallOver(Window::Ms100) => "fall_over_100ms",
            Metric::FallOver(Window::S1) => "fall_over_1s",
            Metric::DynamicRange => "dynamic_range",
            Metric::DynamicRangePct => "dynamic_range_pct",
            Metric::BandShare => "band_share",
        }
    }

    /// Its unit.
    pub const fn unit(self) -> &'static str {
        match self {
            Metric::RampUp | Metric::RampDown | Metric::RiseOver(_) | Metric::FallOver(_) => "W/s",
            Metric::DynamicRange => "W",
            Metric::DynamicRangePct | Metric::BandShare => "%",
        }
    }
}

/// Why a metric has no figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Withheld {
    /// No composed cycle: a held sample cannot time an edge.
    NoCycle,
    /// The band reaches above the samples' Nyquist frequency (Hz).
    AboveNyquist(f64),
    /// The band reaches above the cycle's highest restored harmonic (Hz).
    AboveHarmonics(f64),
    /// The node power does not move (no step, no fluctuation).
    Flat,
    /// No complete edge in the cycle.
    NoEdge,
    /// The step (W) is within ten times the noise of the cycle (the
    /// half-width of its swing's 95 % interval, W).
    StepInNoise(f64, f64),
    /// Too few points in the rung.
    TooFewPoints,
    /// A periodic rung without a composed cycle: the held sum of the GPUs'
    /// samples pairs one GPU's reading with another's from before its
    /// edge, and invents peaks and dips the node never drew.
    HeldSum,
    /// A periodic rung whose fundamental (Hz) is above the samples'
    /// Nyquist frequency: its energy aliases into the band.
    Aliased(f64),
    /// The window is shorter than the points' spacing (ms).
    ShorterThanStep(f64),
    /// The window is shorter than the source's time resolution (ms).
    ShorterThanResolution(f64),
    /// A predicted stagger group's rise meets another's fall within the
    /// resolution: the smoothed edges partly cancel, and what is left is
    /// no bound.
    EdgesCancel,
}

impl fmt::Display for Withheld {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Withheld::NoCycle => write!(
                f,
                "not measurable: no composed cycle (held samples cannot time an edge)"
            ),
            Withheld::AboveNyquist(n) => {
                write!(f, "not measurable: band reaches above Nyquist ({n:.2} Hz)")
            }
            Withheld::AboveHarmonics(h) => write!(
                f,
                "not measurable: band reaches above the cycle's highest restored harmonic ({h:.2} Hz)"
            ),
            Withheld::Flat => write!(f, "not measurable: the node power does not move"),
            Withheld::NoEdge => write!(f, "not measurable: no complete 10-90 % edge"),
            Withheld::StepInNoise(step, noise) => write!(
                f,
                "not measurable: the {step:.1} W step is within ten times the cycle's noise ({noise:.1} W)"
            ),
            Withheld::TooFewPoints => write!(f, "not measurable: too few points in the rung"),
            Withheld::HeldSum => write!(
                f,
                "not measurable: no composed cycle (the held sum of a periodic rung invents peaks and dips)"
            ),
            Withheld::Aliased(hz) => write!(
                f,
                "not measurable: the rung's {hz:.2} Hz fundamental is above Nyquist and aliases into the band"
            ),
            Withheld::EdgesCancel => write!(
                f,
                "not measurable: one stagger group's rise meets another's fall within the measured cycles' resolution, and their smoothed edges partly cancel (no bound)"
            ),
            Withheld::ShorterThanResolution(ms) => write!(
                f,
                "not measurable: the window is shorter than the {ms:.2} ms the source resolves"
            ),
            Withheld::ShorterThanStep(ms) => write!(
                f,
                "not measurable: the window is shorter than the {ms:.2} ms between points"
            ),
        }
    }
}

/// One metric of one rung.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GridFigure {
    /// What it states.
    pub metric: Metric,
    /// The figure (None: withheld, see `withheld`).
    pub value: Option<f64>,
    /// Its ± (None: not stated).
    pub plus_minus: Option<f64>,
    /// The figure is a lower bound ("≥"): the edge is too fast for the
    /// source's resolution.
    pub lower_bound: bool,
    /// The figure is an interval from `value` to this (a band share whose
    /// band reaches beyond what the source resolves: the resolved part's
    /// share, and that plus everything unresolved).
    pub upper: Option<f64>,
    /// The time resolution the figure rests on, ms.
    pub resolution_ms: Option<f64>,
    /// The highest frequency the source holds, Hz (band share).
    pub highest_hz: Option<f64>,
    /// Why there is no figure.
    pub withheld: Option<Withheld>,
    /// The declared limit, in the figure's unit (a ramp limit scaled to
    /// the node).
    pub limit: Option<f64>,
    /// limit − figure.
    pub margin: Option<f64>,
    /// The verdict.
    pub verdict: GridVerdict,
}

impl GridFigure {
    /// A figure withheld for `why`.
    pub fn withheld(metric: Metric, why: Withheld) -> GridFigure {
        GridFigure {
            metric,
            value: None,
            plus_minus: None,
            lower_bound: false,
            upper: None,
            resolution_ms: None,
            highest_hz: None,
            withheld: Some(why),
            limit: None,
            margin: None,
            verdict: GridVerdict::NotMeasured,
        }
    }

    /// A figure known only to lie in `[lo, hi]`.
    pub(crate) fn between(metric: Metric, lo: f64, hi: f64, resolution_ms: f64) -> GridFigure {
        GridFigure {
            upper: Some(hi),
            ..GridFigure::stated(metric, lo, resolution_ms)
        }
    }

    /// A stated figure.
    pub fn stated(metric: Metric, value: f64, resolution_ms: f64) -> GridFigure {
        GridFigure {
            value: Some(value),
            withheld: None,
            resolution_ms: Some(resolution_ms),
            ..GridFigure::withheld(metric, Withheld::Flat)
        }
    }
}

/// One rung's grid metrics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RungGrid {
    /// Rung id.
    pub rung_id: u32,
    /// Rung label.
    pub label: String,
    /// Where its figures come from.
    pub source: Source,
    /// One per [`Metric::ALL`].
    pub figures: Vec<GridFigure>,
}

/// Every rung's grid metrics and what they are judged against.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GridMetrics {
    /// The campaign's `[grid]`, if declared.
    pub spec: Option<Grid>,
    /// The band, Hz: the declared one or [`DEFAULT_BAND_HZ`].
    pub band_hz: [f64; 2],
    /// The node's (or rack's) GPUs, which scale a ramp limit.
    pub gpus: usize,
    /// Per rung, in run order.
    pub rungs: Vec<RungGrid>,
}

impl GridMetrics {
    /// The declared limit of `metric` for these GPUs, in the figure's unit,
    /// as every figure is judged against it (None: no `[grid]`, or it
    /// declares no such limit).
    pub fn limit_of(&self, metric: Metric) -> Option<f64> {
        self.spec
            .as_ref()
            .and_then(|s| judge::limit_of(s, metric, self.gpus))
    }
}

/// The campaign's `[grid]` (None: not declared).
pub fn grid_of(run: &Run) -> Option<Grid> {
    run.campaign.grid.clone()
}

/// Every rung's grid metrics: rungs with a composed cycle from it, the
/// others from `curve`'s buffered sum (a sample standing for
/// `sample_window_ms`), judged against the run's `[grid]` for `gpus` GPUs.
pub fn grid_metrics(
    run: &Run,
    curve: &NodeCurve,
    cycles: &Cycles,
    sample_window_ms: f64,
    gpus: usize,
) -> GridMetrics {
    let spec = grid_of(run);
    let band_hz = spec.as_ref().map_or(DEFAULT_BAND_HZ, |g| g.band_hz);
    let (t_ns, node) = (&curve.columns().t_ns, &curve.columns().buffered_w);
    let rungs = run
        .rungs
        .iter()
        .map(|r| {
            let (source, figures) = match cycles.get(&r.info.id) {
                Some(Ok(c)) if c.values.len() >= 4 && c.period_ms > 0.0 => {
                    (Source::ComposedCycle, cycle_figures(c, band_hz))
                }
                _ => {
                    let lo = t_ns.partition_point(|t| *t < r.measure_from_ns);
                    let hi = t_ns.partition_point(|t| *t < r.end_ns).max(lo);
                    let points = node.get(lo..hi).unwrap_or(&[]);
                    let step_ms = ns_to_ms(curve.grid_ns.max(1));
                    let period_ms = r.info.period_ms.map(|p| p.ms());
                    let spacing = Spacing {
                        step_ms,
                        sample_window_ms,
                    };
                    let f = curve_figures(points, spacing, band_hz, period_ms);
                    (Source::NodeCurve, f)
                }
            };
            RungGrid {
                rung_id: r.info.id,
                label: r.info.label.clone(),
                source,
                figures: figures
                    .into_iter()
                    .map(|f| judge::judge(f, spec.as_ref(), gpus))
                    .collect(),
            }
        })
        .collect();
    GridMetrics {
        spec,
        band_hz,
        gpus,
        rungs,
    }
}

/// The cycle's time resolution, ms: the 10–90 % time of an ideal step cut
/// to its restored harmonics, or its grid step where that is longer.
pub fn cycle_resolution_ms(c: &NodeCycle) -> f64 {
    let step_ms = c.period_ms / c.values.len() as f64;
    let cutoff_ms = if c.harmonics == 0 {
        c.period_ms
    } else {
        RESOLUTION_PER_CUTOFF * c.period_ms / c.harmonics as f64
    };
    step_ms.max(cutoff_ms)
}

/// Every metric of a composed cycle.
fn cycle_figures(c: &NodeCycle, band_hz: [f64; 2]) -> Vec<GridFigure> {
    let m = c.values.len();
    let step_ms = c.period_ms / m as f64;
    let res_ms = cycle_resolution_ms(c);
    let rate = |metric: Metric, dir: Ramp| {
        edge_rate(
            &c.values,
            c.period_ms,
            res_ms,
            c.interval.as_ref(),
            metric,
            dir,
        )
    };
    let (min, max) = c
        .values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(*v), b.max(*v))
        });
    // The bootstrap's bias of the peak and of the 1st percentile (noisy
    // bins push both outwards) taken off the max and the min.
    let (max, min) = c.interval.map_or((max, min), |i| {
        (
            max - (c.stats.peak_w - i.peak.centre),
            min + (i.p1.centre - c.stats.p1_w),
        )
    });
    let range_pm = c
        .interval
        .map(|i| 0.5 * (i.peak.width().powi(2) + i.p1.width().powi(2)).sqrt());
    // A peak narrower than the resolution is smoothed: the range rests on it.
    let mut range = GridFigure::stated(Metric::DynamicRange, max - min, res_ms);
    range.plus_minus = range_pm;
    let mut pct = GridFigure::stated(Metric::DynamicRangePct, pct_of(max - min, max), res_ms);
    pct.plus_minus = range_pm.map(|p| pct_of(p, max));
    let highest_hz = c.harmonics as f64 / ms_to_s(c.period_ms);
    let share = if band_hz[1] > highest_hz {
        share_bounds(
            &c.values,
            (ms_to_s(step_ms), res_ms),
            band_hz,
            highest_hz,
            shape::Unresolved::WithinRange,
        )
    } else {
        share_figure(&c.values, ms_to_s(step_ms), band_hz, res_ms)
    };
    let mut out = vec![
        rate(Metric::RampUp, Ramp::Up),
        rate(Metric::RampDown, Ramp::Down),
        range,
        pct,
        GridFigure {
            highest_hz: Some(highest_hz),
            ..share
        },
    ];
    // Where the cycle cannot time an edge, its short windows are withheld
    // for the same reason.
    let untimed = [out[0].withheld, out[1].withheld];
    out.extend(window_changes(&c.values, step_ms, res_ms, untimed));
    out
}

/// `part` as a percentage of `whole`.
fn pct_of(part: f64, whole: f64) -> f64 {
    if whole.abs() > 0.0 {
        100.0 * part / whole
    } else {
        f64::NAN
    }
}

/// The band share of `values` spaced `step_s` apart, %.
fn share_figure(values: &[f64], step_s: f64, band_hz: [f64; 2], res_ms: f64) -> GridFigure {
    match shape::band_share(values, step_s, band_hz) {
        Some(s) => GridFigure::stated(Metric::BandShare, 100.0 * s, res_ms),
        None if values.len() < 4 => GridFigure::withheld(Metric::BandShare, Withheld::TooFewPoints),
        None => GridFigure::withheld(Metric::BandShare, Withheld::Flat),
    }
}

/// The band share of `values` spaced `step_s` apart where they resolve
/// only up to `highest_hz` and the band reaches above it: the interval
/// [`shape::band_share_bounds`] gives, %.
pub fn share_bounds(
    values: &[f64],
    (step_s, res_ms): (f64, f64),
    band_hz: [f64; 2],
    highest_hz: f64,
    unresolved: shape::Unresolved,
) -> GridFigure {
    match shape::band_share_bounds(values, step_s, band_hz, highest_hz, unresolved) {
        Some((lo, hi)) => GridFigure::between(Metric::BandShare, 100.0 * lo, 100.0 * hi, res_ms),
        None => GridFigure::withheld(Metric::BandShare, Withheld::AboveHarmonics(highest_hz)),
    }
}
