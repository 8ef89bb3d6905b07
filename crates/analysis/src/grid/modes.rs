//! Forced oscillation of the grid's modes (issue 47): a training job's
//! iteration forces the grid at its frequency and every harmonic. Over
//! one period of the facility's waveform, per declared `[[grid.mode]]`
//! (arXiv 2508.14318: inter-area modes below 1 Hz, between nearby plants
//! 1–2.5 Hz, turbine shafts 7 to over 100 Hz): the harmonics inside its
//! band and their root-sum-square amplitude (the forcing), whether a
//! harmonic that matters sits in it, and the iteration period within the
//! declared tolerance that keeps every harmonic that matters farthest
//! from every mode (a 2026 IEEE 39-bus study cut the deviation 7.4× by
//! moving the period by under a second).
//!
//! The retuning assumes each harmonic keeps its complex amplitude c_k
//! while the period stretches (the iteration's shape scales with it):
//! only the harmonics' frequencies k / period move.

use crate::fft;
use powerlab_campaign::GridMode;
use powerlab_core::units::W_PER_MW;
use serde::Serialize;

/// A harmonic matters (is "significant") at this share of the largest
/// harmonic's amplitude or above; the fundamental always does.
pub const SIGNIFICANT_SHARE: f64 = 0.01;

/// Periods tried on each side of the current one when retuning.
pub const RETUNE_STEPS: usize = 1000;

/// One harmonic of the iteration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Harmonic {
    /// Its number k (1: the fundamental).
    pub k: usize,
    /// Its frequency k / period, Hz.
    pub hz: f64,
    /// Its single-sided peak amplitude 2 |c_k|, MW.
    pub amplitude_mw: f64,
}

/// Where no harmonic is inside a mode's band: the significant harmonic
/// nearest to it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Nearest {
    /// The harmonic.
    pub harmonic: Harmonic,
    /// Its distance from the band's nearer edge, Hz.
    pub gap_hz: f64,
}

/// One mode's forcing at the current period.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModeForcing {
    /// The mode as declared.
    pub mode: GridMode,
    /// Its band's low edge, Hz.
    pub band_lo_hz: f64,
    /// Its band's high edge, Hz.
    pub band_hi_hz: f64,
    /// Its damping ratio ζ (declared, or from its bandwidth).
    pub damping_ratio: f64,
    /// Every harmonic inside the band (edges included).
    pub in_band: Vec<Harmonic>,
    /// The root-sum-square of their amplitudes, MW (0: none in band).
    pub forcing_mw: f64,
    /// The nearest significant harmonic where none is in band.
    pub nearest: Option<Nearest>,
    /// The fundamental, or a significant harmonic, lies in the band.
    pub flagged: bool,
    /// The mode's response: every harmonic's amplitude times the
    /// oscillator's amplification at it, root-sum-square, MW.
    pub response_mw: f64,
    /// The highest frequency the measured cycles hold, Hz, where the
    /// band reaches above it: the forcing there is not measured (None:
    /// the band is resolved).
    pub unresolved_above_hz: Option<f64>,
}

/// The period within the tolerance that keeps every significant harmonic
/// farthest from every mode's centre (in half-bandwidths), and what that
/// buys, the harmonics' amplitudes held as the period stretches.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Retune {
    /// How far the period was searched, ± %.
    pub range_pct: f64,
    /// The best period, ms.
    pub period_ms: f64,
    /// Its change from the current period, %.
    pub change_pct: f64,
    /// The smallest distance of any significant harmonic from any mode's
    /// centre, in that mode's half-bandwidths, at the current period.
    pub clearance_now: f64,
    /// The same at the best period.
    pub clearance_best: f64,
    /// In-band forcing, summed over the modes, at the current period, MW.
    pub forcing_now_mw: f64,
    /// The same at the best period, MW.
    pub forcing_best_mw: f64,
    /// The modes' responses summed at the current period, MW.
    pub response_now_mw: f64,
    /// The same at the best period, MW.
    pub response_best_mw: f64,
}

impl Retune {
    /// How many times smaller the modes' summed response is at the best
    /// period (None: no response at the best one).
    pub fn response_ratio(&self) -> Option<f64> {
        (self.response_best_mw > 0.0).then(|| self.response_now_mw / self.response_best_mw)
    }
}

/// Every mode's forcing, and the retuning.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModeStudy {
    /// The iteration's period, ms.
    pub period_ms: f64,
    /// The largest harmonic's amplitude, MW.
    pub largest_mw: f64,
    /// Per mode, in declared order.
    pub modes: Vec<ModeForcing>,
    /// The retuning (None: no tolerance to search).
    pub retune: Option<Retune>,
}

/// The harmonics k = 1 .. n/2 of one period `one_period_w` (W, evenly
/// spaced `step_ms` apart): amplitude 2 |c_k| with
/// c_k = (1/n) Σ x_j e^{−2πi jk/n} (|c_k| at the Nyquist bin), MW.
pub fn harmonics(one_period_w: &[f64], step_ms: f64) -> Vec<Harmonic> {
    let n = one_period_w.len();
    if n < 2 || step_ms.is_nan() || step_ms <= 0.0 {
        return Vec::new();
    }
    let buf = fft::of_real(one_period_w, 0.0);
    let period_s = n as f64 * step_ms / 1000.0;
    (1..=n / 2)
        .map(|k| {
            let sides = if 2 * k == n { 1.0 } else { 2.0 };
            Harmonic {
                k,
                hz: k as f64 / period_s,
                amplitude_mw: sides * buf[k].norm() / n as f64 / W_PER_MW,
            }
        })
        .collect()
}

/// The study over one period `one_period_w` (W, `step_ms` apart; the
/// period is their count × `step_ms`) of `modes`, the period searched
/// ± `retune_pct` % (0: not). None without a mode or a period to study.
pub fn mode_study(
    one_period_w: &[f64],
    step_ms: f64,
    modes: &[GridMode],
    retune_pct: f64,
) -> Option<ModeStudy> {
    let h = harmonics(one_period_w, step_ms);
    if modes.is_empty() || h.is_empty() {
        return None;
    }
    let period_ms = one_period_w.len() as f64 * step_ms;
    let largest_mw = h.iter().map(|x| x.amplitude_mw).fold(0.0, f64::max);
    let significant = significant(&h, largest_mw);
    let forcing = modes
        .iter()
        .map(|m| mode_forcing(m, &h, &significant))
        .collect();
    let retune = (retune_pct > 0.0).then(|| retune(&h, &significant, modes, period_ms, retune_pct));
    Some(ModeStudy {
        period_ms,
        largest_mw,
        modes: forcing,
        retune,
    })
}

/// The fundamental and every harmonic of at least [`SIGNIFICANT_SHARE`]
/// of the largest.
fn significant(h: &[Harmonic], largest_mw: f64) -> Vec<Harmonic> {
    h.iter()
        .filter(|x| {
            x.k == 1 || (largest_mw > 0.0 && x.amplitude_mw >= SIGNIFICANT_SHARE * largest_mw)
        })
        .copied()
        .collect()
}

/// A harmonic at `hz` is inside `band` (edges included).
fn inside(hz: f64, [lo, hi]: [f64; 2]) -> bool {
    hz >= lo && hz <= hi
}

/// One mode's forcing at the current period.
fn mode_forcing(m: &GridMode, h: &[Harmonic], significant: &[Harmonic]) -> ModeForcing {
    let band = m.band_hz();
    let in_band: Vec<Harmonic> = h.iter().filter(|x| inside(x.hz, band)).copied().collect();
    let forcing_mw = rss(in_band.iter().map(|x| x.amplitude_mw));
    let flagged = significant.iter().any(|x| inside(x.hz, band));
    let gap = |x: &Harmonic| (band[0] - x.hz).max(x.hz - band[1]).max(0.0);
    let nearest = in_band
        .is_empty()
        .then(|| {
            significant
                .iter()
                .min_by(|a, b| gap(a).total_cmp(&gap(b)))
                .map(|x| Nearest {
                    harmonic: *x,
                    gap_hz: gap(x),
                })
        })
        .flatten();
    ModeForcing {
        mode: m.clone(),
        band_lo_hz: band[0],
        band_hi_hz: band[1],
        damping_ratio: m.damping(),
        forcing_mw,
        nearest,
        flagged,
        response_mw: response(m, h.iter().map(|x| (x.hz, x.amplitude_mw))),
        in_band,
        unresolved_above_hz: None,
    }
}

/// The root-sum-square of `v` (+0 for none: an empty `sum` is −0).
fn rss(v: impl Iterator<Item = f64>) -> f64 {
    v.fold(0.0, |acc, x| acc + x * x).sqrt()
}

/// The amplification of a second-order oscillator of damping ζ at
/// r = f / f_mode: 1 / √((1 − r²)² + (2ζr)²).
pub fn amplification(r: f64, zeta: f64) -> f64 {
    1.0 / ((1.0 - r * r).powi(2) + (2.0 * zeta * r).powi(2)).sqrt()
}

/// Mode `m`'s response to harmonics `(hz, amplitude_mw)`: each amplitude
/// times the amplification at it, root-sum-square, MW.
fn response(m: &GridMode, h: impl Iterator<Item = (f64, f64)>) -> f64 {
    let z = m.damping();
    rss(h.map(|(hz, a)| a * amplification(hz / m.hz, z)))
}

/// The smallest distance of any of `significant`'s harmonics, at period
/// `period_ms`, from any mode's centre, in that mode's half-bandwidths.
fn clearance(significant: &[Harmonic], modes: &[GridMode], period_ms: f64) -> f64 {
    let period_s = period_ms / 1000.0;
    modes
        .iter()
        .flat_map(|m| {
            let half = m.half_bandwidth_hz();
            significant
                .iter()
                .map(move |x| (x.k as f64 / period_s - m.hz).abs() / half)
        })
        .fold(f64::INFINITY, f64::min)
}

/// In-band forcing summed over the modes and their summed response, the
/// harmonics `h` moved to period `period_ms` (amplitudes kept), MW.
fn at_period(h: &[Harmonic], modes: &[GridMode], period_ms: f64) -> (f64, f64) {
    let period_s = period_ms / 1000.0;
    let moved = || h.iter().map(|x| (x.k as f64 / period_s, x.amplitude_mw));
    modes.iter().fold((0.0, 0.0), |(f, r), m| {
        let band = m.band_hz();
        let forcing = rss(moved().filter(|(hz, _)| inside(*hz, band)).map(|x| x.1));
        (f + forcing, r + response(m, moved()))
    })
}

/// Every period within ± `pct` % of `period_ms` in [`RETUNE_STEPS`] steps
/// each side: the one of the largest clearance (the nearest to the
/// current period among equals), and the forcing and response there.
fn retune(
    h: &[Harmonic],
    significant: &[Harmonic],
    modes: &[GridMode],
    period_ms: f64,
    pct: f64,
) -> Retune {
    let steps = RETUNE_STEPS as i64;
    let mut best = (clearance(significant, modes, period_ms), 0.0_f64);
    let clearance_now = best.0;
    for i in 1..=steps {
        for sign in [-1.0, 1.0] {
            let change = sign * pct * i as f64 / steps as f64;
            let c = clearance(significant, modes, period_ms * (1.0 + change / 100.0));
            if c > best.0 * (1.0 + 1e-12) {
                best = (c, change);
            }
        }
    }
    let best_ms = period_ms * (1.0 + best.1 / 100.0);
    let (forcing_now_mw, response_now_mw) = at_period(h, modes, period_ms);
    let (forcing_best_mw, response_best_mw) = at_period(h, modes, best_ms);
    Retune {
        range_pct: pct,
        period_ms: best_ms,
        change_pct: best.1,
        clearance_now,
        clearance_best: best.0,
        forcing_now_mw,
        forcing_best_mw,
        response_now_mw,
        response_best_mw,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
    use super::*;

    /// One 2 s period of a square wave of height `height_mw`, duty
    /// `duty`, 0.1 ms apart (20,000 points), W.
    fn square(height_mw: f64, duty: f64) -> Vec<f64> {
        let n = 20_000;
        let on = (duty * n as f64).round() as usize;
        (0..n)
            .map(|j| if j < on { height_mw * W_PER_MW } else { 0.0 })
            .collect()
    }

    fn mode(hz: f64, bandwidth_hz: Option<f64>, damping_ratio: Option<f64>) -> GridMode {
        GridMode {
            name: format!("m{hz}"),
            hz,
            bandwidth_hz,
            damping_ratio,
        }
    }

    /// Harmonic k of a square wave of duty D and height A: (2A/(πk))|sin(πkD)|.
    fn series_mw(a_mw: f64, duty: f64, k: usize) -> f64 {
        let k = k as f64;
        2.0 * a_mw / (std::f64::consts::PI * k) * (std::f64::consts::PI * k * duty).sin().abs()
    }

    #[test]
    fn a_square_waves_harmonics_are_its_fourier_series() {
        let (a, d) = (80.0, 0.3);
        // A band 0.05–5.95 Hz: harmonics 1–11 of the 2 s period.
        let m = mode(3.0, Some(5.9), None);
        let s = mode_study(&square(a, d), 0.1, &[m], 0.0).unwrap();
        let f = &s.modes[0];
        assert_eq!(f.in_band.len(), 11);
        for x in &f.in_band {
            let want = series_mw(a, d, x.k);
            assert!((x.hz - x.k as f64 * 0.5).abs() < 1e-12, "{x:?}");
            if x.k % 10 == 0 {
                assert!(x.amplitude_mw < 1e-6 * a, "{x:?}");
                continue;
            }
            let off = (x.amplitude_mw - want).abs() / want;
            assert!(
                off < 0.005,
                "k {}: {} MW against {want} MW",
                x.k,
                x.amplitude_mw
            );
        }
        let want_rss = rss((1..=11).map(|k| series_mw(a, d, k)));
        assert!((f.forcing_mw - want_rss).abs() / want_rss < 0.005);
        assert!(f.flagged && f.nearest.is_none());
        assert!(s.retune.is_none());
        assert!((s.largest_mw - series_mw(a, d, 1)).abs() / s.largest_mw < 0.005);
    }

    #[test]
    fn a_mode_on_the_third_harmonic_is_flagged_and_retuned_away() {
        let (a, d) = (80.0, 0.3);
        // 1.5 Hz is the 3rd harmonic of 2 s; ζ 0.02: the band 1.47–1.53 Hz.
        let m = mode(1.5, None, Some(0.02));
        let s = mode_study(&square(a, d), 0.1, std::slice::from_ref(&m), 10.0).unwrap();
        let f = &s.modes[0];
        assert!(f.flagged, "{f:?}");
        assert_eq!(f.in_band.iter().map(|x| x.k).collect::<Vec<_>>(), [3]);
        let want = series_mw(a, d, 3);
        assert!((f.forcing_mw - want).abs() / want < 0.005);
        let r = s.retune.unwrap();
        assert!(r.clearance_now < 1e-9, "{r:?}");
        // Out of the band: every significant harmonic over a half-band away.
        assert!(r.clearance_best > 1.0, "{r:?}");
        assert!(r.change_pct.abs() <= 10.0 && r.change_pct != 0.0);
        assert!((r.period_ms - 2000.0 * (1.0 + r.change_pct / 100.0)).abs() < 1e-9);
        assert!((r.forcing_now_mw - want).abs() / want < 0.005);
        assert!(r.forcing_best_mw < 0.5 * r.forcing_now_mw, "{r:?}");
        // On resonance the mode amplifies 1/(2ζ) = 25×; retuned, what is
        // left is mostly the harmonics below the mode, passed about 1:1.
        assert!(r.response_now_mw >= 25.0 * r.forcing_now_mw, "{r:?}");
        assert!(r.response_ratio().unwrap() > 1.5, "{r:?}");
        // The clearance reported is the one independently computed.
        let p_s = r.period_ms / 1000.0;
        let sig = significant(&harmonics(&square(a, d), 0.1), s.largest_mw);
        let c = sig
            .iter()
            .map(|x| (x.k as f64 / p_s - 1.5).abs() / 0.03)
            .fold(f64::INFINITY, f64::min);
        assert!((c - r.clearance_best).abs() < 1e-9);
    }

    #[test]
    fn a_mode_between_harmonics_is_not_flagged() {
        let (a, d) = (80.0, 0.3);
        // 1.25–1.35 Hz: between the 2nd (1 Hz) and 3rd (1.5 Hz) harmonic.
        let m = mode(1.3, Some(0.1), None);
        let s = mode_study(&square(a, d), 0.1, &[m], 0.0).unwrap();
        let f = &s.modes[0];
        assert!(!f.flagged && f.in_band.is_empty() && f.forcing_mw == 0.0);
        let n = f.nearest.unwrap();
        assert_eq!(n.harmonic.k, 3);
        assert!((n.gap_hz - 0.15).abs() < 1e-9, "{n:?}");
        let want = series_mw(a, d, 3);
        assert!((n.harmonic.amplitude_mw - want).abs() / want < 0.005);
    }

    #[test]
    fn the_amplification_peaks_at_one_over_two_zeta() {
        assert!((amplification(1.0, 0.05) - 10.0).abs() < 1e-12);
        assert!((amplification(0.0, 0.05) - 1.0).abs() < 1e-12);
        assert!(amplification(10.0, 0.05) < 0.011);
    }
}
