//! Node truth for periodic rungs: the node's cycle composed from every
//! GPU's own folded cycle.
//!
//! Summing each GPU's latest reading on a common grid (sample and hold)
//! pairs one GPU's "on" reading with another's reading from before its
//! fall: once a rung's period is within a few tens of sample intervals it
//! invents peaks and dips the node never drew, and a staggered rung looks
//! several times rougher than it is. So the headline figures of a duty
//! rung come from here instead:
//!
//! 1. each GPU's buffered samples, each placed at the centre of its own
//!    averaging window (timestamp − lag − window/2), are folded on that
//!    GPU's recorded rising edges into one cycle (phase bins);
//! 2. each GPU's cycle is the folded data itself: phase bins, empty bins
//!    filled without crossing an edge, every harmonic the bins hold kept
//!    (a series cut short rings), those no stronger than the scatter of
//!    the samples within a bin shrunk (Wiener), and those the sampled
//!    phases resolve divided by the window's attenuation (a boxcar: sinc)
//!    where that gain is at least 0.85, and lifted by at most 1/0.85 where
//!    it is less; the rung is stated only if the window passes at least
//!    [`MIN_HARMONICS`] harmonics at [`MIN_GAIN`] or more ([`fold`]);
//! 3. the GPUs' cycles are shifted to their measured offsets (the median
//!    phase of their rising edges after the rung's epoch), read at ≤ 0.5 ms
//!    steps by linear interpolation between bin centres, and summed: the
//!    node's cycle;
//! 4. the cycle, laid over the rung's measured window, gives mean, peak,
//!    p1/p10/p90/p99, spread and swing, each with a 95 % interval from a
//!    bootstrap over whole cycles ([`interval`]).
//!
//! A rung whose samples leave part of the cycle unseen (a period locked to
//! the sampling grid: less than [`MIN_COVERAGE`] of the phase bins hold a
//! sample, or the widest unseen gap leaves fewer than [`MIN_HARMONICS`]
//! harmonics), whose window passes fewer than [`MIN_HARMONICS`]
//! harmonics or smears an on- or off-phase shorter than twice its length,
//! whose measured window holds fewer than [`MIN_CYCLES`] cycles or
//! [`MIN_SAMPLES`] samples of a GPU, or whose
//! edge log or raw samples are incomplete, gets no node figures: it gets a
//! verdict that says why.

mod fold;
pub mod interval;

use crate::format::fmt_ms;
use crate::load::{Run, RungWindow};
use crate::sensor::model::SensorModel;
use crate::sensor::series::{EdgeIndex, SeriesSet};
use crate::stats::weighted_quantile_sorted;
use fold::GpuFold;
pub use interval::{Bounds, CycleInterval};
use powerlab_core::units::{ms_to_ns, ns_to_s};
use powerlab_rundir::PhaseKind;
use rustfft::FftPlanner;
use rustfft::num_complex::Complex64;

/// A harmonic is reconstructed only where the window and the bins together
/// still pass at least this share of it: dividing by a smaller gain
/// amplifies noise and any error in the window model.
pub const MIN_GAIN: f64 = 0.6;

/// Fewer harmonics than this cannot describe a duty cycle's shape: such a
/// rung's figures are left empty with a verdict.
pub const MIN_HARMONICS: usize = 4;

/// A stated figure needs at least this share of the cycle's phase bins to
/// hold a sample of every GPU. Detuned rungs of the committed 2 × H200 runs
/// covered 88–100 % (two samples per bin on average: some bins stay empty
/// by chance), and a simulated rung stopped 59 % into its window 72 % (the
/// detuning walks the phases over the whole planned window); periods on
/// the 20 ms sampling grid covered 31–53 %, and their figures (100 ms
/// staggered: 301 W where a fold of the same samples on more phases gives
/// 389 ± 31 W) were not what the node drew.
pub const MIN_COVERAGE: f64 = 0.6;

/// A fold needs at least this many whole cycles in the measured window.
pub const MIN_CYCLES: f64 = 2.0;

/// And at least this many buffered samples of each GPU (3 s of them).
pub const MIN_SAMPLES: usize = 150;

/// Most harmonics used.
const MAX_HARMONICS: usize = 256;

/// Folded samples per bin, on average, at least.
const SAMPLES_PER_BIN: usize = 2;

/// The node's composed cycle of one rung.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeCycle {
    /// Rung id.
    pub rung_id: u32,
    /// The period the GPUs ran, ms.
    pub period_ms: f64,
    /// Harmonics restored to full height (those the window passes at
    /// ≥ [`MIN_GAIN`] and the samples' phases resolve, on every GPU).
    pub harmonics: usize,
    /// Node power over one cycle, phase 0 at the rung's epoch, evenly spaced.
    pub values: Vec<f64>,
    /// Lowest phase coverage of any GPU.
    pub coverage: f64,
    /// Buffered samples folded, all GPUs.
    pub samples: usize,
    /// Each GPU's draw through the settled second half of its on-phase, W.
    pub gpu_on_w: Vec<(String, f64)>,
    /// The node's on−off step: every GPU's settled on level less its
    /// settled off level (the second halves of its phases), summed, W.
    pub step_w: f64,
    /// Node figures, W.
    pub stats: CycleStats,
    /// Their 95 % intervals within the run (None for a rack's sum of node
    /// cycles, or with fewer than two whole cycles).
    pub interval: Option<CycleInterval>,
}

/// Figures of a node cycle.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CycleStats {
    /// Mean, W.
    pub mean_w: f64,
    /// Maximum, W.
    pub peak_w: f64,
    /// Percentiles, W.
    pub p1_w: f64,
    /// 10th percentile.
    pub p10_w: f64,
    /// 90th percentile.
    pub p90_w: f64,
    /// 99th percentile.
    pub p99_w: f64,
}

impl NodeCycle {
    /// Node power at absolute time `t_ns` of a rung whose epoch is `epoch_ns`.
    pub fn at(&self, epoch_ns: i64, t_ns: i64) -> f64 {
        let p = ms_to_ns(self.period_ms);
        if p <= 0 || self.values.is_empty() {
            return f64::NAN;
        }
        let ph = (t_ns - epoch_ns).rem_euclid(p) as f64 / p as f64 * self.values.len() as f64;
        let i = (ph.floor() as usize).min(self.values.len() - 1);
        self.values[i]
    }
}

/// One node's composed cycle of one rung, as handed to the rack.
#[derive(Debug, Clone, PartialEq)]
pub struct CyclePart {
    /// The period the GPUs ran, ms.
    pub period_ms: f64,
    /// Harmonics restored.
    pub harmonics: usize,
    /// Lowest phase coverage of its GPUs.
    pub coverage: f64,
    /// Buffered samples folded.
    pub samples: usize,
    /// Node power over one cycle, phase 0 at the rung's epoch.
    pub values: Vec<f64>,
}

/// Why a rung has no composed cycle.
#[derive(Debug, Clone, PartialEq)]
pub enum NoCycle {
    /// Not a periodic rung (idle, constant, NCCL): not a failure.
    NotPeriodic,
    /// The figures cannot be stated; the text says why.
    Verdict(String),
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
    let p = model.path(gpu, "buffered_w");
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

/// The rising edges a GPU's cycles start at: its recorded rises, and the
/// rung's start when the GPU's wave starts on at the epoch.
pub fn rises_of(edges: &EdgeIndex, r: &RungWindow, gpu_index: usize, gpu: &str) -> Vec<i64> {
    let mut rises: Vec<i64> = edges.get(r.info.id, gpu, "rise").to_vec();
    if r.offsets_ns.get(gpu_index).copied().unwrap_or(0) == 0 {
        rises.extend_from_slice(edges.get(r.info.id, gpu, "start"));
    }
    rises.sort_unstable();
    rises
}

/// Figures of the cycle `values` (evenly spaced over a period of `p` ns,
/// phase 0 at the epoch) laid over the rung's window: `span` ns from
/// `from` ns after the epoch. Whole cycles count each point once; the
/// window's last partial cycle counts the points it covers once more.
fn window_stats(values: &[f64], p: i64, from: i64, span: i64) -> CycleStats {
    let m = values.len();
    let total = ((span as f64 / p as f64) * m as f64).round().max(1.0) as usize;
    let j0 = ((from.rem_euclid(p) as f64 / p as f64) * m as f64).floor() as usize % m;
    let (whole, rest) = (total / m, total % m);
    let mut weighted: Vec<(f64, f64)> = values
        .iter()
        .enumerate()
        .map(|(j, v)| (*v, (whole + usize::from((j + m - j0) % m < rest)) as f64))
        .filter(|x| x.1 > 0.0)
        .collect();
    let weight: f64 = weighted.iter().map(|x| x.1).sum();
    let mean = weighted.iter().map(|x| x.0 * x.1).sum::<f64>() / weight;
    weighted.sort_by(|a, b| a.0.total_cmp(&b.0));
    CycleStats {
        mean_w: mean,
        peak_w: weighted.last().map(|x| x.0).unwrap_or(f64::NAN),
        p1_w: weighted_quantile_sorted(&weighted, 0.01),
        p10_w: weighted_quantile_sorted(&weighted, 0.10),
        p90_w: weighted_quantile_sorted(&weighted, 0.90),
        p99_w: weighted_quantile_sorted(&weighted, 0.99),
    }
}

/// Composes the node cycle of every duty rung of the run.
pub fn compose_all(
    run: &Run,
    series: &SeriesSet,
    edges: &EdgeIndex,
    model: &SensorModel,
) -> Vec<(u32, Result<NodeCycle, NoCycle>)> {
    let mut planner = FftPlanner::new();
    run.rungs
        .iter()
        .map(|r| {
            (
                r.info.id,
                compose(&mut planner, run, r, series, edges, model),
            )
        })
        .collect()
}

/// Composes one rung's node cycle.
///
/// # Errors
///
/// Returns [`NoCycle::NotPeriodic`] for a rung that is not a duty rung with
/// a period and a duty strictly between 0 and 1. Returns
/// [`NoCycle::Verdict`], saying why, when the measured window holds fewer
/// than [`MIN_CYCLES`] cycles; when an on- or off-phase is shorter than
/// twice a GPU's sample window; when a GPU has fewer than 90 % of the rising
/// edges the window needs, half or less of the expected buffered samples,
/// or fewer than [`MIN_SAMPLES`]; when a GPU's cycle cannot be folded; when
/// the run has no GPUs; or when the samples' phase coverage (below
/// [`MIN_COVERAGE`]) or the sample window leave fewer than
/// [`MIN_HARMONICS`] harmonics.
pub fn compose(
    planner: &mut FftPlanner<f64>,
    run: &Run,
    r: &RungWindow,
    series: &SeriesSet,
    edges: &EdgeIndex,
    model: &SensorModel,
) -> Result<NodeCycle, NoCycle> {
    let Some(period_ms) = r
        .info
        .period_ms
        .filter(|_| r.info.kind == PhaseKind::Duty && r.info.duty > 0.0 && r.info.duty < 1.0)
    else {
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
    let values = compose_values(&folds, &gpu_values, p, m);
    let step_w: f64 = gpu_values
        .iter()
        .map(|v| on_level(v, r.info.duty) - off_level(v, r.info.duty))
        .sum();
    let window_ms = widest_window(model, &folds);
    let shortest_ms = r.info.duty.min(1.0 - r.info.duty) * period_ms;
    let at = interval::Layout {
        period_ns: p,
        from_ns: r.measure_from_ns - r.epoch_ns,
        span_ns: span,
        points: m,
        systematic_w: interval::systematic_w(step_w, window_ms, shortest_ms),
    };
    let composed = window_stats(&values, p, at.from_ns, at.span_ns);
    let interval = interval::bootstrap(planner, &folds, at, &composed, u64::from(r.info.id));
    let unbiased = interval
        .as_ref()
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
        });
    let stats = within_samples(unbiased, &supported_range(planner, &folds, &gpu_values));
    let interval = interval.map(|i| i.holding(&stats));
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
        step_w,
        stats,
        interval,
    })
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
    let period_ms = r.info.period_ms.unwrap_or(0.0);
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
    let samples = series.get(gpu, "buffered_w");
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
fn supported_range(
    planner: &mut FftPlanner<f64>,
    folds: &[GpuFold],
    restored: &[Vec<f64>],
) -> (f64, f64) {
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

/// The node's cycle at `m` evenly spaced points (phase 0 at the rung's
/// epoch): every GPU's cycle (`gpu_values`, at its bin centres, phase 0 at
/// its own rise) shifted to its offset, read by linear interpolation
/// (which cannot overshoot between bins) and summed.
fn compose_values(folds: &[GpuFold], gpu_values: &[Vec<f64>], p: i64, m: usize) -> Vec<f64> {
    let mut values = vec![0.0; m];
    for (f, v) in folds.iter().zip(gpu_values) {
        let shift = f.offset_ns as f64 / p as f64;
        for (j, acc) in values.iter_mut().enumerate() {
            *acc += fold::at_phase(v, j as f64 / m as f64 - shift);
        }
    }
    values
}

/// A cycle synthesised from harmonics, evaluated at `m` evenly spaced
/// points instead: its spectrum padded with zeros. Exact for a cycle
/// [`compose`] wrote (its harmonics stop below half its length), so the
/// mean and every harmonic are kept, unlike a linear interpolation.
fn resample(planner: &mut FftPlanner<f64>, values: &[f64], m: usize) -> Vec<f64> {
    let n = values.len();
    let mut spec: Vec<Complex64> = values.iter().map(|v| Complex64::new(*v, 0.0)).collect();
    planner.plan_fft_forward(n).process(&mut spec);
    let mut out = vec![Complex64::new(0.0, 0.0); m];
    let half = (n - 1) / 2;
    out[0] = spec[0] / n as f64;
    for k in 1..=half.min((m - 1) / 2) {
        out[k] = spec[k] / n as f64;
        out[m - k] = spec[n - k] / n as f64;
    }
    planner.plan_fft_inverse(m).process(&mut out);
    out.iter().map(|c| c.re).collect()
}

/// The rack's cycle of one rung: its nodes' composed cycles (each phase 0
/// at the rung's epoch, which every node of a rack shares) added point by
/// point in the order given, then laid over the rung's window `r` as a
/// node cycle is. Cycles of different lengths (nodes that kept different
/// harmonics) are first resampled to the longest through their spectra
/// ([`resample`]). Harmonics and coverage are the lowest of any node, samples the
/// sum. None without parts or when the nodes ran different periods.
pub fn sum_cycles(r: &RungWindow, parts: &[&CyclePart]) -> Option<NodeCycle> {
    let first = parts.first()?;
    if parts
        .iter()
        .any(|c| (c.period_ms - first.period_ms).abs() > 1e-9 || c.values.is_empty())
    {
        return None;
    }
    let m = parts.iter().map(|c| c.values.len()).max()?;
    let mut planner = FftPlanner::new();
    let mut values = vec![0.0; m];
    for c in parts {
        let own;
        let v = if c.values.len() == m {
            &c.values
        } else {
            own = resample(&mut planner, &c.values, m);
            &own
        };
        for (acc, x) in values.iter_mut().zip(v) {
            *acc += x;
        }
    }
    let p = ms_to_ns(first.period_ms);
    let stats = window_stats(
        &values,
        p,
        r.measure_from_ns - r.epoch_ns,
        r.end_ns - r.measure_from_ns,
    );
    Some(NodeCycle {
        rung_id: r.info.id,
        period_ms: first.period_ms,
        harmonics: parts.iter().map(|c| c.harmonics).min().unwrap_or(0),
        values,
        coverage: parts.iter().map(|c| c.coverage).fold(1.0, f64::min),
        samples: parts.iter().map(|c| c.samples).sum(),
        gpu_on_w: Vec::new(),
        step_w: f64::NAN,
        stats,
        interval: None,
    })
}

/// Mean of a GPU's cycle (bin centres, phase 0 at its rise) over the
/// second half of its on-phase, short of the fall: [duty/2, 0.95 duty).
fn on_level(values: &[f64], duty: f64) -> f64 {
    mean_over(values, duty / 2.0, 0.95 * duty)
}

/// The same over the second half of its off-phase, short of the rise.
fn off_level(values: &[f64], duty: f64) -> f64 {
    mean_over(values, (1.0 + duty) / 2.0, 1.0 - 0.05 * (1.0 - duty))
}

/// Mean of a GPU's cycle over phases [a, b), read at 256 steps a cycle.
fn mean_over(values: &[f64], a: f64, b: f64) -> f64 {
    let n = 256.0;
    let (a, b) = ((a * n) as usize, (b * n) as usize);
    let vals: Vec<f64> = (a..b.max(a + 1))
        .map(|j| fold::at_phase(values, j as f64 / n))
        .collect();
    vals.iter().sum::<f64>() / vals.len() as f64
}

/// On-phases this long (ms) settle onto what the board holds under load.
const SETTLED_ON_MS: f64 = 200.0;

/// Duty rungs whose GPUs drew less through a settled on-phase than the
/// run's last sustained (or soak) rung before them held, by more than 5 %:
/// the load did not keep the GPU busy (a host that could not feed it).
/// Returns the verdict per rung.
pub fn short_on_phases(
    run: &Run,
    series: &SeriesSet,
    cycles: &std::collections::HashMap<u32, Result<NodeCycle, NoCycle>>,
) -> std::collections::HashMap<u32, String> {
    let mut out = std::collections::HashMap::new();
    let sustained: Vec<&RungWindow> = run
        .rungs
        .iter()
        .filter(|r| r.info.kind == PhaseKind::Sustained || r.info.kind == PhaseKind::Soak)
        .collect();
    for r in &run.rungs {
        let Some(Ok(c)) = cycles.get(&r.info.id) else {
            continue;
        };
        if c.period_ms * r.info.duty < SETTLED_ON_MS {
            continue;
        }
        let Some(s) = sustained.iter().rev().find(|s| s.epoch_ns < r.epoch_ns) else {
            continue;
        };
        let mut short = Vec::new();
        for (gpu, on) in &c.gpu_on_w {
            let v = series.get(gpu, "buffered_w");
            let lo = v.partition_point(|x| x.0 < s.measure_from_ns);
            let hi = v.partition_point(|x| x.0 < s.end_ns);
            if hi <= lo {
                continue;
            }
            let held = v[lo..hi].iter().map(|x| x.1).sum::<f64>() / (hi - lo) as f64;
            if *on < 0.95 * held {
                short.push(format!("{gpu} {on:.0} W vs {held:.0} W sustained"));
            }
        }
        if !short.is_empty() {
            out.insert(
                r.info.id,
                format!(
                    "on-phase draw short of the sustained level: {}",
                    short.join(", ")
                ),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;

    #[test]
    fn a_resampled_cycle_keeps_its_mean_and_its_values() {
        // A band-limited cycle at 1001 points, evaluated at 1032.
        let f =
            |x: f64| 500.0 + 300.0 * (2.0 * PI * x).sin() + 40.0 * (2.0 * PI * 7.0 * x + 0.3).cos();
        let a: Vec<f64> = (0..1001).map(|j| f(j as f64 / 1001.0)).collect();
        let b = resample(&mut FftPlanner::new(), &a, 1032);
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        assert!(
            (mean(&a) - mean(&b)).abs() < 1e-9,
            "{} vs {}",
            mean(&a),
            mean(&b)
        );
        for (j, v) in b.iter().enumerate() {
            assert!((v - f(j as f64 / 1032.0)).abs() < 1e-9, "point {j}");
        }
    }
}
