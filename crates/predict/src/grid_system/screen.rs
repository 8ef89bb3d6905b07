//! The analytic screen: the steady forced response of the job's
//! facility waveform through the modal model. Every harmonic c_k of one
//! iteration of a scenario's expected waveform (an FFT of it, not a
//! square wave) is multiplied by H(j·2π·k/T) and the sum rebuilt over one
//! period (an inverse FFT): its peak-to-peak is the steady oscillation.
//! Swept over the iteration period (the iteration's shape scales with the
//! period: each harmonic keeps its complex amplitude, as the mode study's
//! retuning assumes), and per GPU (the response is linear in the load),
//! it gives the largest GPU count within the declared limits.

use super::model::{F_BUS, F_COI, ModalModel, P_TIE};
use powerlab_analysis::fft::{self, Complex};
use powerlab_analysis::grid::modes::SIGNIFICANT_SHARE;
use powerlab_core::units::W_PER_MW;
use serde::Serialize;

/// The sweep's periods, s: 0.3 to 10 s, log-spaced.
pub const SWEEP_S: (f64, f64) = (0.3, 10.0);
/// Periods in the sweep: 0.58 % apart, a fifth of the half-power band of
/// a 3 %-damped mode.
pub const SWEEP_POINTS: usize = 600;
/// Harmonics above this are left out of the response, Hz (the top of the
/// spec's bands; the electromechanical model says nothing above it).
pub const MAX_HARMONIC_HZ: f64 = 30.0;
/// A mode matters where its own peak gain on some output reaches this
/// share of the largest mode's on that output.
pub const MODE_SIGNIFICANT_SHARE: f64 = 0.1;
/// A mode damped more than this has no resonance to meet (its
/// half-power band spans most of its frequency): never a danger band.
pub const MAX_RESONANT_DAMPING: f64 = 0.3;
/// The spec's bands, Hz (arXiv 2508.14318).
pub const SPEC_BANDS_HZ: [[f64; 2]; 3] = [[0.1, 2.0], [2.0, 20.0], [20.0, 30.0]];
/// Periods tried on each side of the job's own when retuning.
pub const RETUNE_STEPS: usize = 200;

/// A mode's place in the screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModeKind {
    /// The oscillatory mode below 1 Hz that swings the tie (or the bus
    /// where there is no tie) most.
    InterArea,
    /// Another oscillatory mode that matters.
    Oscillatory,
    /// A mode too weak at the facility's bus to matter, too damped to
    /// resonate, or a real one.
    Minor,
}

/// One mode as the screen sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScreenMode {
    /// Its kind.
    pub kind: ModeKind,
    /// Its frequency, Hz (0: a real mode).
    pub freq_hz: f64,
    /// Its damping ratio.
    pub damping_ratio: f64,
    /// Its half-power band, Hz: freq ± |re| / 2π.
    pub band_hz: [f64; 2],
    /// The facility bus's participation, 0..1.
    pub bus_participation: f64,
    /// Its own peak gain |R| / |re| per output: bus and COI frequency in
    /// mHz per MW, the tie in MW per MW.
    pub peak_gain: [f64; 3],
}

/// The modes of `m`, classified.
pub fn modes(m: &ModalModel) -> Vec<ScreenMode> {
    let tau = 2.0 * std::f64::consts::PI;
    let mut out: Vec<ScreenMode> = m
        .modes
        .iter()
        .map(|x| {
            let g = |k: usize| {
                let [a, b] = x.residues[k];
                let per = if k == P_TIE { 1.0 } else { 1000.0 };
                per * a.hypot(b) / x.re.abs().max(f64::MIN_POSITIVE)
            };
            let f = x.im / tau;
            let half = x.re.abs() / tau;
            ScreenMode {
                kind: ModeKind::Minor,
                freq_hz: f,
                damping_ratio: x.damping_ratio,
                band_hz: [(f - half).max(0.0), f + half],
                bus_participation: x.bus_participation,
                peak_gain: [g(F_BUS), g(F_COI), g(P_TIE)],
            }
        })
        .collect();
    let largest: Vec<f64> = (0..3)
        .map(|k| {
            out.iter()
                .filter(|x| x.freq_hz > 0.0 && x.damping_ratio < MAX_RESONANT_DAMPING)
                .map(|x| x.peak_gain[k])
                .fold(0.0, f64::max)
        })
        .collect();
    for x in out.iter_mut() {
        let matters = (0..3).any(|k| {
            (k != P_TIE || m.has_tie())
                && largest[k] > 0.0
                && x.peak_gain[k] >= MODE_SIGNIFICANT_SHARE * largest[k]
        });
        let resonant = x.damping_ratio < MAX_RESONANT_DAMPING;
        if x.freq_hz > 0.0 && x.freq_hz <= MAX_HARMONIC_HZ && resonant && matters {
            x.kind = ModeKind::Oscillatory;
        }
    }
    let key = if m.has_tie() { P_TIE } else { F_BUS };
    let inter = out
        .iter()
        .enumerate()
        .filter(|(_, x)| x.kind == ModeKind::Oscillatory && x.freq_hz < 1.0)
        .max_by(|a, b| a.1.peak_gain[key].total_cmp(&b.1.peak_gain[key]))
        .map(|(i, _)| i);
    if let Some(i) = inter {
        out[i].kind = ModeKind::InterArea;
    }
    out
}

/// One iteration's harmonics per GPU, MW: c_k for k = 1 .. n/2 (the
/// two-sided complex amplitude: the k-th harmonic is 2 |c_k| peak).
pub fn harmonics(expected_w: &[f64], gpus: u64) -> Vec<Complex<f64>> {
    let n = expected_w.len();
    if n < 2 {
        return Vec::new();
    }
    let buf = fft::of_real(expected_w, 0.0);
    let scale = 1.0 / (n as f64 * W_PER_MW * gpus.max(1) as f64);
    buf[1..=n / 2].iter().map(|c| *c * scale).collect()
}

/// The harmonics that matter: at least [`SIGNIFICANT_SHARE`] of the
/// largest's amplitude, the fundamental always (numbers from 1).
pub fn significant(c: &[Complex<f64>]) -> Vec<usize> {
    let top = c.iter().map(|x| x.norm()).fold(0.0, f64::max);
    c.iter()
        .enumerate()
        .filter(|(i, x)| *i == 0 || (top > 0.0 && x.norm() >= SIGNIFICANT_SHARE * top))
        .map(|(i, _)| i + 1)
        .collect()
}

/// The steady oscillation's peak-to-peak per output at `period_s` for
/// `gpus` GPUs: bus and COI frequency in mHz, the tie in MW (NaN without
/// a tie).
pub fn steady_pp(m: &ModalModel, c: &[Complex<f64>], period_s: f64, gpus: f64) -> [f64; 3] {
    let k_max = ((MAX_HARMONIC_HZ * period_s).floor() as usize).clamp(1, c.len().max(1));
    let k_max = k_max.min(c.len());
    if k_max == 0 {
        return [0.0, 0.0, if m.has_tie() { 0.0 } else { f64::NAN }];
    }
    let size = (8 * k_max).next_power_of_two().max(64);
    let ifft = fft::plan_inverse(size);
    let mut out = [0.0; 3];
    for (k_out, o) in out.iter_mut().enumerate() {
        if k_out == P_TIE && !m.has_tie() {
            *o = f64::NAN;
            continue;
        }
        let mut y = vec![Complex::new(0.0, 0.0); size];
        for k in 1..=k_max {
            let v = c[k - 1] * m.h(k_out, k as f64 / period_s) * gpus;
            y[k] = v;
            y[size - k] = v.conj();
        }
        ifft.process(&mut y);
        let (lo, hi) = y
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v.re), b.max(v.re))
            });
        let per = if k_out == P_TIE { 1.0 } else { 1000.0 };
        *o = per * (hi - lo);
    }
    out
}

/// Every mode's band that a significant harmonic falls in at
/// `period_s`: (mode index, the lowest such harmonic number), in the
/// modes' order.
pub fn danger(modes: &[ScreenMode], sig: &[usize], period_s: f64) -> Vec<(usize, usize)> {
    modes
        .iter()
        .enumerate()
        .filter(|(_, x)| x.kind != ModeKind::Minor)
        .filter_map(|(i, x)| {
            sig.iter()
                .find(|k| {
                    let f = **k as f64 / period_s;
                    f >= x.band_hz[0] && f <= x.band_hz[1]
                })
                .map(|k| (i, *k))
        })
        .collect()
}

/// The declared limits on the steady oscillation: bus and COI frequency
/// (mHz), the tie (MW).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Limits {
    /// mHz, on the bus and the COI frequency.
    pub pp_mhz: Option<f64>,
    /// MW on the tie.
    pub pp_tie_mw: Option<f64>,
}

impl Limits {
    /// The largest of each declared figure over its limit (None: no
    /// limit declared); and which output sets it.
    pub fn load(&self, pp: [f64; 3]) -> Option<(f64, usize)> {
        let mut worst: Option<(f64, usize)> = None;
        let mut put = |x: f64, k: usize| {
            if x.is_finite() && worst.is_none_or(|w| x > w.0) {
                worst = Some((x, k));
            }
        };
        if let Some(l) = self.pp_mhz {
            put(pp[F_BUS] / l, F_BUS);
            put(pp[F_COI] / l, F_COI);
        }
        if let Some(l) = self.pp_tie_mw {
            put(pp[P_TIE] / l, P_TIE);
        }
        worst
    }
}

/// The log-spaced periods of the sweep, s: [`SWEEP_S`], reaching down or
/// up to the job's own period where it lies outside (a 221 ms step is
/// swept from 0.18 s), with the job's own.
pub fn sweep_periods(job_s: f64) -> Vec<f64> {
    let a = SWEEP_S.0.min(0.8 * job_s);
    let b = SWEEP_S.1.max(1.25 * job_s);
    let n = SWEEP_POINTS as f64 * ((b / a).ln() / (SWEEP_S.1 / SWEEP_S.0).ln()).max(1.0);
    let n = n.round() as usize;
    let mut v: Vec<f64> = (0..n)
        .map(|i| a * (b / a).powf(i as f64 / (n - 1) as f64))
        .collect();
    v.push(job_s);
    v.sort_unstable_by(f64::total_cmp);
    v
}

/// A spec band (Hz) and its share of the fluctuation, % (low, high; None:
/// no fluctuation).
pub type BandShare = ([f64; 2], Option<(f64, f64)>);

/// Each spec band's share of the fluctuation's variance in one iteration,
/// % (low, high): equal where the measured cycles resolve the band,
/// bounded where it reaches above `highest_hz` (the waveform's content
/// there counted outside, then inside, as the report's band share).
pub fn band_shares(expected_w: &[f64], period_ms: f64, highest_hz: f64) -> Vec<BandShare> {
    use powerlab_analysis::grid::shape;
    let step_s = period_ms / 1000.0 / expected_w.len().max(1) as f64;
    SPEC_BANDS_HZ
        .iter()
        .map(|b| {
            let s = if b[1] > highest_hz {
                shape::band_share_bounds(
                    expected_w,
                    step_s,
                    *b,
                    highest_hz,
                    shape::Unresolved::AsDrawn,
                )
            } else {
                shape::band_share(expected_w, step_s, *b).map(|x| (x, x))
            };
            (*b, s.map(|(lo, hi)| (100.0 * lo, 100.0 * hi)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test that unwraps reports its failure by panicking
    use super::super::model::tests::one_mode;
    use super::*;

    /// A square wave per GPU: 700 W for 3/4 of 1000 points, 100 W after.
    fn square() -> Vec<f64> {
        (0..1000)
            .map(|i| if i < 750 { 700.0 } else { 100.0 })
            .collect()
    }

    #[test]
    fn the_steady_response_peaks_where_the_fundamental_meets_the_mode() {
        let m = one_mode(0.05);
        let c = harmonics(&square(), 1);
        let sig = significant(&c);
        assert_eq!(sig[0], 1);
        let ms = modes(&m);
        assert_eq!(ms[0].kind, ModeKind::InterArea);
        let at = |t: f64| steady_pp(&m, &c, t, 1000.0)[F_BUS];
        let res = 1.0 / m.modes[0].freq_hz;
        // At resonance the fundamental dominates: 2 |c1| |H| · 2 peak to peak.
        let want = 2.0 * 2.0 * c[0].norm() * m.h(0, 1.0 / res).norm() * 1000.0 * 1000.0;
        let got = at(res);
        assert!((got - want).abs() < 0.1 * want, "{got} vs {want}");
        // One second away the oscillation is several times smaller.
        assert!(at(res + 1.0) < 0.5 * got, "{} vs {got}", at(res + 1.0));
        assert_eq!(danger(&ms, &sig, res), vec![(0, 1)]);
        assert!(danger(&ms, &sig, res + 1.0).is_empty());
        // Linear in the GPU count.
        let two = steady_pp(&m, &c, res, 2000.0)[F_BUS];
        assert!((two - 2.0 * got).abs() < 1e-9 * got);
    }

    #[test]
    fn a_flat_load_has_no_oscillation_and_the_bands_hold_the_square() {
        let m = one_mode(0.05);
        let c = harmonics(&[500.0; 64], 1);
        assert!(steady_pp(&m, &c, 1.7, 1e5)[F_BUS] < 1e-9);
        let b = band_shares(&square(), 1000.0, 100.0);
        // A 1 Hz square wave: most of its variance at 1 Hz (0.1–2 Hz).
        let (lo, hi) = b[0].1.unwrap();
        assert_eq!(lo, hi);
        assert!(lo > 70.0 && lo < 100.0, "{b:?}");
        // Above 100 Hz the measured cycles hold nothing: 20–30 Hz bounded
        // (its content is resolved, the rest above counted in or out).
        let b = band_shares(&square(), 1000.0, 25.0);
        let (lo, hi) = b[2].1.unwrap();
        assert!(hi > lo, "{b:?}");
        let l = Limits {
            pp_mhz: Some(10.0),
            pp_tie_mw: None,
        };
        assert_eq!(l.load([5.0, 20.0, f64::NAN]), Some((2.0, F_COI)));
    }
}
