//! One rung's node cycle composed from its GPUs' folds ([`compose`]):
//! each GPU's samples checked and folded, the folds checked to resolve the
//! cycle, summed at the GPUs' offsets, and its figures held inside what
//! the samples support.

use super::fold::{self, GpuFold};
use super::on_phase::{off_level, on_level};
use super::{
    CycleStats, MIN_COVERAGE, MIN_CYCLES, MIN_HARMONICS, MIN_SAMPLES, NoCycle, NodeCycle,
    compose_values, interval, rises_of, window_levels,
};
use crate::fft::Planner;
use crate::metric::{self, Bounds, Levels, MetricValue, MetricValues};
use crate::sensor::model::SensorModel;
use powerlab_core::Instrument;
use powerlab_core::units::PeriodMs;
use powerlab_core::units::{ms_to_ns, ns_to_s};
use powerlab_rundir::PhaseKind;
use powerlab_samples::format::fmt_ms;
use powerlab_samples::load::{Run, RungWindow};
use powerlab_samples::series::{EdgeIndex, SeriesSet};

/// Composes one rung's node cycle.
///
/// # Errors
///
/// Returns [`NoCycle::NotPeriodic`] for a rung that is not a duty rung (or
/// a workload rung given the period found in its samples, see
/// [`crate::workload`]) with a period and a duty strictly between 0 and 1. Returns
/// [`NoCycle::Verdict`], saying why, when the measured window holds fewer
/// than [`MIN_CYCLES`] cycles; when an on- or off-phase is shorter than
/// twice a GPU's sample window; when a GPU has fewer than 90 % of the rising
/// edges the window needs, half or less of the expected buffered samples,
/// or fewer than [`MIN_SAMPLES`]; when a GPU's cycle cannot be folded; when
/// the run has no GPUs; or when the samples' phase coverage (below
/// [`MIN_COVERAGE`]) or the sample window leave fewer than
/// [`MIN_HARMONICS`] harmonics.
pub fn compose(
    planner: &mut Planner,
    run: &Run,
    r: &RungWindow,
    series: &SeriesSet,
    edges: &EdgeIndex,
    model: &SensorModel,
) -> Result<NodeCycle, NoCycle> {
    let (period_ms, cycles) = period_and_cycles(r)?;
    let p = ms_to_ns(period_ms);
    let span = r.end_ns - r.measure_from_ns;
    let mut folds = Vec::new();
    for (gi, g) in run.manifest.backend.gpus.iter().enumerate() {
        folds.push(fold_of(r, series, edges, model, gi, &g.key, cycles)?);
    }
    resolved(&folds, period_ms, model)?;
    let m = ((period_ms / 0.5).ceil() as usize)
        .max(folds.iter().map(|f| f.bins).max().unwrap_or(0))
        .clamp(64, 8192);
    let gpu_values: Vec<Vec<f64>> = folds
        .iter()
        .map(|f| f.values(planner, None, true))
        .collect();
    let taps = super::Taps::new(&folds, p, m);
    let values = compose_values(&taps, &gpu_values);
    let step_w: f64 = gpu_values
        .iter()
        .map(|v| on_level(v, r.info.duty) - off_level(v, r.info.duty))
        .sum();
    // A mitigation's ramps may fill both phases, which then never settle
    // (12 kW/s on an H200 at 100 ms: a "step" of −2.5 W between the
    // phases' second halves): what is unresolved is judged against the
    // cycle's whole range.
    let range_step_w = r.info.smoothed().then(|| range_step(&values, step_w));
    let window_ms = widest_window(model, &folds);
    let shortest_ms = r.info.duty.min(1.0 - r.info.duty) * period_ms;
    let at = interval::Layout {
        period_ns: p,
        from_ns: r.measure_from_ns - r.epoch_ns,
        span_ns: span,
        systematic_w: interval::systematic_w(step_w, window_ms, shortest_ms),
    };
    let levels = window_levels(&values, p, at.from_ns, at.span_ns);
    let composed = interval::Estimate {
        stats: CycleStats::of(&levels),
        own: metric::own_bootstrapped()
            .map(|m| m.of(&levels).unwrap_or(f64::NAN))
            .collect(),
    };
    let bootstrap =
        interval::bootstrap(planner, &folds, &taps, at, &composed, u64::from(r.info.id));
    let (interval, own_bounds) = bootstrap.unzip();
    let unbiased = unbiased(composed.stats, interval.as_ref());
    let supported = supported_range(planner, &folds, &gpu_values);
    let stats = within_samples(unbiased, &supported);
    let interval = interval.map(|i| i.holding(&stats));
    let held = Held::new(&stats, supported);
    let metrics = own_metrics(&levels, interval.as_ref(), own_bounds.as_deref(), &held);
    Ok(NodeCycle {
        rung_id: r.info.id,
        period_ms,
        harmonics: folds
            .iter()
            .map(|f| f.k_phase.min(f.k_window))
            .min()
            .unwrap_or(0),
        values,
        coverage: folds.iter().map(|f| f.coverage).fold(1.0, f64::min),
        samples: folds.iter().map(GpuFold::folded).sum(),
        gpu_on_w: folds
            .iter()
            .zip(&gpu_values)
            .map(|(f, v)| (f.gpu.clone(), on_level(v, r.info.duty)))
            .collect(),
        // On the node cycle's grid (as the node's figures are read), phase
        // 0 at the GPU's own rise.
        gpu_cycles: folds
            .iter()
            .zip(&gpu_values)
            .map(|(f, v)| (f.gpu.clone(), own_phase(v, m)))
            .collect(),
        // Levels read over milliseconds (a floor, the off-phase's lowest
        // 10 ms) from the plain fold: the cycle cut to its harmonics
        // ripples along a flat stretch (an H200 ramp rung's idle read
        // 118 W where no sample was under 123 W).
        gpu_levels: folds
            .iter()
            .map(|f| (f.gpu.clone(), own_phase(&f.plain_means(), m)))
            .collect(),
        step_w,
        range_step_w,
        stats,
        interval,
        metrics,
    })
}

/// What a composed cycle's figures are held to: its typed percentiles
/// (already within the samples and in order) and the range the samples
/// support.
struct Held<'a> {
    stats: &'a CycleStats,
    supported: (f64, f64),
}

impl<'a> Held<'a> {
    fn new(stats: &'a CycleStats, supported: (f64, f64)) -> Held<'a> {
        Held { stats, supported }
    }

    /// `v`, a corrected quantile at level `q`, held within the range the
    /// samples support and between the typed percentiles either side of
    /// `q` (a bias correction could cross them: a p95 above the p99).
    fn quantile(&self, q: f64, v: f64) -> f64 {
        let s = self.stats;
        let typed = [
            (0.0, self.supported.0),
            (0.01, s.p1_w),
            (0.10, s.p10_w),
            (0.90, s.p90_w),
            (0.99, s.p99_w),
            (1.0, s.peak_w),
        ];
        // A figure not stated stays so; a typed level not stated bounds
        // nothing.
        if v.is_nan() {
            return v;
        }
        let stated = || typed.iter().filter(|t| !t.1.is_nan());
        let below = stated()
            .rev()
            .find(|(l, _)| *l <= q)
            .map_or(f64::NEG_INFINITY, |t| t.1);
        let above = stated()
            .find(|(l, _)| *l >= q)
            .map_or(f64::INFINITY, |t| t.1);
        v.max(below).min(above.max(below))
    }
}

/// The larger of `step_w` and the composed cycle's whole range (a
/// smoothed rung's step, whose phases may never settle).
fn range_step(values: &[f64], step_w: f64) -> f64 {
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(*v), b.max(*v))
        });
    step_w.max(hi - lo)
}

/// The registry's own metrics of a composed cycle: each read from its
/// `levels`; a bootstrapped one's corrected for its replicates' bias (its
/// bound's centre) where `interval` has enough cycles to correct it, as
/// the percentiles are, with its interval (`bounds`, in
/// [`metric::own_bootstrapped`]'s order) widened to hold it.
fn own_metrics(
    levels: &Levels,
    interval: Option<&interval::CycleInterval>,
    bounds: Option<&[Bounds]>,
    held: &Held<'_>,
) -> MetricValues {
    let debias = interval.is_some_and(|i| i.cycles >= interval::MIN_CYCLES_FOR_BIAS);
    let mut out = MetricValues::default();
    let mut booted = bounds.unwrap_or_default().iter();
    for m in metric::own() {
        let Some(v) = m.of(levels) else { continue };
        let b = m.bootstrapped().then(|| booted.next()).flatten();
        let v = match b {
            Some(b) if debias => b.centre,
            _ => v,
        };
        let v = m.quantile().map_or(v, |q| held.quantile(q, v));
        out.set(
            m.column(),
            MetricValue {
                value: Some(v),
                ci95: b.map(|b| b.holding(v)),
            },
        );
    }
    out
}

/// The rung's period, ms, and how many cycles of it its measured window
/// holds.
///
/// # Errors
///
/// [`NoCycle::NotPeriodic`] for a rung that is not a duty or workload rung
/// with a period and a duty strictly between 0 and 1, and
/// [`NoCycle::Verdict`] for a window of fewer than [`MIN_CYCLES`] cycles.
fn period_and_cycles(r: &RungWindow) -> Result<(f64, f64), NoCycle> {
    let Some(period_ms) = r.info.period_ms.map(PeriodMs::ms).filter(|_| {
        matches!(r.info.kind, PhaseKind::Duty | PhaseKind::Workload)
            && r.info.duty > 0.0
            && r.info.duty < 1.0
    }) else {
        return Err(NoCycle::NotPeriodic);
    };
    let p = ms_to_ns(period_ms);
    let span = r.end_ns - r.measure_from_ns;
    let cycles = span as f64 / p as f64;
    if cycles < MIN_CYCLES {
        return Err(NoCycle::Verdict(format!(
            "too short to fold: the measured window ({:.2} s after settling) holds {cycles:.1} cycles of {} ms, fewer than {MIN_CYCLES}; lengthen duration_s",
            ns_to_s(span),
            fmt_ms(period_ms)
        )));
    }
    Ok((period_ms, cycles))
}

/// The composed cycle's figures with the percentiles taken from the
/// bootstrap `interval`'s centres where it has enough cycles to correct
/// their bias; the mean and the peak stay as composed.
fn unbiased(composed: CycleStats, interval: Option<&interval::CycleInterval>) -> CycleStats {
    interval
        .filter(|i| i.cycles >= interval::MIN_CYCLES_FOR_BIAS)
        .map_or(composed, |i| CycleStats {
            mean_w: composed.mean_w,
            // The largest of the cycle's points: its replicates' bias (a
            // maximum of noisier cycles) took it below p99 in 11 of the 30
            // real 2 × H200 rungs, so it is left as composed.
            peak_w: composed.peak_w,
            p1_w: i.p1.centre,
            p10_w: i.p10.centre,
            p90_w: i.p90.centre,
            p99_w: i.p99.centre,
        })
}

/// A GPU's cycle `v` read at `m` evenly spaced phases, 0 at its rise.
fn own_phase(v: &[f64], m: usize) -> Vec<f64> {
    (0..m)
        .map(|j| fold::at_phase(v, j as f64 / m as f64))
        .collect()
}

/// One GPU's fold of rung `r`, or the verdict that says why it cannot be
/// folded (see [`compose`]).
fn fold_of(
    r: &RungWindow,
    series: &SeriesSet,
    edges: &EdgeIndex,
    model: &SensorModel,
    gi: usize,
    gpu: &str,
    cycles: f64,
) -> Result<GpuFold, NoCycle> {
    let period_ms = r.info.period_ms.map(PeriodMs::ms).unwrap_or(0.0);
    let p = ms_to_ns(period_ms);
    let span = r.end_ns - r.measure_from_ns;
    let Buffered {
        window_ms: w,
        lag_ms: lag,
        update_ms,
    } = buffered_of(model, gpu)?;
    // An on- or off-phase shorter than twice the window is smeared into
    // its neighbours: its peak cannot be recovered.
    let shortest = r.info.duty.min(1.0 - r.info.duty) * period_ms;
    if shortest < 2.0 * w {
        return Err(NoCycle::Verdict(format!(
            "instrument limit: the {} ms {} is shorter than twice the {w:.1} ms sample window",
            fmt_ms(shortest),
            if r.info.duty < 0.5 {
                "on-phase"
            } else {
                "off-phase"
            }
        )));
    }
    let rises = rises_of(edges, r, gi, gpu);
    let in_window = rises
        .iter()
        .filter(|t| **t >= r.measure_from_ns - p && **t < r.end_ns)
        .count();
    if (in_window as f64) < 0.9 * cycles.floor() {
        return Err(NoCycle::Verdict(format!(
            "{gpu}: {in_window} rising edges recorded for a window of {:.0} cycles: the edge log is incomplete, the cycle cannot be folded",
            cycles.floor()
        )));
    }
    let samples = series.get(gpu, Instrument::BufferedW);
    let in_span = samples.partition_point(|x| x.0 < r.end_ns)
        - samples.partition_point(|x| x.0 < r.measure_from_ns);
    let expected = span as f64 / ms_to_ns(update_ms) as f64;
    if (in_span as f64) < 0.5 * expected {
        return Err(NoCycle::Verdict(format!(
            "{gpu}: {in_span} buffered samples in the window, half or less of the ~{expected:.0} expected: the raw file is incomplete"
        )));
    }
    if in_span < MIN_SAMPLES {
        return Err(NoCycle::Verdict(format!(
            "too short to fold: {in_span} buffered samples of {gpu} in the {:.2} s window, fewer than {MIN_SAMPLES}; lengthen duration_s",
            ns_to_s(span)
        )));
    }
    fold::fold_gpu(samples, &rises, r, gpu, w, lag).ok_or_else(|| {
        NoCycle::Verdict(format!(
            "too few buffered samples of {gpu} in the window to fold its cycle"
        ))
    })
}

/// What a GPU's buffered path states, ms: window, lag and update period.
#[derive(Debug, Clone, Copy)]
struct Buffered {
    window_ms: f64,
    lag_ms: f64,
    update_ms: f64,
}

/// The buffered path of a GPU as the model states it; a model that states
/// no window, latency or update period for it gives a verdict, never an
/// assumed value (the sensor model's source checks every GPU has them).
fn buffered_of(model: &SensorModel, gpu: &str) -> Result<Buffered, NoCycle> {
    let p = model.path(gpu, Instrument::BufferedW);
    match p.map(|p| (p.window_ms, p.latency_ms, p.update_period_ms)) {
        Some((Some(w), Some(l), Some(u))) => Ok(Buffered {
            window_ms: w.max(0.0),
            lag_ms: l,
            update_ms: u.max(1.0),
        }),
        _ => Err(NoCycle::Verdict(format!(
            "the sensor model states no buffered_w window, latency and update period for {gpu}: the cycle cannot be folded"
        ))),
    }
}

/// The widest buffered window of the GPUs folded, ms.
fn widest_window(model: &SensorModel, folds: &[GpuFold]) -> f64 {
    folds
        .iter()
        .filter_map(|f| buffered_of(model, &f.gpu).ok())
        .map(|b| b.window_ms)
        .fold(0.0, f64::max)
}

/// Whether the folds resolve the cycle: enough of its phases seen (a
/// period locked to the sampling grid sees only a few), and enough
/// harmonics passed by every GPU's sample window.
fn resolved(folds: &[GpuFold], period_ms: f64, model: &SensorModel) -> Result<(), NoCycle> {
    if folds.is_empty() {
        return Err(NoCycle::Verdict("no GPUs".into()));
    }
    let coverage = folds.iter().map(|f| f.coverage).fold(1.0, f64::min);
    let k_phase = folds.iter().map(|f| f.k_phase).min().unwrap_or(0);
    if k_phase < MIN_HARMONICS || coverage < MIN_COVERAGE {
        return Err(NoCycle::Verdict(format!(
            "phase-locked: the samples cover only {:.0} % of the {} ms cycle (a figure needs {:.0} %): a period on the sampling grid (run it detuned) or a window too short for the detuning to walk the phases (lengthen duration_s)",
            100.0 * coverage,
            fmt_ms(period_ms),
            100.0 * MIN_COVERAGE
        )));
    }
    if folds.iter().map(|f| f.k_window).min().unwrap_or(0) < MIN_HARMONICS {
        let w = widest_window(model, folds);
        return Err(NoCycle::Verdict(format!(
            "instrument limit: the {w:.1} ms sample window passes fewer than {MIN_HARMONICS} harmonics of {} ms",
            fmt_ms(period_ms)
        )));
    }
    Ok(())
}

/// The range of node power the samples support: the sum of every GPU's
/// lowest (highest) bin mean, widened by what the window correction moved
/// its cycle at most (the restored cycle against the same cycle left
/// unrestored), W.
fn supported_range(planner: &mut Planner, folds: &[GpuFold], restored: &[Vec<f64>]) -> (f64, f64) {
    let (mut lo, mut hi) = (0.0, 0.0);
    for (f, v) in folds.iter().zip(restored) {
        let plain = f.values(planner, None, false);
        let moved = v
            .iter()
            .zip(&plain)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        let (l, h) = f.sample_range();
        lo += l - moved;
        hi += h + moved;
    }
    (lo, hi)
}

/// Figures held inside the range the samples support (`range`): no
/// percentile or peak below its floor or above its ceiling. A cycle
/// rebuilt from a few sparse cycles can ring past both; the node never
/// drew beyond them.
fn within_samples(s: CycleStats, (lo, hi): &(f64, f64)) -> CycleStats {
    let clamp = |v: f64| v.max(*lo).min(*hi);
    // In order, as percentiles are: a bias correction could cross two.
    let p1_w = clamp(s.p1_w);
    let p10_w = clamp(s.p10_w).max(p1_w);
    let p90_w = clamp(s.p90_w).max(p10_w);
    let p99_w = clamp(s.p99_w).max(p90_w);
    CycleStats {
        mean_w: s.mean_w,
        peak_w: clamp(s.peak_w).max(p99_w),
        p1_w,
        p10_w,
        p90_w,
        p99_w,
    }
}

#[cfg(test)]
mod held_tests {
    use super::*;

    fn stats() -> CycleStats {
        CycleStats {
            mean_w: 500.0,
            peak_w: 900.0,
            p1_w: 200.0,
            p10_w: 250.0,
            p90_w: 800.0,
            p99_w: 850.0,
        }
    }

    #[test]
    fn a_corrected_quantile_stays_between_the_typed_percentiles_either_side() {
        let s = stats();
        let held = Held::new(&s, (190.0, 905.0));
        // A p95 corrected above the p99 (the defect a p95 entry showed on
        // 15 composed rungs) is held at the p99; one below the p90 at it.
        assert_eq!(held.quantile(0.95, 870.0), 850.0);
        assert_eq!(held.quantile(0.95, 780.0), 800.0);
        assert_eq!(held.quantile(0.95, 830.0), 830.0);
        // Below the p1: within what the samples support.
        assert_eq!(held.quantile(0.005, 150.0), 190.0);
        assert_eq!(held.quantile(0.005, 240.0), 200.0);
        // A typed level itself is its typed figure.
        assert_eq!(held.quantile(0.99, 870.0), 850.0);
        // A figure not stated is not made one; a typed level not stated
        // is passed over for the next one stated.
        assert!(held.quantile(0.95, f64::NAN).is_nan());
        let gap = CycleStats {
            p99_w: f64::NAN,
            ..s
        };
        let held = Held::new(&gap, (190.0, 905.0));
        assert_eq!(held.quantile(0.95, 870.0), 870.0);
        assert_eq!(held.quantile(0.95, 950.0), 900.0);
    }
}
