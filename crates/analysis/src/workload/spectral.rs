//! A job's iteration as a line of its spectrum: the period of a job whose
//! autocorrelation points elsewhere. A back-to-back job's steps barely dip
//! (an H100 training loop: 129.47 ms steps, its samples every ~20 ms), so
//! its autocorrelation's highest early peak was a beat of the sampling with
//! two steps (259.7 ms), and the job read "no period", flat, its swing the
//! raw samples' spread (+9 to +18 % against its fold). Its spectrum still
//! shows the step: a line at 7.72 Hz, with stronger 2nd and 3rd harmonics.
//!
//! The strongest line up to the samples' own Nyquist frequency, then the
//! lowest of its integer fractions that is itself a line (a fundamental
//! weaker than its harmonics, as a back-to-back job's is), refined by
//! every harmonic's parabola-fitted peak, each weighted by its power.

use super::resample::Even;
use crate::fft::Complex64;
use crate::fft::Planner;

/// The spectrum is zero-padded to this many times the series (finer bins
/// for the peaks' parabolas).
const PAD: usize = 4;

/// A fundamental below the strongest line is tried down to this fraction
/// of it.
const MAX_FRACTION: usize = 4;

/// A fundamental must hold at least this share of the strongest line's
/// power.
const MIN_FUNDAMENTAL_SHARE: f64 = 0.05;

/// A line is at least this many times the median power about it (within
/// ±[`NEIGHBOURS_SHARE`] of its frequency, its own peak left out): a
/// random on–off draw's spectrum rises smoothly towards low frequencies,
/// and against the whole band's median its low end passed for a line.
pub const MIN_LINE_SNR: f64 = 20.0;

/// The neighbourhood a line's noise is taken from, a share of its
/// frequency either side.
const NEIGHBOURS_SHARE: f64 = 0.3;

/// The median power about bin `k` (within ±[`NEIGHBOURS_SHARE`] of it,
/// `lobe` bins either side of it left out), at least `floor`.
fn noise_about(p: &[f64], k: f64, lobe: usize, floor: f64) -> f64 {
    let (lo, hi) = (
        ((1.0 - NEIGHBOURS_SHARE) * k).floor().max(1.0) as usize,
        (((1.0 + NEIGHBOURS_SHARE) * k).ceil() as usize).min(p.len().saturating_sub(1)),
    );
    let c = k.round() as usize;
    let mut v: Vec<f64> = (lo..=hi)
        .filter(|j| j.abs_diff(c) > 2 * lobe)
        .map(|j| p[j])
        .collect();
    if v.len() < 8 {
        return floor;
    }
    v.sort_unstable_by(f64::total_cmp);
    v[v.len() / 2].max(floor)
}

/// A line gives an iteration only where the window holds this many of
/// its cycles (a back-to-back job's 40 s window: 309).
pub const MIN_CYCLES: usize = 20;

/// A line of the spectrum: the iteration it gives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Line {
    /// The fundamental's period, ms.
    pub period_ms: f64,
    /// Its power against the spectrum's median.
    pub snr: f64,
    /// The strongest harmonic (1: the fundamental).
    pub strongest: usize,
}

/// The power spectrum of `even` (mean removed, Hann window), zero-padded:
/// (bin width Hz, powers).
fn spectrum(planner: &mut Planner, even: &Even) -> (f64, Vec<f64>) {
    let n = even.values.len();
    let mean = even.values.iter().sum::<f64>() / n.max(1) as f64;
    let size = (PAD * n).next_power_of_two();
    let hann = |i: usize| 0.5 - 0.5 * (std::f64::consts::TAU * i as f64 / n as f64).cos();
    let mut buf: Vec<Complex64> = even
        .values
        .iter()
        .enumerate()
        .map(|(i, v)| Complex64::new((v - mean) * hann(i), 0.0))
        .chain(std::iter::repeat(Complex64::new(0.0, 0.0)))
        .take(size)
        .collect();
    planner.forward(&mut buf);
    let df = 1.0 / (size as f64 * even.step_ms() / 1000.0);
    (df, buf[..size / 2].iter().map(|c| c.norm_sqr()).collect())
}

/// The local maximum of `p` within `half` bins of `k`, refined by a
/// parabola: (bin, power).
fn peak_near(p: &[f64], k: f64, half: usize) -> Option<(f64, f64)> {
    let c = k.round() as usize;
    let lo = c.saturating_sub(half).max(1);
    let hi = (c + half).min(p.len().saturating_sub(2));
    let best = (lo..=hi).max_by(|a, b| p[*a].total_cmp(&p[*b]))?;
    let (a, b, d) = (p[best - 1], p[best], p[best + 1]);
    let den = a - 2.0 * b + d;
    let shift = if den < 0.0 {
        (0.5 * (a - d) / den).clamp(-0.5, 0.5)
    } else {
        0.0
    };
    Some((best as f64 + shift, b))
}

/// The iteration's line in `even`'s spectrum, between `min_period_ms` and
/// `max_period_ms`, seen by samples `spacing_ms` apart (nothing above their
/// Nyquist frequency is a line of the job). None without a line of
/// [`MIN_LINE_SNR`].
pub fn line(
    planner: &mut Planner,
    even: &Even,
    spacing_ms: f64,
    (min_period_ms, max_period_ms): (f64, f64),
) -> Option<Line> {
    if even.values.len() < 16 || spacing_ms <= 0.0 {
        return None;
    }
    let (df, p) = spectrum(planner, even);
    let nyquist_hz = (500.0 / spacing_ms).min(1000.0 / min_period_ms);
    let lo = ((1000.0 / max_period_ms) / df).ceil().max(1.0) as usize;
    let hi = ((nyquist_hz / df).floor() as usize).min(p.len().saturating_sub(2));
    if hi <= lo + 2 {
        return None;
    }
    let mut band: Vec<f64> = p[lo..=hi].to_vec();
    band.sort_unstable_by(f64::total_cmp);
    let noise = band[band.len() / 2].max(f64::MIN_POSITIVE);
    let top = (lo..=hi).max_by(|a, b| p[*a].total_cmp(&p[*b]))?;
    // The bins a line's peak may stray by: the Hann window's main lobe.
    let lobe = 2 * PAD;
    let is_line = |k: f64, pw: f64| pw >= MIN_LINE_SNR * noise_about(&p, k, lobe, noise);
    if !is_line(top as f64, p[top]) {
        return None;
    }
    let (m, f0_bin, f0_power) = (1..=MAX_FRACTION)
        .rev()
        .filter(|m| top as f64 / *m as f64 >= lo as f64)
        .find_map(|m| {
            let (k, pw) = peak_near(&p, top as f64 / m as f64, lobe / m.max(1) + 1)?;
            (is_line(k, pw) && pw >= MIN_FUNDAMENTAL_SHARE * p[top]).then_some((m, k, pw))
        })?;
    // Every harmonic's peak below the Nyquist frequency, weighted by power.
    let (mut num, mut den) = (0.0, 0.0);
    for h in 1.. {
        let want = f0_bin * h as f64;
        if want > hi as f64 {
            break;
        }
        if let Some((k, pw)) = peak_near(&p, want, lobe)
            && is_line(k, pw)
        {
            num += pw * k / h as f64;
            den += pw;
        }
    }
    let f0 = if den > 0.0 { num / den } else { f0_bin } * df;
    Some(Line {
        period_ms: 1000.0 / f0,
        snr: f0_power / noise_about(&p, f0_bin, lobe, noise),
        strongest: m,
    })
}

/// Trial periods either side of the line's, for [`refine`].
const REFINE_STEPS: usize = 200;
/// How far either side they reach, a share of the period.
const REFINE_SHARE: f64 = 0.002;
/// Phase bins of the folds [`refine`] and [`starts`] compare.
const FOLD_BINS: usize = 40;

/// Bin means of `points` folded at `period_ns` from `t0_ns` (NaN: empty).
fn folded(points: &[(i64, f64)], t0_ns: i64, period_ns: f64) -> Vec<f64> {
    let mut sum = [0.0; FOLD_BINS];
    let mut n = [0usize; FOLD_BINS];
    for &(t, v) in points {
        let phase = ((t - t0_ns) as f64 / period_ns).rem_euclid(1.0);
        let b = ((phase * FOLD_BINS as f64) as usize).min(FOLD_BINS - 1);
        sum[b] += v;
        n[b] += 1;
    }
    (0..FOLD_BINS)
        .map(|b| {
            if n[b] > 0 {
                sum[b] / n[b] as f64
            } else {
                f64::NAN
            }
        })
        .collect()
}

/// The variance of a fold's bins (the empty ones left out).
fn spread(bins: &[f64]) -> f64 {
    let v: Vec<f64> = bins.iter().copied().filter(|x| x.is_finite()).collect();
    let n = v.len().max(1) as f64;
    let m = v.iter().sum::<f64>() / n;
    v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n
}

/// The period within ±[`REFINE_SHARE`] of `period_ns` whose fold of
/// `points` varies most (epoch folding): a period off by 0.03 % drifts
/// 12 ms over 300 iterations and smears the fold. ns.
pub fn refine(points: &[(i64, f64)], period_ns: f64) -> f64 {
    let Some(&(t0, _)) = points.first() else {
        return period_ns;
    };
    (0..=REFINE_STEPS)
        .map(|k| {
            period_ns * (1.0 - REFINE_SHARE + 2.0 * REFINE_SHARE * k as f64 / REFINE_STEPS as f64)
        })
        .map(|p| (p, spread(&folded(points, t0, p))))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map_or(period_ns, |(p, _)| p)
}

/// Iteration starts at `period_ns` over `points`' span, where the samples'
/// own crossings give none: t0 + k·P, t0 at the start of the fold's
/// steepest rise (the bin before its largest rise between neighbours).
pub fn starts(points: &[(i64, f64)], period_ns: f64) -> Vec<i64> {
    let (Some(&(first, _)), Some(&(last, _))) = (points.first(), points.last()) else {
        return Vec::new();
    };
    let bins = folded(points, first, period_ns);
    let rise = |b: usize| bins[b] - bins[(b + FOLD_BINS - 1) % FOLD_BINS];
    let steepest = (0..FOLD_BINS)
        .filter(|b| rise(*b).is_finite())
        .max_by(|a, b| rise(*a).total_cmp(&rise(*b)))
        .unwrap_or(0);
    let t0 = first as f64 + (steepest as f64 - 1.0) / FOLD_BINS as f64 * period_ns;
    (0..)
        .map(|k| (t0 + k as f64 * period_ns).round() as i64)
        .take_while(|t| *t <= last)
        .filter(|t| *t >= first)
        .collect()
}
