//! One GPU's samples of one rung folded on its own rising edges, and the
//! cycle those samples support: phase bins, gaps filled without crossing
//! an edge, the sample window undone where the samples resolve it.
//!
//! The fold keeps every sample's cycle (its block), so the same cycle can
//! be rebuilt from a resampled set of whole cycles ([`super::interval`]).

use super::{MAX_HARMONICS, MIN_GAIN, MIN_HARMONICS, SAMPLES_PER_BIN};
use crate::fft::Complex64;
use crate::fft::Planner;
use crate::sensor::fold::sinc;
use powerlab_core::units::PeriodMs;
use powerlab_core::units::ms_to_ns;
use powerlab_rundir::PhaseKind;
use powerlab_samples::load::RungWindow;
use powerlab_samples::stats::median;

/// A harmonic the window passes at [`MIN_GAIN`] or more is divided by its
/// gain, but by no less than this: the lift is at most 1/0.85 (18 %).
/// Lifting every harmonic the bins hold by up to 18 %, those the window
/// all but removes included, raised every edge's own ringing into the
/// peak and the percentiles (a real 2 × H200 100 ms rung's p1 fell 48 W
/// below the sum of its GPUs' lowest samples); lifting none below 0.85
/// left a near-staggered pair's spread at 50 ms 16 % short (proptest).
const LIFT_FLOOR: f64 = 0.85;

/// One sample of the window, folded where it can be placed.
#[derive(Debug, Clone, Copy)]
pub(super) struct Point {
    /// Phase after the GPU's rising edge, [0, 1); NaN for a sample that
    /// cannot be placed (before the first rise, or after a missing one).
    pub phase: f64,
    /// Reading, W.
    pub value: f64,
    /// The whole cycle of the measured window it falls in (0-based).
    pub block: usize,
    /// Inside the window's whole cycles (the mean is taken over these).
    pub whole: bool,
    /// The time the sample stands for, ns: half the gap to the sample
    /// before it plus half the gap to the one after it (trapezoid), each
    /// half at most [`MAX_GAP_SPACINGS`] × the window's median spacing.
    /// NVML samples faster at high power (H100: 20.1–20.4 ms apart under
    /// load, 20.6–21.6 ms at low power), so a mean that counts every
    /// sample once leans high (a real idle-wait job: +0.6 % against its
    /// energy counter, −0.003 % weighted by time).
    pub span_ns: f64,
}

/// A half-gap longer than this many median spacings (samples lost) counts
/// as this many: a sample does not stand for a stretch nobody sampled.
pub(super) const MAX_GAP_SPACINGS: f64 = 1.5;

/// The time each of `samples[lo..hi]` stands for, ns (see
/// [`Point::span_ns`]): its neighbours outside the range count too.
pub(crate) fn sample_spans_ns(samples: &[(i64, f64)], lo: usize, hi: usize) -> Vec<f64> {
    let gaps: Vec<f64> = samples[lo.saturating_sub(1)..(hi + 1).min(samples.len())]
        .windows(2)
        .map(|w| (w[1].0 - w[0].0) as f64)
        .filter(|g| *g > 0.0)
        .collect();
    let cap = median(&gaps).unwrap_or(0.0) * MAX_GAP_SPACINGS;
    let half = |a: usize, b: usize| {
        samples
            .get(a)
            .zip(samples.get(b))
            .map(|(x, y)| ((y.0 - x.0) as f64).clamp(0.0, 2.0 * cap) / 2.0)
    };
    (lo..hi)
        .map(|k| {
            let before = k.checked_sub(1).and_then(|j| half(j, k));
            let after = half(k, k + 1);
            match (before, after) {
                (Some(b), Some(a)) => b + a,
                (Some(x), None) | (None, Some(x)) => 2.0 * x,
                (None, None) => 1.0,
            }
        })
        .collect()
}

/// One GPU's fold of one rung, and what its samples resolve.
#[derive(Debug, Clone)]
pub(super) struct GpuFold {
    /// GPU key.
    pub gpu: String,
    /// The window's samples, folded where they can be placed.
    pub points: Vec<Point>,
    /// Phase bins.
    pub bins: usize,
    /// Share of bins holding at least one sample.
    pub coverage: f64,
    /// Harmonics the sampled phases resolve (the widest unseen gap).
    pub k_phase: usize,
    /// Harmonics the averaging window passes at ≥ [`MIN_GAIN`].
    pub k_window: usize,
    /// Noise each harmonic carries (the samples' scatter within a bin), W².
    pub harmonic_var: f64,
    /// The bin the load falls in.
    pub fall_bin: usize,
    /// The window's gain at each harmonic the bins hold.
    pub gains: Vec<f64>,
    /// Median phase of the GPU's rising edges after the rung's epoch, ns.
    pub offset_ns: i64,
    /// The placed points' bins and readings by block, in the points'
    /// order (laid once: the bootstrap bins them again 200 times).
    placed: ByBlock<Placed>,
    /// The points in the window's whole cycles by block, in order: their
    /// readings and the time each stands for (see [`GpuFold::mean`]).
    whole: ByBlock<Whole>,
}

/// A placed point as [`binned`] reads it.
#[derive(Debug, Clone, Copy)]
struct Placed {
    bin: u32,
    value: f64,
}

/// A point of the window's whole cycles as [`GpuFold::mean`] reads it.
#[derive(Debug, Clone, Copy)]
struct Whole {
    value: f64,
    span_ns: f64,
}

/// Items in their order, cut into runs of consecutive items of one block
/// (a window's points run block after block): a resampled set of cycles
/// reads each block's weight once per run, not once per point, and one
/// replicate alone ([`ByBlock::each`]) passes over a block drawn no time
/// (about a third of them) whole.
#[derive(Debug, Clone)]
struct ByBlock<T> {
    items: Vec<T>,
    /// Each run's block and the end of its items.
    runs: Vec<(usize, usize)>,
}

impl<T> ByBlock<T> {
    /// `items` with their blocks, in order.
    fn new(items: impl Iterator<Item = (usize, T)>) -> ByBlock<T> {
        let (mut out, mut runs) = (Vec::new(), Vec::<(usize, usize)>::new());
        for (block, item) in items {
            out.push(item);
            match runs.last_mut() {
                Some((b, end)) if *b == block => *end = out.len(),
                _ => runs.push((block, out.len())),
            }
        }
        ByBlock { items: out, runs }
    }

    /// `f` of each item, in order, with its block's weight in `weights`
    /// (1 for every block without): items of a block of weight 0 or less
    /// are passed over.
    fn each(&self, weights: Option<&[f64]>, mut f: impl FnMut(f64, &T)) {
        let mut start = 0;
        for &(block, end) in &self.runs {
            let w = weights.map_or(1.0, |w| w[block]);
            if w > 0.0 {
                self.items[start..end].iter().for_each(|x| f(w, x));
            }
            start = end;
        }
    }
}

/// Folds one GPU's buffered `samples` of rung `r` on its `rises`. Each
/// sample stands for the middle of its averaging window (timestamp − lag −
/// window/2). None when fewer than 4 × [`MIN_HARMONICS`] samples fold.
pub(super) fn fold_gpu(
    samples: &[(i64, f64)],
    rises: &[i64],
    r: &RungWindow,
    gpu: &str,
    window_ms: f64,
    lag_ms: f64,
) -> Option<GpuFold> {
    let period_ms = r.info.period_ms.map(PeriodMs::ms)?;
    let p = ms_to_ns(period_ms);
    if p <= 0 || rises.is_empty() {
        return None;
    }
    let centre = ms_to_ns(lag_ms + window_ms / 2.0);
    let lo = samples.partition_point(|s| s.0 < r.measure_from_ns + centre);
    let hi = samples.partition_point(|s| s.0 < r.end_ns + centre).max(lo);
    let whole_end = r.measure_from_ns + ((r.end_ns - r.measure_from_ns) / p).max(1) * p;
    let blocks = ((r.end_ns - r.measure_from_ns + p - 1) / p).max(1) as usize;
    let mut points = Vec::with_capacity(hi - lo);
    let spans = sample_spans_ns(samples, lo, hi);
    for (&(t, v), &span_ns) in samples[lo..hi].iter().zip(&spans) {
        let tc = t - centre;
        let k = rises.partition_point(|x| *x <= tc);
        let dt = k.checked_sub(1).map(|k| tc - rises[k]);
        // A sample before the first rise, or after a missing one, cannot be
        // placed in the cycle; it still counts towards the mean.
        let phase = dt
            .filter(|dt| (0..p).contains(dt))
            .map(|dt| dt as f64 / p as f64);
        points.push(Point {
            phase: phase.unwrap_or(f64::NAN),
            value: v,
            block: (((tc - r.measure_from_ns).max(0) / p) as usize).min(blocks - 1),
            whole: tc < whole_end,
            span_ns,
        });
    }
    let n = points.iter().filter(|p| p.placed()).count();
    if n < 4 * MIN_HARMONICS {
        return None;
    }
    // Bins: as fine as 0.5 ms, with a few samples in each on average.
    let bins = ((period_ms / 0.5).round() as usize)
        .min(n / SAMPLES_PER_BIN)
        .clamp(2 * MIN_HARMONICS + 2, 2 * MAX_HARMONICS + 2);
    let placed = placed_of(&points, bins);
    let (sum, cnt) = binned(&placed, bins, None);
    let coverage = cnt.iter().filter(|c| **c > 0.0).count() as f64 / bins as f64;
    let k_phase = phase_harmonics(&cnt);
    let k_window = (1..=MAX_HARMONICS)
        .take_while(|&k| sinc(k as f64 * window_ms / period_ms).abs() >= MIN_GAIN)
        .count();
    let gains = (0..bins / 2)
        .map(|k| sinc(k as f64 * window_ms / period_ms))
        .collect();
    Some(GpuFold {
        gpu: gpu.to_string(),
        harmonic_var: if r.info.kind == PhaseKind::Workload {
            harmonic_var_per_bin(&points, &sum, &cnt)
        } else {
            harmonic_var(&points, &sum, &cnt)
        },
        bins,
        coverage,
        k_phase,
        k_window,
        fall_bin: ((r.info.duty * bins as f64).round() as usize).clamp(1, bins - 1),
        gains,
        offset_ns: offset_of(rises, r.epoch_ns, p),
        whole: ByBlock::new(points.iter().filter(|p| p.whole).map(|p| {
            let w = Whole {
                value: p.value,
                span_ns: p.span_ns,
            };
            (p.block, w)
        })),
        placed,
        points,
    })
}

/// The placed `points`' bins (of `bins`) and readings by block, in order.
fn placed_of(points: &[Point], bins: usize) -> ByBlock<Placed> {
    ByBlock::new(points.iter().filter(|p| p.placed()).map(|p| {
        let placed = Placed {
            bin: bin_of(p.phase, bins) as u32,
            value: p.value,
        };
        (p.block, placed)
    }))
}

/// Sums and (weighted) counts per phase bin. `weights` holds a weight per
/// block (a resampled set of whole cycles); None weighs every sample 1.
fn binned(placed: &ByBlock<Placed>, bins: usize, weights: Option<&[f64]>) -> (Vec<f64>, Vec<f64>) {
    let mut sum = vec![0.0; bins];
    let mut cnt = vec![0.0; bins];
    placed.each(weights, |w, p| {
        let b = p.bin as usize;
        sum[b] += w * p.value;
        cnt[b] += w;
    });
    (sum, cnt)
}

fn bin_of(phase: f64, bins: usize) -> usize {
    ((phase * bins as f64) as usize).min(bins - 1)
}

/// A harmonic k has k cycles per period: seeing it needs phase steps
/// shorter than half of 1/k. The widest circular run of empty bins sets it.
fn phase_harmonics(cnt: &[f64]) -> usize {
    let nb = cnt.len();
    let known: Vec<usize> = (0..nb).filter(|&b| cnt[b] > 0.0).collect();
    let mut gap_bins = 0usize;
    for (i, &b) in known.iter().enumerate() {
        let next = known[(i + 1) % known.len()];
        let empty = (next + nb - b - 1) % nb;
        gap_bins = gap_bins.max(if known.len() == 1 { nb - 1 } else { empty });
    }
    let gap_frac = (gap_bins + 1) as f64 / nb as f64;
    ((0.5 / gap_frac).floor() as usize).min(nb / 2 - 1)
}

/// The scatter of samples about their bin's mean (instrument noise and the
/// board's cycle-to-cycle variation): the noise each harmonic carries.
/// Taken robustly (median absolute deviation), so the few bins that
/// straddle an edge, where the power itself moves within the bin, do not
/// pass for noise.
fn harmonic_var(points: &[Point], sum: &[f64], cnt: &[f64]) -> f64 {
    let nb = cnt.len();
    let dev: Vec<f64> = points
        .iter()
        .filter(|p| p.placed())
        .map(|p| (bin_of(p.phase, nb), p))
        .filter(|(b, _)| cnt[*b] > 1.0)
        // A deviation from a mean of n samples that include it has a
        // standard deviation of σ·√(1 − 1/n): undone, so that sparse bins
        // do not pass for quiet ones.
        .map(|(b, p)| (p.value - sum[b] / cnt[b]).abs() / (1.0 - 1.0 / cnt[b]).sqrt())
        .collect();
    let sigma = if dev.len() > 10 {
        1.4826 * median(&dev).unwrap_or(0.0)
    } else {
        0.0
    };
    sigma
        * sigma
        * cnt
            .iter()
            .filter(|c| **c > 0.0)
            .map(|c| 1.0 / c)
            .sum::<f64>()
        / (nb * nb) as f64
}

/// The noise each harmonic carries where the cycle itself varies from one
/// cycle to the next (a workload rung: each iteration's compute pass is
/// as much longer or shorter as its start is late or early, so the
/// samples about its fall are now on, now off): every bin's own scatter
/// about its mean, not one robust scatter for all. The robust one left
/// that variation unshrunk, and its ripple set the fastest fall (+11 %
/// against the simulated node's truth). A bin with a single sample takes
/// the robust scatter.
fn harmonic_var_per_bin(points: &[Point], sum: &[f64], cnt: &[f64]) -> f64 {
    let nb = cnt.len();
    let mut ss = vec![0.0; nb];
    for p in points.iter().filter(|p| p.placed()) {
        let b = bin_of(p.phase, nb);
        ss[b] += (p.value - sum[b] / cnt[b]).powi(2);
    }
    let robust = harmonic_var(points, sum, cnt) * (nb * nb) as f64;
    let robust_sigma2 = robust
        / cnt
            .iter()
            .filter(|c| **c > 0.0)
            .map(|c| 1.0 / c)
            .sum::<f64>()
            .max(f64::MIN_POSITIVE);
    let total: f64 = (0..nb)
        .filter(|&b| cnt[b] > 0.0)
        .map(|b| {
            let var = if cnt[b] > 1.0 {
                ss[b] / (cnt[b] - 1.0)
            } else {
                robust_sigma2
            };
            var / cnt[b]
        })
        .sum();
    total / (nb * nb) as f64
}

impl Point {
    fn placed(&self) -> bool {
        !self.phase.is_nan()
    }
}

impl GpuFold {
    /// The GPU's cycle at the centres of its phase bins (bin j at phase
    /// (j + ½)/bins after its rising edge), W. `weights` resamples whole
    /// cycles (see [`binned`]).
    ///
    /// Empty bins are filled by circular linear interpolation, with one
    /// piece of physics: until the load switches (phase 0 and the duty
    /// fraction), the power holds its level, so the bin just before each
    /// edge is a knot at the last level seen before it. Every harmonic the
    /// bins hold is kept, so the cycle is the folded data itself and a
    /// sparse fold cannot ring (a series cut short at the harmonics the
    /// phases resolve rang 67 W below a real 2 × H200 node's floor).
    /// Harmonics no stronger than the noise are shrunk (Wiener); those the
    /// phases resolve and the window passes at [`MIN_GAIN`] or more are
    /// divided by its gain, lifted by at most 1/0.85 (those it all but
    /// removes are left: lifting them rang below a real node's floor),
    /// unless `restore` is false. The mean is the
    /// samples' own over the window's whole cycles.
    /// The fold as it is: each bin the mean of the samples in it, empty
    /// bins filled without crossing an edge; no harmonic is cut or lifted
    /// (what a level held over milliseconds is read from: a cycle cut to
    /// its harmonics ripples by several watts along a flat stretch).
    pub(super) fn plain_means(&self) -> Vec<f64> {
        let (sum, cnt) = binned(&self.placed, self.bins, None);
        self.filled(&sum, &cnt)
    }

    /// The fold's harmonics (see the struct): the bins' spectrum shrunk
    /// where no stronger than their scatter, and lifted by the window's
    /// gain where `restore`.
    pub(super) fn values(
        &self,
        planner: &mut Planner,
        weights: Option<&[f64]>,
        restore: bool,
    ) -> Vec<f64> {
        let (sum, cnt) = binned(&self.placed, self.bins, weights);
        self.shaped(planner, &sum, &cnt, self.mean(weights), restore)
    }

    /// [`GpuFold::values`] of the bins' sums `sum` and counts `cnt` and
    /// the samples' `mean`, however they were weighed.
    fn shaped(
        &self,
        planner: &mut Planner,
        sum: &[f64],
        cnt: &[f64],
        mean: Option<f64>,
        restore: bool,
    ) -> Vec<f64> {
        let nb = self.bins;
        let filled = self.filled(sum, cnt);
        let mut spec: Vec<Complex64> = filled.iter().map(|v| Complex64::new(*v, 0.0)).collect();
        planner.forward(&mut spec);
        for k in 1..=nb / 2 {
            let c = spec[k] / nb as f64;
            let power = c.norm_sqr();
            let keep = if power > 0.0 {
                power / (power + self.harmonic_var)
            } else {
                1.0
            };
            let gain = self.gains.get(k).copied().unwrap_or(1.0);
            let lift = if restore && k <= self.k_phase && k < nb / 2 && gain >= MIN_GAIN {
                gain.max(LIFT_FLOOR)
            } else {
                1.0
            };
            spec[k] *= keep / lift;
            if k != nb - k {
                spec[nb - k] = spec[k].conj();
            }
        }
        spec[0] = Complex64::new(mean.unwrap_or(spec[0].re / nb as f64) * nb as f64, 0.0);
        planner.inverse(&mut spec);
        spec.iter().map(|c| c.re / nb as f64).collect()
    }

    /// Bin means, empty bins filled (see [`GpuFold::values`]).
    fn filled(&self, sum: &[f64], cnt: &[f64]) -> Vec<f64> {
        let nb = self.bins;
        let mut level: Vec<Option<f64>> = (0..nb)
            .map(|b| (cnt[b] > 0.0).then(|| sum[b] / cnt[b]))
            .collect();
        for knot in [nb - 1, self.fall_bin - 1] {
            if level[knot].is_none() {
                level[knot] = (1..nb).map(|d| (knot + nb - d) % nb).find_map(|b| level[b]);
            }
        }
        circular_linear(&level)
    }

    /// Mean of the samples in the window's whole cycles (a partial one
    /// would weigh its phases twice), each weighted by the time it stands
    /// for ([`Point::span_ns`]: the energy they show over the time they
    /// cover), and per block. A block drawn no time adds nothing (its
    /// readings are finite: the raw files' check refuses any other).
    fn mean(&self, weights: Option<&[f64]>) -> Option<f64> {
        let (mut s, mut n) = (0.0, 0.0);
        self.whole.each(weights, |w, p| {
            let w = w * p.span_ns;
            s += w * p.value;
            n += w;
        });
        (n > 0.0).then(|| s / n)
    }

    /// The lowest and highest of its bins' sample means (every sample
    /// weighed once), W: what the samples themselves show of the cycle.
    pub(super) fn sample_range(&self) -> (f64, f64) {
        let (sum, cnt) = binned(&self.placed, self.bins, None);
        sum.iter()
            .zip(&cnt)
            .filter(|(_, c)| **c > 0.0)
            .map(|(s, c)| s / c)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            })
    }

    /// Samples folded into the cycle.
    pub(super) fn folded(&self) -> usize {
        self.placed.items.len()
    }

    /// Blocks (whole cycles of the window, the last possibly partial).
    pub(super) fn blocks(&self) -> usize {
        self.points.iter().map(|p| p.block + 1).max().unwrap_or(0)
    }
}

/// Median phase of `rises` after `epoch` within period `p` (circular).
pub(super) fn offset_of(rises: &[i64], epoch: i64, p: i64) -> i64 {
    let Some(first) = rises.first() else { return 0 };
    let r0 = (first - epoch).rem_euclid(p);
    let d: Vec<i64> = rises
        .iter()
        .map(|r| (r - epoch - r0 + p / 2).rem_euclid(p) - p / 2)
        .collect();
    (r0 + powerlab_samples::stats::median_high_ns(&d).unwrap_or(0)).rem_euclid(p)
}

/// A GPU's cycle (bin centres, phase 0 at its rise) read at phase `x`
/// (fraction of a period, any real) by circular linear interpolation.
pub(super) fn at_phase(values: &[f64], x: f64) -> f64 {
    Tap::at(values.len(), x).read(values)
}

/// Where [`at_phase`] reads a cycle of `bins` bins at one phase: the bins
/// either side and their weights.
#[derive(Debug, Clone, Copy)]
pub(super) struct Tap {
    i: usize,
    next: usize,
    w_i: f64,
    w_next: f64,
}

impl Tap {
    /// The tap at phase `x` (fraction of a period, any real).
    pub(super) fn at(bins: usize, x: f64) -> Tap {
        let u = (x.rem_euclid(1.0) * bins as f64 - 0.5).rem_euclid(bins as f64);
        let i = (u.floor() as usize).min(bins - 1);
        let f = u - i as f64;
        Tap {
            i,
            next: (i + 1) % bins,
            w_i: 1.0 - f,
            w_next: f,
        }
    }

    /// The cycle `values` (one per bin) read at this tap.
    pub(super) fn read(&self, values: &[f64]) -> f64 {
        values[self.i] * self.w_i + values[self.next] * self.w_next
    }
}

mod fill;
mod resample;

use fill::circular_linear;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_circular_medians() {
        let p = 100;
        assert_eq!(offset_of(&[1000 + 99, 1100 + 1, 1200], 1000, p), 0);
        assert_eq!(offset_of(&[1030, 1131, 1229], 1000, p), 30);
    }

    #[test]
    fn a_cycle_read_between_bins_is_interpolated_circularly() {
        let v = [0.0, 10.0, 20.0, 30.0];
        assert!((at_phase(&v, 0.125) - 0.0).abs() < 1e-12);
        assert!((at_phase(&v, 0.25) - 5.0).abs() < 1e-12);
        // Between the last bin's centre and the first's (across phase 0).
        assert!((at_phase(&v, 0.0) - 15.0).abs() < 1e-12);
        assert!((at_phase(&v, 1.25) - 5.0).abs() < 1e-12);
    }
}
