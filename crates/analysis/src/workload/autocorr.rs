//! The autocorrelation of an evenly sampled series, and the peak that
//! gives its period.

use super::{EARLY_PEAK_SHARE, MIN_PEAK};
use crate::fft::Complex64;
use crate::fft::Planner;

/// A peak of the autocorrelation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Peak {
    /// Its lag, refined between grid points, in grid steps.
    pub lag: f64,
    /// Its height as a share of lag 0.
    pub height: f64,
}

/// The autocorrelation of `values` at lags 0..=`max_lag` (grid steps),
/// each lag's sum divided by the pairs it holds (so a long lag is not
/// shrunk by the window's end), as a share of lag 0. Empty when the series
/// does not move.
pub fn autocorrelation(planner: &mut Planner, values: &[f64], max_lag: usize) -> Vec<f64> {
    let n = values.len();
    if n < 2 {
        return Vec::new();
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let size = (2 * n).next_power_of_two();
    let mut buf: Vec<Complex64> = values
        .iter()
        .map(|v| Complex64::new(v - mean, 0.0))
        .chain(std::iter::repeat(Complex64::new(0.0, 0.0)))
        .take(size)
        .collect();
    planner.forward(&mut buf);
    for c in &mut buf {
        *c = Complex64::new(c.norm_sqr(), 0.0);
    }
    planner.inverse(&mut buf);
    let lag0 = buf[0].re / n as f64;
    if lag0 <= 0.0 || !lag0.is_finite() {
        return Vec::new();
    }
    (0..=max_lag.min(n - 1))
        .map(|k| buf[k].re / (n - k) as f64 / lag0)
        .collect()
}

/// The period's peak of autocorrelation `r` between lags `min_lag` and
/// `max_lag` (grid steps): the first local maximum of at least
/// [`MIN_PEAK`] that reaches [`EARLY_PEAK_SHARE`] of the highest one,
/// refined by a parabola through its neighbours.
///
/// # Errors
///
/// The highest local maximum in the range (None: there is none) when no
/// peak reaches [`MIN_PEAK`].
pub fn period_peak(r: &[f64], min_lag: usize, max_lag: usize) -> Result<Peak, Option<Peak>> {
    let hi = max_lag.min(r.len().saturating_sub(2));
    let maxima: Vec<usize> = (min_lag.max(1)..=hi)
        .filter(|&k| r[k] >= r[k - 1] && r[k] > r[k + 1])
        .collect();
    let best = maxima
        .iter()
        .copied()
        .max_by(|a, b| r[*a].total_cmp(&r[*b]));
    let Some(best) = best else {
        return Err(None);
    };
    if r[best] < MIN_PEAK {
        return Err(Some(refined(r, best)));
    }
    let first = maxima
        .iter()
        .copied()
        .find(|&k| r[k] >= MIN_PEAK && r[k] >= EARLY_PEAK_SHARE * r[best])
        .unwrap_or(best);
    Ok(refined(r, first))
}

/// The peak at `k` refined by the parabola through `k − 1`, `k`, `k + 1`.
fn refined(r: &[f64], k: usize) -> Peak {
    let (a, b, c) = (r[k - 1], r[k], r[k + 1]);
    let den = a - 2.0 * b + c;
    let d = if den < 0.0 {
        (0.5 * (a - c) / den).clamp(-0.5, 0.5)
    } else {
        0.0
    };
    Peak {
        lag: k as f64 + d,
        height: b - 0.25 * (a - c) * d,
    }
}
