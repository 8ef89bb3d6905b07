//! The workload rungs as the report states them ([`Workload`]): what each
//! GPU's samples showed of the job's iterations ([`powerlab_analysis::workload`]), and
//! one row per rung ([`WorkloadRow`]) of the figures stated elsewhere in
//! the report for it (its rung summary, its grid metrics), so that
//! `report.md` and `workload.csv` agree with the rung tables and carry
//! their marks.

use powerlab_analysis::cycle::{NoCycle, NodeCycle};
use powerlab_analysis::energy::CounterMean;
use powerlab_analysis::grid::{GridFigure, GridMetrics, Metric, cycle_resolution_ms};
use powerlab_analysis::lifecycle::is_bound;
use powerlab_analysis::summary::{Cycles, RungSummary};
use powerlab_analysis::workload::WorkloadRung;
use powerlab_core::units::s_to_ms;
use powerlab_samples::stats::r3;
use serde::Serialize;
use std::collections::HashMap;

/// Every workload rung of a node run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Workload {
    /// What the samples showed, per rung.
    pub rungs: Vec<WorkloadRung>,
    /// The figures stated, per rung.
    pub rows: Vec<WorkloadRow>,
}

/// What became of a workload rung.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadStatus {
    /// Its period was found and its iteration folded.
    Folded,
    /// Its period was found; its iteration could not be folded (the
    /// verdict says why).
    NotFolded,
    /// No period was found: only the flat figures.
    NoPeriod,
}

/// One workload rung's row of `workload.csv` and of the report's
/// "Workload" section. The node figures are those of the rung's summary
/// (from its folded iteration, or, without a period, the sample-and-hold
/// mean, peak and p90 − p10), withheld and marked as it is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkloadRow {
    /// Rung id.
    pub rung_id: u32,
    /// Rung label.
    pub label: String,
    /// What became of it.
    pub status: WorkloadStatus,
    /// The iteration period found, ms.
    pub period_ms: Option<f64>,
    /// Its 95 % half-width, ms.
    pub period_ci95_ms: Option<f64>,
    /// Cycle-to-cycle jitter (the crossings about the fit), ms.
    pub jitter_ms: Option<f64>,
    /// The same, % of the period.
    pub jitter_pct: Option<f64>,
    /// Standard deviation of successive iteration intervals, ms.
    pub interval_sd_ms: Option<f64>,
    /// Iterations seen (the fewest of any GPU).
    pub cycles: Option<usize>,
    /// Share of an iteration above the mid-level.
    pub on_fraction: Option<f64>,
    /// The level-crossing lag taken off the crossings, ms.
    pub lag_ms: Option<f64>,
    /// How the node figures were obtained (the rung summary's method).
    pub method: powerlab_rundir::summary::Method,
    /// Mean node power, W.
    pub mean_w: Option<f64>,
    /// Its 95 % interval, W.
    pub mean_ci95_lo_w: Option<f64>,
    /// Upper end.
    pub mean_ci95_hi_w: Option<f64>,
    /// The energy counters' mean over the rung's window (between each
    /// GPU's first and last reading inside it, about one a second), W:
    /// what the GPUs drew, against which the samples' mean is checked.
    pub counter_mean_w: Option<f64>,
    /// The share of the window the counters' readings span.
    pub counter_span: Option<f64>,
    /// `mean_w` against `counter_mean_w`, % (positive: the samples read
    /// high).
    pub counter_gap_pct: Option<f64>,
    /// Peak, W.
    pub peak_w: Option<f64>,
    /// p99 − p1, W.
    pub spread_w: Option<f64>,
    /// p90 − p10, W.
    pub swing_w: Option<f64>,
    /// Its 95 % interval, W.
    pub swing_ci95_lo_w: Option<f64>,
    /// Upper end.
    pub swing_ci95_hi_w: Option<f64>,
    /// The fastest 10–90 % rise, W/s.
    pub ramp_up_w_per_s: Option<f64>,
    /// Its ±, W/s.
    pub ramp_up_pm_w_per_s: Option<f64>,
    /// The rise is a lower bound (faster than the resolution).
    pub ramp_up_lower_bound: bool,
    /// The fastest 10–90 % fall, W/s.
    pub ramp_down_w_per_s: Option<f64>,
    /// Its ±, W/s.
    pub ramp_down_pm_w_per_s: Option<f64>,
    /// The fall is a lower bound.
    pub ramp_down_lower_bound: bool,
    /// Share of the fluctuation's energy in the grid band, %.
    pub band_share_pct: Option<f64>,
    /// The upper end where the share is an interval, %.
    pub band_share_upper_pct: Option<f64>,
    /// The folded iteration's time resolution, ms.
    pub resolution_ms: Option<f64>,
    /// Why there is no period, or no fold, in words.
    pub verdict: Option<String>,
    /// Why the rung's raw data are incomplete (every figure of the row is
    /// then of the part that was sampled).
    pub incomplete: Option<String>,
    /// The phase's `iteration_ms`, the user's hint (report.md only).
    #[serde(skip)]
    pub declared_iteration_ms: Option<f64>,
}

/// Every workload rung's row: its period from `rungs`, its node figures
/// from its summary in `summaries` (after the marks) and `grid`, its
/// resolution from its cycle in `cycles`, and its energy counters' mean
/// from `counters` (by rung id).
pub fn rows(
    rungs: &[WorkloadRung],
    summaries: &[RungSummary],
    grid: &GridMetrics,
    cycles: &Cycles,
    counters: &HashMap<u32, CounterMean>,
) -> Vec<WorkloadRow> {
    rungs
        .iter()
        .filter_map(|w| {
            let s = summaries.iter().find(|s| s.rung.id == w.rung_id)?;
            let figures = grid
                .rungs
                .iter()
                .find(|g| g.rung_id == w.rung_id)
                .map_or(&[][..], |g| g.figures.as_slice());
            let mut row = row(w, s, figures, cycles.get(&w.rung_id));
            if let Some(c) = counters.get(&w.rung_id) {
                row.counter_mean_w = Some(r3(c.w));
                row.counter_span = Some(r3(c.span_share));
                row.counter_gap_pct = row
                    .mean_w
                    .filter(|_| c.w > 0.0)
                    .map(|m| r3(100.0 * (m / c.w - 1.0)));
            }
            Some(row)
        })
        .collect()
}

/// One rung's row.
fn row(
    w: &WorkloadRung,
    s: &RungSummary,
    figures: &[GridFigure],
    cycle: Option<&Result<NodeCycle, NoCycle>>,
) -> WorkloadRow {
    let found = w.found.as_ref().ok();
    // A rung whose figures the marks withheld (its GPUs cover different
    // shares of the window) states no grid figure either.
    let folded = matches!(cycle, Some(Ok(_))) && s.method != powerlab_rundir::summary::Method::None;
    let (status, verdict) = match (&w.found, cycle) {
        (Err(why), _) => (
            WorkloadStatus::NoPeriod,
            Some(format!("no period found: {why}")),
        ),
        (Ok(_), Some(Ok(_))) => (WorkloadStatus::Folded, None),
        (Ok(_), Some(Err(NoCycle::Verdict(v)))) => (
            WorkloadStatus::NotFolded,
            Some(format!("the iteration is not folded: {v}")),
        ),
        (Ok(_), _) => (
            WorkloadStatus::NotFolded,
            Some("the iteration is not folded".into()),
        ),
    };
    let fig = |m: Metric| figures.iter().find(|f| f.metric == m).filter(|_| folded);
    // The resolution rule (`lifecycle::is_bound`): a 10–90 % time the
    // samples cannot time (under twice their spacing) is a bound, however
    // many iterations were folded.
    let untimed = |m: Metric| {
        let step = match cycle {
            Some(Ok(c)) => c.step_w,
            _ => f64::NAN,
        };
        let spacing = found.map_or(0.0, |f| f.spacing_ms);
        fig(m)
            .and_then(|f| f.value)
            .is_some_and(|v| is_bound(s_to_ms(0.8 * step.abs() / v), spacing, 0.0))
    };
    let value = |m: Metric| fig(m).and_then(|f| f.value).map(r3);
    let pm = |m: Metric| {
        fig(m)
            .filter(|_| !untimed(m))
            .and_then(|f| f.plus_minus)
            .map(r3)
    };
    let lower =
        |m: Metric| fig(m).is_some_and(|f| f.value.is_some() && (f.lower_bound || untimed(m)));
    WorkloadRow {
        rung_id: w.rung_id,
        label: w.label.clone(),
        status,
        period_ms: found.map(|f| r3(f.period_ms)),
        period_ci95_ms: found.map(|f| r3(f.period_ci95_ms)),
        // NaN: iterations placed at t0 + k·P (a back-to-back job's
        // period from its spectrum) show no jitter of their own.
        jitter_ms: found.map(|f| f.jitter_ms).filter(|j| j.is_finite()).map(r3),
        jitter_pct: found
            .map(|f| 100.0 * f.jitter_ms / f.period_ms)
            .filter(|j| j.is_finite())
            .map(r3),
        interval_sd_ms: found
            .map(|f| f.interval_sd_ms)
            .filter(|j| j.is_finite())
            .map(r3),
        cycles: found.map(|f| f.cycles),
        on_fraction: found.map(|f| r3(f.on_fraction)),
        lag_ms: found.map(|f| r3(f.lag_ms)),
        method: s.method,
        mean_w: s.mean_w,
        mean_ci95_lo_w: s.mean_ci95.map(|b| r3(b.lo)),
        mean_ci95_hi_w: s.mean_ci95.map(|b| r3(b.hi)),
        counter_mean_w: None,
        counter_span: None,
        counter_gap_pct: None,
        peak_w: s.peak_w,
        spread_w: s.spread_w,
        swing_w: s.swing_w,
        swing_ci95_lo_w: s.swing_ci95.map(|b| r3(b.lo)),
        swing_ci95_hi_w: s.swing_ci95.map(|b| r3(b.hi)),
        ramp_up_w_per_s: value(Metric::RampUp),
        ramp_up_pm_w_per_s: pm(Metric::RampUp),
        ramp_up_lower_bound: lower(Metric::RampUp),
        ramp_down_w_per_s: value(Metric::RampDown),
        ramp_down_pm_w_per_s: pm(Metric::RampDown),
        ramp_down_lower_bound: lower(Metric::RampDown),
        band_share_pct: value(Metric::BandShare),
        band_share_upper_pct: fig(Metric::BandShare).and_then(|f| f.upper).map(r3),
        resolution_ms: match cycle {
            Some(Ok(c)) => Some(r3(cycle_resolution_ms(c))),
            _ => None,
        },
        verdict,
        incomplete: s.incomplete.clone(),
        declared_iteration_ms: s.rung.workload.as_ref().and_then(|w| w.iteration_ms),
    }
}

/// A workload rung's folded iteration: what a prediction builds on.
#[derive(Debug, Clone, Copy)]
pub struct FoldedIteration<'a> {
    /// Rung id.
    pub rung_id: u32,
    /// The iteration period found, ms.
    pub period_ms: f64,
    /// Its 95 % half-width, ms.
    pub period_ci95_ms: f64,
    /// Share of an iteration above the mid-level (the fold's duty).
    pub on_fraction: f64,
    /// Cycle-to-cycle jitter, ms.
    pub jitter_ms: f64,
    /// Each GPU's iteration, evenly spaced over the period, phase 0 at its
    /// own iteration starts (the fold's restored cycle, W).
    pub gpu_cycles: &'a [(String, Vec<f64>)],
    /// The same folds as they are (bin means, nothing restored), W.
    pub gpu_levels: &'a [(String, Vec<f64>)],
    /// The node's composed iteration, with its figures and intervals.
    pub cycle: &'a NodeCycle,
    /// Its time resolution, ms ([`cycle_resolution_ms`]).
    pub resolution_ms: f64,
}

impl Workload {
    /// The folded iteration of workload rung `rung_id` (None: not a
    /// workload rung, no period found, or not folded); `cycles` are the
    /// report's.
    pub fn folded<'a>(&'a self, cycles: &'a Cycles, rung_id: u32) -> Option<FoldedIteration<'a>> {
        let w = self.rungs.iter().find(|w| w.rung_id == rung_id)?;
        let f = w.found.as_ref().ok()?;
        let c = cycles.get(&rung_id)?.as_ref().ok()?;
        Some(FoldedIteration {
            rung_id,
            period_ms: f.period_ms,
            period_ci95_ms: f.period_ci95_ms,
            on_fraction: f.on_fraction,
            jitter_ms: f.jitter_ms,
            gpu_cycles: &c.gpu_cycles,
            gpu_levels: &c.gpu_levels,
            cycle: c,
            resolution_ms: cycle_resolution_ms(c),
        })
    }
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    /// A row with nothing stated.
    pub(crate) fn empty_row() -> WorkloadRow {
        WorkloadRow {
            rung_id: 0,
            label: "w".into(),
            status: WorkloadStatus::NoPeriod,
            period_ms: None,
            period_ci95_ms: None,
            jitter_ms: None,
            jitter_pct: None,
            interval_sd_ms: None,
            cycles: None,
            on_fraction: None,
            lag_ms: None,
            method: powerlab_rundir::summary::Method::SampleAndHold,
            mean_w: None,
            mean_ci95_lo_w: None,
            mean_ci95_hi_w: None,
            counter_mean_w: None,
            counter_span: None,
            counter_gap_pct: None,
            peak_w: None,
            spread_w: None,
            swing_w: None,
            swing_ci95_lo_w: None,
            swing_ci95_hi_w: None,
            ramp_up_w_per_s: None,
            ramp_up_pm_w_per_s: None,
            ramp_up_lower_bound: false,
            ramp_down_w_per_s: None,
            ramp_down_pm_w_per_s: None,
            ramp_down_lower_bound: false,
            band_share_pct: None,
            band_share_upper_pct: None,
            resolution_ms: None,
            verdict: None,
            incomplete: None,
            declared_iteration_ms: None,
        }
    }
}
