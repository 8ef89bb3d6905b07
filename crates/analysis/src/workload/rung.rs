//! One workload rung: every GPU's iteration, the rung's period, and its
//! node cycle composed on the iterations' starts ([`analyse_rung`]).

use super::MAX_GPU_DISAGREEMENT;
use super::detect::{GpuIteration, NoPeriod, find_iteration};
use crate::cycle::{self, NoCycle, NodeCycle};
use crate::fft::Planner;
use crate::sensor::model::SensorModel;
use powerlab_core::Instrument;
use powerlab_core::shape::EdgeKind;
use powerlab_rundir::PhaseKind;
use powerlab_samples::load::{Run, RungWindow};
use powerlab_samples::series::{EdgeIndex, SeriesSet};
use powerlab_samples::stats::{median, median_high};

/// A workload rung's iteration: what its GPUs agree on.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundPeriod {
    /// Period, ms (the GPUs' fits, weighted by their precision).
    pub period_ms: f64,
    /// Its 95 % half-width, ms: the GPUs' median, or half the range of
    /// their periods where that is wider.
    pub period_ci95_ms: f64,
    /// Cycle-to-cycle jitter (the crossings' scatter about the fit), the
    /// GPUs' median, ms.
    pub jitter_ms: f64,
    /// Standard deviation of successive iteration intervals, the GPUs'
    /// median, ms.
    pub interval_sd_ms: f64,
    /// Iterations seen, the fewest of any GPU.
    pub cycles: usize,
    /// Share of an iteration above the mid-level, the GPUs' mean.
    pub on_fraction: f64,
    /// The level-crossing lag taken off the crossings, the GPUs' median, ms.
    pub lag_ms: f64,
    /// The sample spacing, the widest of any GPU, ms.
    pub spacing_ms: f64,
}

/// A workload rung as its samples show it.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadRung {
    /// Rung id.
    pub rung_id: u32,
    /// Rung label.
    pub label: String,
    /// Every GPU's iteration, or why it has none.
    pub gpus: Vec<(String, Result<GpuIteration, NoPeriod>)>,
    /// The rung's period, or why it has none, in words.
    pub found: Result<FoundPeriod, String>,
}

/// Every workload rung of the run with, where a period was found, its
/// node cycle composed on the iterations' starts (or the verdict that says
/// why it cannot be); a rung without a period has no cycle (its figures
/// are the sample-and-hold ones).
pub fn analyse(
    run: &Run,
    series: &SeriesSet,
    model: &SensorModel,
) -> Vec<(WorkloadRung, Option<Result<NodeCycle, NoCycle>>)> {
    let mut planner = Planner::new();
    run.rungs
        .iter()
        .filter(|r| r.info.kind == PhaseKind::Workload)
        .map(|r| analyse_rung(&mut planner, run, r, series, model))
        .collect()
}

/// One workload rung `r`: each GPU's iteration ([`find_iteration`]) over
/// the measured window, the rung's period where every GPU has one and they
/// agree within [`MAX_GPU_DISAGREEMENT`], and then its node cycle: the rung
/// given the period and on-fraction, each GPU's iteration starts as its
/// rising edges, composed by [`cycle::compose`] as a duty rung is.
pub fn analyse_rung(
    planner: &mut Planner,
    run: &Run,
    r: &RungWindow,
    series: &SeriesSet,
    model: &SensorModel,
) -> (WorkloadRung, Option<Result<NodeCycle, NoCycle>>) {
    let gpus: Vec<(String, Result<GpuIteration, NoPeriod>)> = run
        .manifest
        .backend
        .gpus
        .iter()
        .map(|g| {
            let found = match model.path(&g.key, Instrument::BufferedW) {
                Some(p) => match (p.window_ms, p.latency_ms) {
                    (Some(w), Some(l)) => find_iteration(
                        planner,
                        &g.key,
                        series.get(&g.key, Instrument::BufferedW),
                        (r.measure_from_ns, r.end_ns),
                        w.max(0.0),
                        l,
                    ),
                    _ => Err(NoPeriod::NoSensorModel),
                },
                None => Err(NoPeriod::NoSensorModel),
            };
            (g.key.clone(), found)
        })
        .collect();
    let found = combine(&gpus);
    let cycle = found.as_ref().ok().map(|f| {
        let edges = starts_index(r.info.id, &gpus);
        cycle::compose(planner, run, &folded_window(r, f), series, &edges, model)
    });
    let rung = WorkloadRung {
        rung_id: r.info.id,
        label: r.info.label.clone(),
        gpus,
        found,
    };
    (rung, cycle)
}

/// The rung's period from its GPUs' iterations, or why there is none.
fn combine(gpus: &[(String, Result<GpuIteration, NoPeriod>)]) -> Result<FoundPeriod, String> {
    if gpus.is_empty() {
        return Err("the run has no GPUs".into());
    }
    let missing: Vec<String> = gpus
        .iter()
        .filter_map(|(g, r)| r.as_ref().err().map(|e| format!("{g}: {e}")))
        .collect();
    let its: Vec<&GpuIteration> = gpus.iter().filter_map(|(_, r)| r.as_ref().ok()).collect();
    if !missing.is_empty() {
        let seen: Vec<String> = its
            .iter()
            .map(|i| format!("{} {:.1} ms", i.gpu, i.period_ms))
            .collect();
        let seen = if seen.is_empty() {
            String::new()
        } else {
            format!(" (a period on {})", seen.join(", "))
        };
        return Err(format!("{}{seen}", missing.join("; ")));
    }
    let periods: Vec<f64> = its.iter().map(|i| i.period_ms).collect();
    let (lo, hi) = periods
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(*p), b.max(*p))
        });
    let weights: Vec<f64> = its
        .iter()
        .map(|i| 1.0 / i.period_ci95_ms.max(1e-9).powi(2))
        .collect();
    let period_ms = its
        .iter()
        .zip(&weights)
        .map(|(i, w)| i.period_ms * w)
        .sum::<f64>()
        / weights.iter().sum::<f64>();
    if hi - lo > MAX_GPU_DISAGREEMENT * period_ms {
        return Err(format!(
            "the GPUs run different periods ({}): the node is not folded on one",
            its.iter()
                .map(|i| format!("{} {:.1} ms", i.gpu, i.period_ms))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let med = |f: fn(&GpuIteration) -> f64| {
        median(&its.iter().map(|i| f(i)).collect::<Vec<_>>()).unwrap_or(f64::NAN)
    };
    let ci = median_high(&its.iter().map(|i| i.period_ci95_ms).collect::<Vec<_>>());
    Ok(FoundPeriod {
        period_ms,
        period_ci95_ms: ci.unwrap_or(f64::NAN).max(0.5 * (hi - lo)),
        jitter_ms: med(|i| i.jitter_ms),
        interval_sd_ms: med(|i| i.interval_sd_ms),
        cycles: its.iter().map(|i| i.cycles).min().unwrap_or(0),
        on_fraction: its.iter().map(|i| i.on_fraction).sum::<f64>() / its.len() as f64,
        lag_ms: med(|i| i.lag_ms),
        spacing_ms: its.iter().map(|i| i.spacing_ms).fold(0.0, f64::max),
    })
}

/// The on-fraction the fold is given: within (0, 1), as a duty is.
const DUTY_BOUNDS: (f64, f64) = (0.02, 0.98);

/// Rung `r` as the fold reads it: a workload rung given the found period
/// and, as its duty, the on-fraction.
fn folded_window(r: &RungWindow, f: &FoundPeriod) -> RungWindow {
    let mut w = r.clone();
    w.info.period_ms = Some(f.period_ms.into());
    w.info.nominal_period_ms = None;
    let duty = if f.on_fraction.is_finite() {
        f.on_fraction
    } else {
        0.5
    };
    w.info.duty = duty.clamp(DUTY_BOUNDS.0, DUTY_BOUNDS.1);
    w
}

/// Every GPU's iteration starts as the rising edges of rung `id`.
fn starts_index(id: u32, gpus: &[(String, Result<GpuIteration, NoPeriod>)]) -> EdgeIndex {
    EdgeIndex::of(gpus.iter().filter_map(|(g, r)| {
        r.as_ref()
            .ok()
            .map(|i| ((id, g.clone(), EdgeKind::Rise), i.starts_ns.clone()))
    }))
}
