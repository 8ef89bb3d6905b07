//! The arithmetic of the grid metrics on a run of evenly spaced values:
//! the step's two plateaus, the shortest 10–90 % rise or fall, and the
//! share of the fluctuation's energy inside a band. A composed cycle is
//! one period of values (read cyclically); the node curve is a series.

use powerlab_campaign::Ramp;
use rustfft::FftPlanner;
use rustfft::num_complex::Complex;

/// The low and high plateau of a step, W.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// The low plateau: the median of the values below the mid level.
    pub lo: f64,
    /// The high plateau: the median of the values above the mid level.
    pub hi: f64,
}

impl Step {
    /// hi − lo, W.
    pub fn height(&self) -> f64 {
        self.hi - self.lo
    }
}

/// The median of sorted values.
fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        0.5 * (sorted[n / 2 - 1] + sorted[n / 2])
    }
}

/// The plateaus of `values`: split at the level half way between their
/// least and greatest, the median of each side (an overshoot or a dip
/// moves neither). None for fewer than two values or a flat run.
pub fn plateaus(values: &[f64]) -> Option<Step> {
    let (min, max) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(*v), b.max(*v))
        });
    if values.len() < 2 || max.is_nan() || max <= min {
        return None;
    }
    let mid = 0.5 * (min + max);
    let mut low: Vec<f64> = values.iter().copied().filter(|v| *v < mid).collect();
    let mut high: Vec<f64> = values.iter().copied().filter(|v| *v >= mid).collect();
    low.sort_by(f64::total_cmp);
    high.sort_by(f64::total_cmp);
    Some(Step {
        lo: median(&low),
        hi: median(&high),
    })
}

/// The shortest 10–90 % time of any rise (or fall) of the cyclic
/// `values` between the plateaus of `step`, in steps of the values
/// (fractional: each crossing interpolated linearly). A rise starts where
/// the values cross the 10 % level upwards and ends at the first crossing
/// of the 90 % level, unless they fall back below 10 % first (a fall:
/// the same from 90 % down to 10 %). None: no complete edge.
pub fn fastest_edge(values: &[f64], step: Step, dir: Ramp) -> Option<f64> {
    let m = values.len();
    if m < 2 || step.height().is_nan() || step.height() <= 0.0 {
        return None;
    }
    // A fall is a rise of the negated values.
    let sign = match dir {
        Ramp::Up => 1.0,
        Ramp::Down => -1.0,
    };
    let v = |j: usize| sign * values[j % m];
    let (l10, l90) = match dir {
        Ramp::Up => (step.lo + 0.1 * step.height(), step.lo + 0.9 * step.height()),
        Ramp::Down => (
            -(step.hi - 0.1 * step.height()),
            -(step.lo + 0.1 * step.height()),
        ),
    };
    let cross = |j: usize, level: f64| j as f64 + (level - v(j)) / (v(j + 1) - v(j));
    let mut best: Option<f64> = None;
    for j in 0..m {
        if !(v(j) < l10 && v(j + 1) >= l10) {
            continue;
        }
        let t10 = cross(j, l10);
        // Below 90 % at every k reached: the crossing lies after it.
        for k in j..j + m {
            if k > j && v(k) < l10 {
                break;
            }
            if v(k + 1) >= l90 {
                let t = (cross(k, l90) - t10).max(0.0);
                best = Some(best.map_or(t, |b: f64| b.min(t)));
                break;
            }
        }
    }
    best
}

/// The share (0..1) of the variance of `values`, spaced `step_s` seconds
/// apart, inside the band `[lo_hz, hi_hz]`: the discrete spectrum without
/// DC, each frequency k / (n · step_s) counted twice below the Nyquist
/// bin (a real series' two sides). None for fewer than four values or no
/// fluctuation. A cycle of one period gives its harmonics k / period.
pub fn band_share(values: &[f64], step_s: f64, [lo_hz, hi_hz]: [f64; 2]) -> Option<f64> {
    let n = values.len();
    if n < 4 || step_s.is_nan() || step_s <= 0.0 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let mut buf: Vec<Complex<f64>> = values.iter().map(|v| Complex::new(v - mean, 0.0)).collect();
    FftPlanner::new().plan_fft_forward(n).process(&mut buf);
    let df = 1.0 / (n as f64 * step_s);
    let (mut total, mut inside) = (0.0, 0.0);
    for (k, c) in buf.iter().enumerate().take(n / 2 + 1).skip(1) {
        let sides = if 2 * k == n { 1.0 } else { 2.0 };
        let e = sides * c.norm_sqr();
        total += e;
        let f = k as f64 * df;
        if f >= lo_hz && f <= hi_hz {
            inside += e;
        }
    }
    (total > 0.0).then(|| inside / total)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test that unwraps reports its failure by panicking
    use super::*;

    /// A trapezoid of `m` points: `ramp` points rising linearly from `lo`
    /// to `hi`, held, then falling over `fall` points.
    fn trapezoid(m: usize, ramp: usize, fall: usize, lo: f64, hi: f64) -> Vec<f64> {
        let mut v = vec![lo; m];
        for (j, x) in v.iter_mut().enumerate() {
            let half = m / 2;
            *x = if j <= ramp {
                lo + (hi - lo) * j as f64 / ramp as f64
            } else if j < half {
                hi
            } else if j <= half + fall {
                hi - (hi - lo) * (j - half) as f64 / fall as f64
            } else {
                lo
            };
        }
        v
    }

    #[test]
    fn a_trapezoid_rises_and_falls_at_its_known_rate() {
        // 1 s at 0.5 ms: a 40 ms rise (80 points), a 10 ms fall (20 points).
        let v = trapezoid(2000, 80, 20, 200.0, 1200.0);
        let s = plateaus(&v).unwrap();
        assert_eq!((s.lo, s.hi), (200.0, 1200.0));
        let up = fastest_edge(&v, s, Ramp::Up).unwrap();
        let down = fastest_edge(&v, s, Ramp::Down).unwrap();
        // 10–90 % of a linear ramp: 80 % of its length.
        assert!((up - 64.0).abs() < 1e-9, "{up}");
        assert!((down - 16.0).abs() < 1e-9, "{down}");
        // Rates: 800 W over 32 ms = 25 kW/s; over 8 ms = 100 kW/s.
        assert!((0.8 * s.height() / (up * 0.0005) - 25_000.0).abs() < 1e-6);
        assert!((0.8 * s.height() / (down * 0.0005) - 100_000.0).abs() < 1e-6);
        // An overshoot above the plateau does not move it.
        let mut o = v.clone();
        o[100] = 1500.0;
        assert_eq!(plateaus(&o).unwrap().hi, 1200.0);
        assert_eq!(plateaus(&[5.0; 10]), None);
        assert_eq!(fastest_edge(&v, Step { lo: 1.0, hi: 1.0 }, Ramp::Up), None);
    }

    #[test]
    fn a_wiggle_at_the_foot_is_not_an_edge() {
        // Two starts of a rise: the first falls back below 10 %.
        let mut v = vec![0.0; 100];
        v[10] = 20.0; // above 10 %, back down at 11
        for (j, x) in v.iter_mut().enumerate().take(60).skip(30) {
            *x = ((j - 30) as f64 * 10.0).min(100.0);
        }
        let s = Step { lo: 0.0, hi: 100.0 };
        // 10 % at 31, 90 % at 39: 8 points.
        assert!((fastest_edge(&v, s, Ramp::Up).unwrap() - 8.0).abs() < 1e-9);
    }

    #[test]
    fn a_square_wave_has_its_known_harmonic_energy() {
        // 1 s, 50 % duty: the odd harmonics hold 8 / (π² k²) of the
        // variance; the first 81.06 %, the first three 93.3 %.
        let v: Vec<f64> = (0..4000)
            .map(|j| if j < 2000 { 1.0 } else { 0.0 })
            .collect();
        let step = 1.0 / 4000.0;
        let first = band_share(&v, step, [0.5, 1.5]).unwrap();
        let pi2 = std::f64::consts::PI.powi(2);
        assert!((first - 8.0 / pi2).abs() < 1e-3, "{first}");
        let three = band_share(&v, step, [0.1, 5.5]).unwrap();
        let want = 8.0 / pi2 * (1.0 + 1.0 / 9.0 + 1.0 / 25.0);
        assert!((three - want).abs() < 1e-3, "{three} vs {want}");
        // No even harmonic: a band around 2 Hz holds nothing.
        assert!(band_share(&v, step, [1.5, 2.5]).unwrap() < 1e-9);
        assert_eq!(band_share(&[3.0; 16], step, [0.1, 20.0]), None);
        // Every harmonic: the whole variance.
        assert!((band_share(&v, step, [0.1, 2000.0]).unwrap() - 1.0).abs() < 1e-12);
    }
}
