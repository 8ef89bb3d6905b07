//! What a grid did in one window, from its series (the simulator's, or
//! the screen's linear playback: the same arithmetic for both): the
//! largest |Δf| at the bus and the centre of inertia, RoCoF over 100 ms
//! and 500 ms, the steady oscillation's peak-to-peak in frequency and on
//! the tie, the settling after an event, and the event's load step.

use serde::Serialize;

/// The RoCoF windows, s.
pub const ROCOF_WINDOWS_S: [f64; 2] = [0.1, 0.5];
/// After an event, the frequency has settled once it stays within this
/// share of its largest deviation from its final level ...
pub const SETTLE_SHARE: f64 = 0.1;
/// ... or within this many mHz, whichever is wider.
pub const SETTLE_FLOOR_MHZ: f64 = 1.0;
/// The final level: the mean over the window's last this many s.
pub const FINAL_S: f64 = 2.0;
/// mHz per Hz.
pub const MHZ_PER_HZ: f64 = 1000.0;

/// A window's series, absolute values, one row per step.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    /// The step, s.
    pub step_s: f64,
    /// The facility's load, MW.
    pub p_mw: Vec<f64>,
    /// The bus frequency, Hz.
    pub f_bus_hz: Vec<f64>,
    /// The centre of inertia's frequency, Hz.
    pub f_coi_hz: Vec<f64>,
    /// The tie flow, MW (empty: no tie).
    pub p_tie_mw: Vec<f64>,
}

/// What kind of window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowKind {
    /// The steady job: the oscillation is read over its second half.
    Steady,
    /// Around an event at `lead_s` into the window.
    Event {
        /// From the window's start to the event, s.
        lead_ms: u32,
    },
}

/// A window's figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Response {
    /// Largest |f − f(0)| at the bus, mHz.
    pub max_df_bus_mhz: f64,
    /// At the centre of inertia, mHz.
    pub max_df_coi_mhz: f64,
    /// Largest |Δf| over 100 ms at the bus, Hz/s.
    pub rocof_bus_100ms_hz_per_s: f64,
    /// Over 500 ms at the bus.
    pub rocof_bus_500ms_hz_per_s: f64,
    /// Over 100 ms at the centre of inertia.
    pub rocof_coi_100ms_hz_per_s: f64,
    /// Over 500 ms at the centre of inertia.
    pub rocof_coi_500ms_hz_per_s: f64,
    /// A steady window's oscillation, peak-to-peak over its second half:
    /// bus frequency, mHz (None: an event window).
    pub osc_pp_bus_mhz: Option<f64>,
    /// The same at the centre of inertia, mHz.
    pub osc_pp_coi_mhz: Option<f64>,
    /// The same on the tie, MW (None also without a tie).
    pub osc_pp_tie_mw: Option<f64>,
    /// An event's load step: the mean over the last [`FINAL_S`] minus
    /// the mean before the event, MW.
    pub load_step_mw: Option<f64>,
    /// From the event until the bus frequency stays within its settling
    /// band, s.
    pub settling_s: Option<f64>,
    /// Whether it had settled by the window's end (false: `settling_s` is
    /// the time to the window's end, a lower bound).
    pub settled: Option<bool>,
}

fn max_abs_dev(v: &[f64]) -> f64 {
    let v0 = v.first().copied().unwrap_or(0.0);
    v.iter().map(|x| (x - v0).abs()).fold(0.0, f64::max)
}

fn pp(v: &[f64]) -> f64 {
    let (lo, hi) = v
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(*x), b.max(*x))
        });
    if hi >= lo { hi - lo } else { 0.0 }
}

/// The largest |v(t + w) − v(t)| / w over the series, with w the
/// nearest whole number of steps to `window_s` (at least one).
pub fn rocof(v: &[f64], step_s: f64, window_s: f64) -> f64 {
    let n = ((window_s / step_s).round() as usize).max(1);
    if v.len() <= n {
        return 0.0;
    }
    let w = n as f64 * step_s;
    v.iter()
        .zip(&v[n..])
        .map(|(a, b)| (b - a).abs() / w)
        .fold(0.0, f64::max)
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.iter().sum::<f64>() / v.len() as f64
}

/// The figures of `s`, a window of `kind`.
pub fn response(s: &Series, kind: WindowKind) -> Response {
    let st = s.step_s.max(f64::MIN_POSITIVE);
    let n = s.f_bus_hz.len();
    let half = n / 2;
    let (steady, lead) = match kind {
        WindowKind::Steady => (true, 0),
        WindowKind::Event { lead_ms } => (
            false,
            ((f64::from(lead_ms) / 1000.0 / st).round() as usize).min(n),
        ),
    };
    let osc = |v: &[f64]| (steady && !v.is_empty()).then(|| pp(&v[half.min(v.len())..]));
    let final_n = ((FINAL_S / st).round() as usize).clamp(1, n.max(1));
    let (load_step_mw, settling_s, settled) = if steady || n == 0 {
        (None, None, None)
    } else {
        let before = mean(&s.p_mw[..lead.max(1).min(s.p_mw.len())]);
        let after = mean(&s.p_mw[s.p_mw.len().saturating_sub(final_n)..]);
        let (t, ok) = settling(&s.f_bus_hz, lead, final_n, st);
        (Some(after - before), Some(t), Some(ok))
    };
    // A steady window is judged on its settled half, from that half's own
    // level: the playback starts at the window's first row, and the step
    // from there into the oscillating job (and the level the governors
    // then settle at) set its largest |Δf| by where the window began
    // (26.6 to 50.7 mHz for one job as the step changed, a hostile review).
    let judged = |v: &'_ [f64]| -> Vec<f64> {
        if steady {
            let tail = &v[half.min(v.len())..];
            let m = mean(tail);
            std::iter::once(m).chain(tail.iter().copied()).collect()
        } else {
            v.to_vec()
        }
    };
    let (bus, coi) = (judged(&s.f_bus_hz), judged(&s.f_coi_hz));
    let slope = |v: &[f64], w: f64| rocof(if steady { &v[1.min(v.len())..] } else { v }, st, w);
    Response {
        max_df_bus_mhz: MHZ_PER_HZ * max_abs_dev(&bus),
        max_df_coi_mhz: MHZ_PER_HZ * max_abs_dev(&coi),
        rocof_bus_100ms_hz_per_s: slope(&bus, ROCOF_WINDOWS_S[0]),
        rocof_bus_500ms_hz_per_s: slope(&bus, ROCOF_WINDOWS_S[1]),
        rocof_coi_100ms_hz_per_s: slope(&coi, ROCOF_WINDOWS_S[0]),
        rocof_coi_500ms_hz_per_s: slope(&coi, ROCOF_WINDOWS_S[1]),
        osc_pp_bus_mhz: osc(&s.f_bus_hz).map(|x| MHZ_PER_HZ * x),
        osc_pp_coi_mhz: osc(&s.f_coi_hz).map(|x| MHZ_PER_HZ * x),
        osc_pp_tie_mw: osc(&s.p_tie_mw),
        load_step_mw,
        settling_s,
        settled,
    }
}

/// From index `lead` (the event) to the last point outside the settling
/// band around the final level (the mean of the last `final_n`), s, and
/// whether the band was reached before the final stretch.
fn settling(f: &[f64], lead: usize, final_n: usize, step_s: f64) -> (f64, bool) {
    let n = f.len();
    let fin = mean(&f[n.saturating_sub(final_n)..]);
    let after = &f[lead.min(n)..];
    let worst = after.iter().map(|x| (x - fin).abs()).fold(0.0, f64::max);
    let band = (SETTLE_SHARE * worst).max(SETTLE_FLOOR_MHZ / MHZ_PER_HZ);
    let last_out = after.iter().rposition(|x| (x - fin).abs() > band);
    match last_out {
        None => (0.0, true),
        Some(i) => {
            let t = (i + 1) as f64 * step_s;
            (t, lead + i + 1 < n.saturating_sub(final_n))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ramp_has_its_slope_as_rocof_and_a_sine_its_peak_to_peak() {
        let step_s = 0.02;
        // 60 Hz falling at 0.2 Hz/s for 2 s, then flat for 8 s.
        let f: Vec<f64> = (0..500)
            .map(|i| 60.0 - 0.2 * (i as f64 * step_s).min(2.0))
            .collect();
        let p: Vec<f64> = (0..500)
            .map(|i| if i < 100 { 100.0 } else { 60.0 })
            .collect();
        let s = Series {
            step_s,
            p_mw: p,
            f_bus_hz: f.clone(),
            f_coi_hz: f,
            p_tie_mw: Vec::new(),
        };
        let r = response(&s, WindowKind::Event { lead_ms: 2000 });
        assert!((r.rocof_bus_100ms_hz_per_s - 0.2).abs() < 1e-9, "{r:?}");
        assert!((r.rocof_coi_500ms_hz_per_s - 0.2).abs() < 1e-9, "{r:?}");
        assert!((r.max_df_bus_mhz - 400.0).abs() < 1e-6, "{r:?}");
        assert_eq!(r.load_step_mw, Some(-40.0));
        assert_eq!(r.osc_pp_tie_mw, None);
        // Flat from the event on: settled at once.
        assert_eq!((r.settling_s, r.settled), (Some(0.0), Some(true)));
        // A sine of 5 mHz amplitude: 10 mHz peak-to-peak.
        let f: Vec<f64> = (0..3000)
            .map(|i| 60.0 + 0.005 * (2.0 * std::f64::consts::PI * 0.5 * i as f64 * step_s).sin())
            .collect();
        let s = Series {
            step_s,
            p_mw: vec![100.0; 3000],
            f_bus_hz: f.clone(),
            f_coi_hz: f,
            p_tie_mw: vec![400.0; 3000],
        };
        let r = response(&s, WindowKind::Steady);
        let pp = r.osc_pp_bus_mhz.unwrap_or(0.0);
        assert!((pp - 10.0).abs() < 0.01, "{r:?}");
        assert!((r.max_df_bus_mhz - 5.0).abs() < 0.01, "{r:?}");
        assert_eq!(r.osc_pp_tie_mw, Some(0.0));
        assert_eq!(r.load_step_mw, None);
    }

    #[test]
    fn a_steady_window_is_judged_on_its_settled_half_whatever_its_first_row() {
        // The same 5 mHz oscillation, once from a playback that started
        // 40 mHz away from the level it settles at (a step into the job
        // from the window's first row, decaying), once from its own level.
        let step_s = 0.02;
        let sine = |i: usize| 0.005 * (2.0 * std::f64::consts::PI * 0.5 * i as f64 * step_s).sin();
        let decay = |i: usize| 0.040 * (-(i as f64) * step_s / 2.0).exp();
        let series = |f: Vec<f64>| Series {
            step_s,
            p_mw: vec![100.0; 3000],
            f_bus_hz: f.clone(),
            f_coi_hz: f,
            p_tie_mw: Vec::new(),
        };
        let stepped = response(
            &series(
                (0..3000)
                    .map(|i| 60.0 - 0.040 + decay(i) + sine(i))
                    .collect(),
            ),
            WindowKind::Steady,
        );
        let plain = response(
            &series((0..3000).map(|i| 60.0 + sine(i)).collect()),
            WindowKind::Steady,
        );
        for r in [&stepped, &plain] {
            assert!((r.max_df_bus_mhz - 5.0).abs() < 0.05, "{r:?}");
            assert!(r.rocof_bus_500ms_hz_per_s < 0.02, "{r:?}");
        }
    }
}
