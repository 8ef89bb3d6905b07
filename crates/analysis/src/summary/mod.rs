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

mod compare;
mod curve;
#[doc(hidden)]
pub mod fixture;
mod repeats;
mod resolution;
mod rungs;
#[cfg(test)]
mod tests;

pub use compare::{PhaseCompare, compare_modes};
pub use repeats::{RepeatStats, base_label, base_label_of, repeat_stats};
pub use resolution::{Figure, FigureInterval, Resolution, UNRESOLVED_STEP_SHARE};
pub use rungs::summarize;

use crate::cycle::{Bounds, NoCycle, NodeCycle};
use crate::metric::{self, MetricValues};
use crate::sensor::verdict::RawVerdict;
use powerlab_core::Instrument;
use powerlab_core::units::PeriodMs;
use powerlab_rundir::RungInfo;
use powerlab_rundir::summary::{Method, SummaryRow};
use powerlab_samples::stats::r3;
use serde::ser::{Serialize, Serializer};
use std::collections::HashMap;

/// One rung's node summary: the rung's facts as the run recorded them,
/// and the node figures collated from its samples. Its CSV and JSON rows
/// are its [`SummaryRow`] ([`RungSummary::row`]), declared once in
/// `rundir`: the rung's facts first, then the figures.
#[derive(Debug, Clone, PartialEq)]
pub struct RungSummary {
    /// The rung as the run recorded it (`events.jsonl`).
    pub rung: RungInfo,
    /// How the node figures were obtained: `composed cycle` (duty rungs),
    /// `sample and hold` (constant load), `energy counter` (a duty rung
    /// without a composed cycle: the mean only), or `none`.
    pub method: Method,
    /// Why figures are missing or qualified (empty when all is stated).
    pub verdict: Option<String>,
    /// Instrument the figures come from (`buffered_w`, `instant_w`, or
    /// `energy_mj` for the energy counter's mean).
    pub instrument: Instrument,
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
    pub instrument_verdict: Option<RawVerdict>,
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
    /// What the composed figures' intervals leave open: figures only
    /// bounded, or no bound at all (too few cycles); None when every
    /// figure is resolved.
    pub resolution: Option<Resolution>,
    /// Whole cycles the intervals were resampled from (a rack: the fewest
    /// of any node).
    pub cycles: Option<usize>,
    /// The registry's own metrics ([`crate::metric`]: those without a
    /// field here), each with its 95 % interval where it is bootstrapped.
    pub metrics: MetricValues,
}

impl RungSummary {
    /// The rung's row of `summary.csv` and `summary.json`
    /// ([`powerlab_rundir::summary::SummaryRow`], declared there once):
    /// the rung's facts, then the figures, intervals rounded to 3 decimals.
    pub fn row(&self) -> SummaryRow {
        let r = &self.rung;
        let ci = |b: Option<Bounds>| (b.map(|b| r3(b.lo)), b.map(|b| r3(b.hi)));
        let (mean_ci95_lo_w, mean_ci95_hi_w) = ci(self.mean_ci95);
        let (peak_ci95_lo_w, peak_ci95_hi_w) = ci(self.peak_ci95);
        let (spread_ci95_lo_w, spread_ci95_hi_w) = ci(self.spread_ci95);
        let (swing_ci95_lo_w, swing_ci95_hi_w) = ci(self.swing_ci95);
        SummaryRow {
            rung_id: r.id,
            label: r.label.clone(),
            phase: r.phase.clone(),
            kind: r.kind,
            mode: r.mode,
            period_ms: r.period_ms.map(PeriodMs::ms),
            nominal_period_ms: r.requested_period_ms().map(PeriodMs::ms),
            duty: r.duty,
            repeat: r.repeat,
            method: self.method,
            verdict: self.verdict.clone(),
            instrument: self.instrument,
            samples: self.samples,
            coverage: self.coverage,
            harmonics: self.harmonics,
            mean_w: self.mean_w,
            peak_w: self.peak_w,
            p1_w: self.p1_w,
            p99_w: self.p99_w,
            spread_w: self.spread_w,
            swing_w: self.swing_w,
            instrument_verdict: self.instrument_verdict.map(|v| v.to_string()),
            energy_j: self.energy_j,
            raw_mean_w: self.raw_mean_w,
            raw_peak_w: self.raw_peak_w,
            raw_spread_w: self.raw_spread_w,
            raw_swing_w: self.raw_swing_w,
            instant_mean_w: self.instant_mean_w,
            instant_spread_w: self.instant_spread_w,
            average_field_mean_w: self.average_field_mean_w,
            average_field_spread_w: self.average_field_spread_w,
            average_field_swing_w: self.average_field_swing_w,
            start_error_max_us: self.start_error_max_us,
            start_skew_us: self.start_skew_us,
            rise_err_p50_us: self.rise_err_p50_us,
            rise_err_p99_us: self.rise_err_p99_us,
            rise_err_max_us: self.rise_err_max_us,
            fall_err_p50_us: self.fall_err_p50_us,
            fall_err_p99_us: self.fall_err_p99_us,
            fall_err_max_us: self.fall_err_max_us,
            edge_skew_p99_us: self.edge_skew_p99_us,
            clock_drift_ppm: self.clock_drift_ppm,
            barrier_ok: self.barrier_ok,
            edges_verdict: self.edges_verdict.clone(),
            window_coverage: self.window_coverage,
            incomplete: self.incomplete.clone(),
            step_w: self.step_w,
            unresolved: self.resolution.as_ref().map(ToString::to_string),
            cycles: self.cycles,
            mean_ci95_lo_w,
            mean_ci95_hi_w,
            peak_ci95_lo_w,
            peak_ci95_hi_w,
            spread_ci95_lo_w,
            spread_ci95_hi_w,
            swing_ci95_lo_w,
            swing_ci95_hi_w,
            extra: self.metric_columns(),
        }
    }

    /// The registry's own metrics' columns ([`crate::metric::own`]): each
    /// value, then its interval rounded to 3 decimals where bootstrapped.
    fn metric_columns(&self) -> Vec<(String, Option<f64>)> {
        let mut out = Vec::new();
        for m in metric::own() {
            let v = self.metrics.get(m.column());
            out.push((m.column().to_string(), v.value));
            if m.bootstrapped() {
                let [lo, hi] = metric::ci_columns(m);
                out.push((lo, v.ci95.map(|b| r3(b.lo))));
                out.push((hi, v.ci95.map(|b| r3(b.hi))));
            }
        }
        out
    }
}

/// Written as its [`SummaryRow`], the one declaration of the columns.
impl Serialize for RungSummary {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.row().json().serialize(serializer)
    }
}

/// How each rung's node cycle came out (see [`crate::cycle::compose_all`]).
pub type Cycles = HashMap<u32, Result<NodeCycle, NoCycle>>;
