//! The node curve's spectrum: the dominant frequency and the share of the
//! fluctuation's energy in the 0.1–2 Hz and 2–20 Hz bands (the bands grid
//! operators watch; arXiv 2508.14318).

use crate::fft;
use serde::Serialize;

/// Spectral summary of one rung's node curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct Spectrum {
    /// Frequency with the most power (DC excluded), Hz.
    pub dominant_hz: f64,
    /// Share of the variance in 0.1–2 Hz.
    pub share_0_1_to_2_hz: f64,
    /// Share of the variance in 2–20 Hz.
    pub share_2_to_20_hz: f64,
    /// Highest frequency the grid resolves (half the grid rate), Hz.
    pub nyquist_hz: f64,
}

/// Spectrum of `values` sampled every `step_s` seconds (mean removed).
pub fn spectrum(values: &[f64], step_s: f64) -> Option<Spectrum> {
    let n = values.len();
    if n < 16 || step_s <= 0.0 {
        return None;
    }
    let buf = fft::of_fluctuation(values);
    let df = 1.0 / (n as f64 * step_s);
    let (mut total, mut low, mut mid, mut best) = (0.0, 0.0, 0.0, (0.0, 0.0));
    for (k, c) in buf.iter().enumerate().take(n / 2 + 1).skip(1) {
        let f = k as f64 * df;
        let p = c.norm_sqr();
        total += p;
        if (0.1..2.0).contains(&f) {
            low += p;
        }
        if (2.0..=20.0).contains(&f) {
            mid += p;
        }
        if p > best.1 {
            best = (f, p);
        }
    }
    if total <= 0.0 {
        return Some(Spectrum {
            nyquist_hz: 0.5 / step_s,
            ..Default::default()
        });
    }
    Some(Spectrum {
        dominant_hz: best.0,
        share_0_1_to_2_hz: low / total,
        share_2_to_20_hz: mid / total,
        nyquist_hz: 0.5 / step_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_one_hertz_wave_is_found_in_the_low_band() {
        let v: Vec<f64> = (0..2000)
            .map(|k| (2.0 * std::f64::consts::PI * 1.0 * k as f64 * 0.01).sin() * 300.0 + 1000.0)
            .collect();
        let s = spectrum(&v, 0.01).unwrap();
        assert!((s.dominant_hz - 1.0).abs() < 0.06, "{s:?}");
        assert!(
            s.share_0_1_to_2_hz > 0.95 && s.share_2_to_20_hz < 0.05,
            "{s:?}"
        );
        let v: Vec<f64> = (0..2000)
            .map(|k| if (k / 5) % 2 == 0 { 1.0 } else { 0.0 })
            .collect();
        let s = spectrum(&v, 0.01).unwrap();
        assert!(
            (s.dominant_hz - 10.0).abs() < 0.1 && s.share_2_to_20_hz > 0.8,
            "{s:?}"
        );
    }
}
