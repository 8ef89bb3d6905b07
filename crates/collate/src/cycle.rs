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
//! 2. the folded cycle's harmonics, as many as the bins hold and the
//!    sampled phases resolve, are shrunk where they are no stronger than
//!    the scatter of the samples within a bin (Wiener), and divided by the
//!    window's attenuation (a boxcar: sinc) where that gain is at least
//!    0.85, and lifted by at most 1/0.85 where it is less (nothing is cut
//!    off, so nothing rings); the rung is stated only if the window passes
//!    at least [`MIN_HARMONICS`] harmonics at [`MIN_GAIN`] or more;
//! 3. the GPUs' harmonic series are shifted to their measured offsets
//!    (the median phase of their rising edges after the rung's epoch) and
//!    summed: the node's cycle;
//! 4. the cycle, synthesised at ≤ 0.5 ms resolution and laid over the
//!    rung's measured window, gives mean, peak, p1/p10/p90/p99, spread and
//!    swing.
//!
//! A rung whose samples leave part of the cycle unseen (a period locked to
//! the sampling grid), whose window passes fewer than [`MIN_HARMONICS`]
//! harmonics or smears an on- or off-phase shorter than twice its length,
//! whose measured window holds fewer than [`MIN_CYCLES`] cycles or
//! [`MIN_SAMPLES`] samples of a GPU, or whose
//! edge log or raw samples are incomplete, gets no node figures: it gets a
//! verdict that says why.

use crate::format::fmt_ms;
use crate::load::{Run, RungWindow};
use crate::sensor::fold;
use crate::sensor::model::SensorModel;
use crate::sensor::series::{EdgeIndex, SeriesSet};
use crate::stats::{median, median_high_ns, weighted_quantile_sorted};
use rustfft::FftPlanner;
use rustfft::num_complex::Complex64;
use std::f64::consts::PI;

/// A harmonic is reconstructed only where the window and the bins together
/// still pass at least this share of it: dividing by a smaller gain
/// amplifies noise and any error in the window model.
pub const MIN_GAIN: f64 = 0.6;

/// A harmonic is lifted by at most 1/LIFT_FLOOR (18 %): more lifts the
/// reconstruction's own errors at the edges into the peak and the spread
/// (seen as an upward bias of a staggered node's spread on the simulated node).
const LIFT_FLOOR: f64 = 0.85;

/// Fewer harmonics than this cannot describe a duty cycle's shape: such a
/// rung's figures are left empty with a verdict.
pub const MIN_HARMONICS: usize = 4;

/// A fold needs at least this many whole cycles in the measured window.
pub const MIN_CYCLES: f64 = 2.0;

/// And at least this many buffered samples of each GPU (3 s of them).
pub const MIN_SAMPLES: usize = 150;

/// Most harmonics used.
const MAX_HARMONICS: usize = 256;

/// Folded samples per bin, on average, at least.
const SAMPLES_PER_BIN: usize = 2;

/// One GPU's cycle.
#[derive(Debug, Clone)]
pub struct GpuCycle {
    /// GPU key.
    pub gpu: String,
    /// Complex Fourier coefficients c_0..=c_K of the board's power over one
    /// cycle, phase 0 at the GPU's own rising edge (c_0 is the mean, W).
    pub harmonics: Vec<Complex64>,
    /// Median phase of the GPU's rising edges after the rung's epoch, ns.
    pub offset_ns: i64,
    /// Samples folded.
    pub samples: usize,
    /// Share of phase bins holding at least one sample.
    pub coverage: f64,
    /// Harmonics the phase coverage allows.
    pub k_phase: usize,
    /// Harmonics the averaging window (and the bins) allow.
    pub k_window: usize,
}

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
    /// Node figures, W.
    pub stats: CycleStats,
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
        let p = (self.period_ms * 1e6).round() as i64;
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

/// The buffered path's window and lag of a GPU, ms.
fn window_of(model: &SensorModel, gpu: &str) -> (f64, f64) {
    let p = model.path(gpu, "buffered_w");
    let w = p
        .and_then(|p| p.window_ms.or(p.update_period_ms))
        .unwrap_or(20.0)
        .max(0.0);
    let lag = p.and_then(|p| p.latency_ms).unwrap_or(0.0);
    (w, lag)
}

fn sinc(x: f64) -> f64 {
    fold::sinc(x)
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

/// Median phase of `rises` after `epoch` within period `p` (circular).
fn offset_of(rises: &[i64], epoch: i64, p: i64) -> i64 {
    let Some(first) = rises.first() else { return 0 };
    let r0 = (first - epoch).rem_euclid(p);
    let d: Vec<i64> = rises
        .iter()
        .map(|r| (r - epoch - r0 + p / 2).rem_euclid(p) - p / 2)
        .collect();
    (r0 + median_high_ns(&d).unwrap_or(0)).rem_euclid(p)
}

/// Folds and decomposes one GPU's samples of one rung.
fn gpu_cycle(
    planner: &mut FftPlanner<f64>,
    samples: &[(i64, f64)],
    rises: &[i64],
    r: &RungWindow,
    gpu: &str,
    window_ms: f64,
    lag_ms: f64,
) -> Option<GpuCycle> {
    let period_ms = r.info.period_ms?;
    let duty = r.info.duty;
    let p = (period_ms * 1e6).round() as i64;
    if p <= 0 || rises.is_empty() {
        return None;
    }
    // Each sample stands for the middle of its averaging window.
    let centre = ((lag_ms + window_ms / 2.0) * 1e6).round() as i64;
    let lo = samples.partition_point(|s| s.0 < r.measure_from_ns + centre);
    let hi = samples.partition_point(|s| s.0 < r.end_ns + centre).max(lo);
    let mut folded: Vec<(f64, f64)> = Vec::with_capacity(hi - lo);
    for &(t, v) in &samples[lo..hi] {
        let tc = t - centre;
        let k = rises.partition_point(|x| *x <= tc);
        if k == 0 {
            continue;
        }
        let dt = tc - rises[k - 1];
        if dt < 0 || dt >= p {
            // A missing rising edge: the sample cannot be placed.
            continue;
        }
        folded.push((dt as f64 / p as f64, v));
    }
    let n = folded.len();
    if n < 4 * MIN_HARMONICS {
        return None;
    }
    // Bins: as fine as 0.5 ms, with a few samples in each on average.
    let nb = ((period_ms / 0.5).round() as usize)
        .min(n / SAMPLES_PER_BIN)
        .clamp(2 * MIN_HARMONICS + 2, 2 * MAX_HARMONICS + 2);
    let mut sum = vec![0.0; nb];
    let mut cnt = vec![0usize; nb];
    let bin_of = |ph: f64| ((ph * nb as f64) as usize).min(nb - 1);
    for (ph, v) in &folded {
        let b = bin_of(*ph);
        sum[b] += v;
        cnt[b] += 1;
    }
    // The scatter of samples about their bin's mean (instrument noise and
    // the board's cycle-to-cycle variation): the noise each harmonic
    // carries. Taken robustly (median absolute deviation), so the few bins
    // that straddle an edge, where the power itself moves within the bin,
    // do not pass for noise.
    let dev: Vec<f64> = folded
        .iter()
        .filter(|(ph, _)| cnt[bin_of(*ph)] > 1)
        .map(|(ph, v)| (v - sum[bin_of(*ph)] / cnt[bin_of(*ph)] as f64).abs())
        .collect();
    let sigma = if dev.len() > 10 {
        1.4826 * median(&dev).unwrap_or(0.0)
    } else {
        0.0
    };
    let harmonic_var = sigma
        * sigma
        * (0..nb)
            .filter(|&b| cnt[b] > 0)
            .map(|b| 1.0 / cnt[b] as f64)
            .sum::<f64>()
        / (nb * nb) as f64;
    let known: Vec<usize> = (0..nb).filter(|&b| cnt[b] > 0).collect();
    let coverage = known.len() as f64 / nb as f64;
    // Longest circular run of empty bins: the widest unseen part of the cycle.
    let mut gap_bins = 0usize;
    for (i, &b) in known.iter().enumerate() {
        let next = known[(i + 1) % known.len()];
        let empty = (next + nb - b - 1) % nb;
        gap_bins = gap_bins.max(if known.len() == 1 { nb - 1 } else { empty });
    }
    let gap_frac = (gap_bins + 1) as f64 / nb as f64;
    // A harmonic k has k cycles per period: seeing it needs phase steps
    // shorter than half of 1/k.
    let k_phase = ((0.5 / gap_frac).floor() as usize).min(nb / 2 - 1);
    let k_window = (1..=MAX_HARMONICS)
        .take_while(|&k| sinc(k as f64 * window_ms / period_ms).abs() >= MIN_GAIN)
        .count();
    // Empty bins are filled by circular linear interpolation, with one
    // piece of physics: until the load switches (the recorded edges, at
    // phase 0 and at the duty fraction), the power holds its level, so the
    // bin just before each edge is a knot at the last level seen before it.
    // Without it a sparse fold would ramp across the edge and put it in the
    // wrong place.
    let mut level: Vec<Option<f64>> = (0..nb)
        .map(|b| (cnt[b] > 0).then(|| sum[b] / cnt[b] as f64))
        .collect();
    let fall_bin = ((duty * nb as f64).round() as usize).clamp(1, nb - 1);
    for knot in [nb - 1, fall_bin - 1] {
        if level[knot].is_none() {
            let before = (1..nb).map(|d| (knot + nb - d) % nb).find_map(|b| level[b]);
            level[knot] = before;
        }
    }
    let knots: Vec<usize> = (0..nb).filter(|&b| level[b].is_some()).collect();
    let mut y = vec![0.0; nb];
    for (i, &b) in knots.iter().enumerate() {
        let next = knots[(i + 1) % knots.len()];
        let span = (next + nb - b) % nb;
        let (va, vb) = (level[b].unwrap_or(0.0), level[next].unwrap_or(0.0));
        for j in 0..span.max(1) {
            let idx = (b + j) % nb;
            y[idx] = if span == 0 {
                va
            } else {
                va + (vb - va) * j as f64 / span as f64
            };
        }
    }
    // Every harmonic the bins hold is kept, so the cycle is the folded
    // data itself (no truncation ringing); those the window passes at
    // ≥ LIFT_FLOOR are restored to full height, the weaker ones are lifted
    // by no more than 1/LIFT_FLOOR.
    let k_max = k_phase.min(nb / 2 - 1);
    let mut spec: Vec<Complex64> = y.iter().map(|v| Complex64::new(*v, 0.0)).collect();
    planner.plan_fft_forward(nb).process(&mut spec);
    let mut harmonics = Vec::with_capacity(k_max + 1);
    for (k, x) in spec.iter().enumerate().take(k_max + 1) {
        // Bin j holds phase (j + ½)/nb: undo the half-bin shift and the
        // window. The bins are not corrected for: where the phases are
        // dense they are narrower than anything the window passes, and
        // where they are sparse (filled by interpolation) a boxcar's gain
        // is not theirs, and lifting by it only amplifies noise.
        let gain = sinc(k as f64 * window_ms / period_ms);
        let lift = gain.signum() * gain.abs().max(LIFT_FLOOR);
        let c = x * Complex64::from_polar(1.0, -PI * k as f64 / nb as f64) / nb as f64;
        // Harmonics no stronger than the noise are shrunk (Wiener), so the
        // noise does not enter the peak and p99 − p1 as if it were power.
        let power = c.norm_sqr();
        let keep = if k == 0 || power <= 0.0 {
            1.0
        } else {
            power / (power + harmonic_var)
        };
        harmonics.push(c * keep / lift);
    }
    // The mean is the samples' own, over whole cycles (a partial one would
    // weigh its phases twice): over whole cycles of a detuned period they
    // sample every phase evenly, while the mean of sparse bins weights a few
    // samples (those near an edge, whose timestamps jitter most) far more
    // than the rest.
    let whole_end = r.measure_from_ns + ((r.end_ns - r.measure_from_ns) / p).max(1) * p;
    let whole: Vec<f64> = samples[lo..hi]
        .iter()
        .filter(|s| s.0 - centre < whole_end)
        .map(|s| s.1)
        .collect();
    if !whole.is_empty() {
        harmonics[0] = Complex64::new(whole.iter().sum::<f64>() / whole.len() as f64, 0.0);
    }
    let offset_ns = offset_of(rises, r.epoch_ns, p);
    Some(GpuCycle {
        gpu: gpu.to_string(),
        harmonics,
        offset_ns,
        samples: n,
        coverage,
        k_phase,
        k_window,
    })
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
/// the run has no GPUs; or when the samples' phase coverage or the sample
/// window leave fewer than [`MIN_HARMONICS`] harmonics.
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
        .filter(|_| r.info.kind == "duty" && r.info.duty > 0.0 && r.info.duty < 1.0)
    else {
        return Err(NoCycle::NotPeriodic);
    };
    let p = (period_ms * 1e6).round() as i64;
    // Enough of the rung to fold: whole cycles, and samples to fill them.
    let span = r.end_ns - r.measure_from_ns;
    let cycles = span as f64 / p as f64;
    if cycles < MIN_CYCLES {
        return Err(NoCycle::Verdict(format!(
            "too short to fold: the measured window ({:.2} s after settling) holds {cycles:.1} cycles of {} ms, fewer than {MIN_CYCLES}; lengthen duration_s",
            span as f64 / 1e9,
            fmt_ms(period_ms)
        )));
    }
    let mut gpus = Vec::new();
    for (gi, g) in run.manifest.backend.gpus.iter().enumerate() {
        let (w, lag) = window_of(model, &g.key);
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
        let rises = rises_of(edges, r, gi, &g.key);
        let in_window = rises
            .iter()
            .filter(|t| **t >= r.measure_from_ns - p && **t < r.end_ns)
            .count();
        if (in_window as f64) < 0.9 * cycles.floor() {
            return Err(NoCycle::Verdict(format!(
                "{}: {in_window} rising edges recorded for a window of {:.0} cycles: the edge log is incomplete, the cycle cannot be folded",
                g.key,
                cycles.floor()
            )));
        }
        let samples = series.get(&g.key, "buffered_w");
        let in_span = samples.partition_point(|x| x.0 < r.end_ns)
            - samples.partition_point(|x| x.0 < r.measure_from_ns);
        let update_ms = model
            .path(&g.key, "buffered_w")
            .and_then(|m| m.update_period_ms)
            .unwrap_or(20.0)
            .max(1.0);
        let expected = span as f64 / (update_ms * 1e6);
        if (in_span as f64) < 0.5 * expected {
            return Err(NoCycle::Verdict(format!(
                "{}: {in_span} buffered samples in the window, half or less of the ~{expected:.0} expected: the raw file is incomplete",
                g.key
            )));
        }
        if in_span < MIN_SAMPLES {
            return Err(NoCycle::Verdict(format!(
                "too short to fold: {in_span} buffered samples of {} in the {:.2} s window, fewer than {MIN_SAMPLES}; lengthen duration_s",
                g.key,
                span as f64 / 1e9
            )));
        }
        match gpu_cycle(planner, samples, &rises, r, &g.key, w, lag) {
            Some(c) => gpus.push((c, w)),
            None => {
                return Err(NoCycle::Verdict(format!(
                    "too few buffered samples of {} in the window to fold its cycle",
                    g.key
                )));
            }
        }
    }
    if gpus.is_empty() {
        return Err(NoCycle::Verdict("no GPUs".into()));
    }
    let k = gpus
        .iter()
        .map(|(c, _)| c.harmonics.len() - 1)
        .min()
        .unwrap_or(0);
    let k_phase = gpus.iter().map(|(c, _)| c.k_phase).min().unwrap_or(0);
    let k_window = gpus.iter().map(|(c, _)| c.k_window).min().unwrap_or(0);
    let coverage = gpus.iter().map(|(c, _)| c.coverage).fold(1.0, f64::min);
    if k_phase < MIN_HARMONICS {
        return Err(NoCycle::Verdict(format!(
            "phase-locked: the samples cover only {:.0} % of the {} ms cycle (a period on the sampling grid; run it detuned)",
            100.0 * coverage,
            fmt_ms(period_ms)
        )));
    }
    if k_window < MIN_HARMONICS {
        let w = gpus.iter().map(|(_, w)| *w).fold(0.0, f64::max);
        return Err(NoCycle::Verdict(format!(
            "instrument limit: the {w:.1} ms sample window passes fewer than {MIN_HARMONICS} harmonics of {} ms",
            fmt_ms(period_ms)
        )));
    }
    // Node harmonics: every GPU's series shifted to its own offset.
    let mut node = vec![Complex64::new(0.0, 0.0); k + 1];
    for (c, _) in &gpus {
        for (kk, h) in c.harmonics.iter().take(k + 1).enumerate() {
            let ph = -2.0 * PI * kk as f64 * c.offset_ns as f64 / p as f64;
            node[kk] += h * Complex64::from_polar(1.0, ph);
        }
    }
    // Synthesis at ≤ 0.5 ms, at least 8 points per harmonic.
    let m = ((period_ms / 0.5).ceil() as usize)
        .max(8 * k + 8)
        .clamp(64, 8192);
    let mut spec = vec![Complex64::new(0.0, 0.0); m];
    spec[0] = node[0];
    for kk in 1..=k.min(m / 2 - 1) {
        spec[kk] = node[kk];
        spec[m - kk] = node[kk].conj();
    }
    planner.plan_fft_inverse(m).process(&mut spec);
    let values: Vec<f64> = spec.iter().map(|c| c.re).collect();
    let stats = window_stats(
        &values,
        p,
        r.measure_from_ns - r.epoch_ns,
        r.end_ns - r.measure_from_ns,
    );

    let samples = gpus.iter().map(|(c, _)| c.samples).sum();
    let gpu_on_w = gpus
        .iter()
        .map(|(c, _)| (c.gpu.clone(), on_level(&c.harmonics[..=k], r.info.duty)))
        .collect();
    Ok(NodeCycle {
        rung_id: r.info.id,
        period_ms,
        harmonics: k.min(k_window),
        values,
        coverage,
        samples,
        stats,
        gpu_on_w,
    })
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
    let p = (first.period_ms * 1e6).round() as i64;
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
        stats,
    })
}

/// Mean of a GPU's cycle (harmonics, phase 0 at its rise) over the second
/// half of its on-phase, short of the fall: [duty/2, 0.95 duty).
fn on_level(h: &[Complex64], duty: f64) -> f64 {
    let n = 256;
    let (a, b) = (
        (duty / 2.0 * n as f64) as usize,
        (0.95 * duty * n as f64) as usize,
    );
    let vals: Vec<f64> = (a..b.max(a + 1))
        .map(|j| {
            let x = j as f64 / n as f64;
            h[0].re
                + h.iter()
                    .enumerate()
                    .skip(1)
                    .map(|(k, c)| {
                        2.0 * (c * Complex64::from_polar(1.0, 2.0 * PI * k as f64 * x)).re
                    })
                    .sum::<f64>()
        })
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
        .filter(|r| r.info.kind == "sustained" || r.info.kind == "soak")
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

    #[test]
    fn offsets_are_circular_medians() {
        let p = 100;
        assert_eq!(offset_of(&[1000 + 99, 1100 + 1, 1200], 1000, p), 0);
        assert_eq!(offset_of(&[1030, 1131, 1229], 1000, p), 30);
    }
}
