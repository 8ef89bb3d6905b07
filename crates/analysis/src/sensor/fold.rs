//! Equivalent-time sampling: the samples of every cycle of a rung folded by
//! their phase after the cycle's recorded rising edge, binned into one
//! average cycle at finer resolution than one sample period. From it: the
//! fundamental (what the square-wave swing is, independent of latency and
//! of the window's shape), rise and fall, overshoot and ramp rate.

use powerlab_core::units::{ms_to_s, ns_to_ms};
use powerlab_samples::stats::median_high;
use std::f64::consts::PI;

/// `sin(πx)/(πx)`, 1 at 0.
pub fn sinc(x: f64) -> f64 {
    if x.abs() < 1e-12 {
        1.0
    } else {
        (PI * x).sin() / (PI * x)
    }
}

/// One folded cycle.
#[derive(Debug, Clone, PartialEq)]
pub struct Folded {
    /// Period, ns.
    pub period_ns: i64,
    /// Mean value per phase bin (None: no sample landed there).
    pub bins: Vec<Option<f64>>,
    /// Samples folded.
    pub samples: usize,
    /// Cycles that contributed.
    pub cycles: usize,
}

impl Folded {
    /// Fraction of bins with at least one sample.
    pub fn coverage(&self) -> f64 {
        if self.bins.is_empty() {
            return 0.0;
        }
        self.bins.iter().filter(|b| b.is_some()).count() as f64 / self.bins.len() as f64
    }

    /// Longest run of empty bins, as a fraction of the period.
    pub fn max_gap(&self) -> f64 {
        let n = self.bins.len();
        if n == 0 || self.bins.iter().all(Option::is_none) {
            return 1.0;
        }
        let (mut best, mut run) = (0usize, 0usize);
        // Twice round, so a gap across the wrap counts whole.
        for i in 0..2 * n {
            if self.bins[i % n].is_none() {
                run += 1;
                best = best.max(run);
            } else {
                run = 0;
            }
        }
        best.min(n) as f64 / n as f64
    }

    /// Enough of the cycle is covered to take its fundamental: no gap
    /// longer than 1/8 of the period.
    pub fn usable(&self) -> bool {
        self.max_gap() <= 0.125
    }

    /// Bins with gaps filled by circular linear interpolation (None if empty).
    pub fn filled(&self) -> Option<Vec<f64>> {
        let n = self.bins.len();
        let known: Vec<usize> = (0..n).filter(|&i| self.bins[i].is_some()).collect();
        if known.is_empty() {
            return None;
        }
        let (first, last) = (known[0], known[known.len() - 1]);
        let out = (0..n)
            .map(|i| {
                if let Some(v) = self.bins[i] {
                    return v;
                }
                let prev = known
                    .iter()
                    .rev()
                    .find(|&&k| k < i)
                    .copied()
                    .unwrap_or(last);
                let next = known.iter().find(|&&k| k > i).copied().unwrap_or(first);
                let (vp, vn) = (
                    self.bins[prev].unwrap_or(0.0),
                    self.bins[next].unwrap_or(0.0),
                );
                let span = (next + n - prev) % n;
                let at = (i + n - prev) % n;
                if span == 0 {
                    vp
                } else {
                    vp + (vn - vp) * at as f64 / span as f64
                }
            })
            .collect();
        Some(out)
    }

    /// The first Fourier coefficient's magnitude, corrected for the binning.
    pub fn fundamental(&self) -> Option<f64> {
        let y = self.filled()?;
        let n = y.len() as f64;
        let (mut re, mut im) = (0.0, 0.0);
        for (k, v) in y.iter().enumerate() {
            let ph = 2.0 * PI * (k as f64 + 0.5) / n;
            re += v * ph.cos();
            im -= v * ph.sin();
        }
        Some((re * re + im * im).sqrt() / n / sinc(1.0 / n))
    }

    /// The height of the square wave of duty `duty` whose fundamental this
    /// cycle has: the swing, immune to latency, overshoot shape and to any
    /// window shorter than the period (after dividing by its attenuation).
    pub fn square_swing(&self, duty: f64) -> Option<f64> {
        let s = (PI * duty).sin();
        (s > 1e-6)
            .then(|| self.fundamental().map(|c| PI * c / s))
            .flatten()
    }
}

/// Folds `samples` (time ns, value) on the cycles starting at `rises`
/// (sorted, ns), keeping samples within one period after a rise.
pub fn fold(samples: &[(i64, f64)], rises: &[i64], period_ns: i64, bins: usize) -> Folded {
    let bins = bins.max(4);
    let mut sum = vec![0.0; bins];
    let mut cnt = vec![0usize; bins];
    let mut used_cycles = std::collections::BTreeSet::new();
    let mut n = 0;
    for &(t, v) in samples {
        let k = rises.partition_point(|r| *r <= t);
        if k == 0 {
            continue;
        }
        let dt = t - rises[k - 1];
        if dt >= period_ns || period_ns <= 0 {
            continue;
        }
        let b = ((dt as f64 / period_ns as f64) * bins as f64) as usize;
        let b = b.min(bins - 1);
        sum[b] += v;
        cnt[b] += 1;
        n += 1;
        used_cycles.insert(k);
    }
    Folded {
        period_ns,
        bins: sum
            .iter()
            .zip(&cnt)
            .map(|(s, c)| (*c > 0).then(|| s / *c as f64))
            .collect(),
        samples: n,
        cycles: used_cycles.len(),
    }
}

/// Shape of a folded cycle that rises at phase 0 and falls at `duty`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Shape {
    /// On level (median of the settled second half of the on-phase), W.
    pub on_w: f64,
    /// Off level, W.
    pub off_w: f64,
    /// 10→90 % rise time, ms.
    pub rise_ms: f64,
    /// 90→10 % fall time, ms.
    pub fall_ms: f64,
    /// Peak above the on level after the rise, W.
    pub overshoot_w: f64,
    /// Time above on + 10 % of the overshoot, ms.
    pub overshoot_ms: f64,
    /// Rising ramp rate (80 % of the step over the rise time), W/s.
    pub ramp_w_per_s: f64,
}

/// Rise, fall, overshoot and ramp of a folded cycle.
pub fn shape(f: &Folded, duty: f64) -> Option<Shape> {
    let y = f.filled()?;
    let n = y.len();
    let bin_ms = ns_to_ms(f.period_ns) / n as f64;
    let on_end = ((duty * n as f64) as usize).clamp(2, n - 1);
    // High medians: levels that some bin holds.
    let on = median_high(&y[on_end / 2..on_end]).unwrap_or(f64::NAN);
    let off = median_high(&y[(on_end + (n - on_end) / 2).min(n - 1)..n]).unwrap_or(f64::NAN);
    let step = on - off;
    if step.abs() < 1e-9 {
        return None;
    }
    let cross = |range: std::ops::Range<usize>, level: f64, rising: bool| {
        range
            .into_iter()
            .find(|&i| if rising { y[i] >= level } else { y[i] <= level })
    };
    let (lo, hi) = (off + 0.1 * step, off + 0.9 * step);
    let r10 = cross(0..on_end, lo, true)?;
    let r90 = cross(r10..on_end, hi, true)?;
    let f90 = cross(on_end / 2..n, hi, false).unwrap_or(on_end);
    let f10 = cross(f90..n, lo, false).unwrap_or(f90);
    let peak_i = (0..on_end).max_by(|a, b| y[*a].total_cmp(&y[*b]))?;
    let overshoot = (y[peak_i] - on).max(0.0);
    let above = if overshoot > 0.0 {
        (0..on_end).filter(|&i| y[i] > on + 0.1 * overshoot).count()
    } else {
        0
    };
    let rise_ms = (r90 - r10) as f64 * bin_ms;
    Some(Shape {
        on_w: on,
        off_w: off,
        rise_ms,
        fall_ms: (f10 - f90) as f64 * bin_ms,
        overshoot_w: overshoot,
        overshoot_ms: above as f64 * bin_ms,
        ramp_w_per_s: if rise_ms > 0.0 {
            0.8 * step / ms_to_s(rise_ms)
        } else {
            f64::INFINITY
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folding_a_square_wave_recovers_its_height_from_its_fundamental() {
        // 100 ms period, duty 0.5, 100 W → 700 W, sampled every 7 ms (not
        // commensurate), with rises at every cycle start.
        let p = 100_000_000i64;
        let rises: Vec<i64> = (0..50).map(|k| k * p).collect();
        let samples: Vec<(i64, f64)> = (0..700)
            .map(|k| k as i64 * 7_000_000)
            .map(|t| (t, if (t % p) < p / 2 { 700.0 } else { 100.0 }))
            .collect();
        let f = fold(&samples, &rises, p, 50);
        assert!(f.coverage() > 0.99);
        let s = f.square_swing(0.5).unwrap();
        assert!((s - 600.0).abs() < 6.0, "{s}");
        let sh = shape(&f, 0.5).unwrap();
        assert!((sh.on_w - 700.0).abs() < 1e-9 && (sh.off_w - 100.0).abs() < 1e-9);
        assert!(sh.rise_ms <= 2.0 + 1e-9, "{sh:?}");
    }

    #[test]
    fn a_boxcar_window_attenuates_the_fundamental_by_its_sinc() {
        // A 20 ms moving average of a 50 ms square wave: fundamental × sinc(20/50).
        let p = 50_000_000i64;
        let w = 20_000_000i64;
        let truth = |t: i64| if t.rem_euclid(p) < p / 2 { 1.0 } else { 0.0 };
        let avg = |t: i64| (0..200).map(|k| truth(t - w + k * w / 200)).sum::<f64>() / 200.0;
        let rises: Vec<i64> = (0..100).map(|k| k * p).collect();
        let samples: Vec<(i64, f64)> = (0..2000)
            .map(|k| k as i64 * 2_300_000 + 40_000_000)
            .map(|t| (t, avg(t)))
            .collect();
        let f = fold(&samples, &rises, p, 100);
        let s = f.square_swing(0.5).unwrap();
        assert!(
            (s / sinc(20.0 / 50.0) - 1.0).abs() < 0.02,
            "{s} vs {}",
            sinc(0.4)
        );
    }
}
