//! One GPU's iteration, built from measured cycles: the measured rise
//! (with its overshoot) runs for the iteration's compute phase, the
//! measured fall for its communication phase, each cut short or held at
//! its settled level where the target phase is shorter or longer than the
//! measured one, and scaled to the levels it starts from and falls to.
//! Between two measured periods the two cycles' iterations are blended,
//! linear in the logarithm of the period.
//!
//! With the measured period, duty and off level the iteration is the
//! measured cycle itself (tested): the splice invents nothing there.

use super::response::{Measured, same_period};

/// What one GPU runs each iteration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Target {
    /// The iteration, ms.
    pub period_ms: f64,
    /// The compute phase's share of it.
    pub compute_fraction: f64,
    /// What a GPU draws while it communicates, W (None: the measured
    /// off-phase's own level).
    pub comm_w: Option<f64>,
    /// The points' spacing, ms.
    pub step_ms: f64,
    /// A mitigation's floor holds: the communication level is never below
    /// the measured off level.
    pub floor_holds: bool,
    /// One GPU's draw in the run's sustained rung, W: what an on-phase
    /// held past the measured one relaxes to (the power limit's average).
    pub sustained_w: Option<f64>,
}

/// How long an on-phase held past the measured one takes to relax from
/// where the measured on-phase ended to the sustained level, ms: the
/// enforced power limit averages over about 1 s.
pub const RELAX_MS: f64 = 1_000.0;

/// A cycle whose on−off step is under this share of its range never
/// settles (a ramp that fills its phases): its edges are not rescaled.
pub const SETTLED_SHARE: f64 = 0.25;

impl Target {
    /// Points in one iteration.
    pub fn points(&self) -> usize {
        ((self.period_ms / self.step_ms).round() as usize).max(2)
    }
}

/// `v` (one cyclic period of `period_ms`, point j at j · period / len)
/// at `t_ms`, linearly interpolated.
pub fn at(v: &[f64], period_ms: f64, t_ms: f64) -> f64 {
    let m = v.len();
    let x = (t_ms / period_ms).rem_euclid(1.0) * m as f64;
    let j = (x.floor() as usize).min(m - 1);
    let f = x - j as f64;
    v[j] * (1.0 - f) + v[(j + 1) % m] * f
}

/// The mean of `v` over `[from_ms, to_ms)` of its period, sampled at its
/// own points.
fn mean_over(v: &[f64], period_ms: f64, from_ms: f64, to_ms: f64) -> f64 {
    let m = v.len();
    let (a, b) = (
        (from_ms / period_ms * m as f64).floor() as usize,
        ((to_ms / period_ms * m as f64).ceil() as usize).min(m),
    );
    let (a, b) = (a.min(b.saturating_sub(1)), b.max(a + 1).min(m));
    v[a..b].iter().sum::<f64>() / (b - a) as f64
}

/// A measured cycle's settled levels: the second half of its on-phase,
/// the last quarter of its off-phase.
#[derive(Debug, Clone, Copy)]
struct Levels {
    on_w: f64,
    off_w: f64,
}

fn levels(m: &Measured, v: &[f64]) -> Levels {
    let p = m.period_ms;
    let d = m.duty * p;
    Levels {
        on_w: mean_over(v, p, 0.5 * d, d),
        off_w: mean_over(v, p, p - 0.25 * (p - d), p),
    }
}

/// The cycle a GPU slot follows: the run's GPU `slot` mod n, or the mean
/// of the run's GPUs (None).
fn values(m: &Measured, slot: Option<usize>) -> &[f64] {
    match slot {
        Some(s) if !m.gpu_each.is_empty() => &m.gpu_each[s % m.gpu_each.len()],
        _ => &m.gpu_w,
    }
}

/// One iteration of one GPU from the measured cycle `m` (the mean of the
/// run's GPUs), at `t.step_ms`, phase 0 at the compute phase's start.
pub fn splice(m: &Measured, t: &Target) -> Vec<f64> {
    splice_slot(m, t, None)
}

/// How far before a recorded edge the measured cycle already moves, ms:
/// its edges are smoothed over its resolution, so the part of a rise (a
/// fall) before its recorded edge belongs to that edge, not to the phase
/// before it. Twice the resolution, at most a quarter of the shorter
/// measured phase.
pub fn lead_ms(m: &Measured) -> f64 {
    let d = m.duty * m.period_ms;
    (2.0 * m.resolution_ms)
        .min(0.25 * d.min(m.period_ms - d))
        .max(0.0)
}

/// The measured cycle's pieces an iteration is spliced from, in the
/// measured cycle's phase (0 at its rising edge, `d` at its falling one).
/// Each edge's lead (the `lead` ms before it) is cut from the phase
/// before it and laid before the spliced edge wherever that falls.
struct Pieces<'a> {
    v: &'a [f64],
    /// Measured period and on-phase, ms.
    p: f64,
    d: f64,
    lead: f64,
    /// The level where the fall's lead starts (the on-phase's end) and
    /// where the rise's lead starts (the off-phase's end), W.
    on_end_w: f64,
    off_w: f64,
    /// The level a compute phase held past the measured one relaxes to.
    held_w: f64,
}

impl Pieces<'_> {
    /// The compute phase's body `x` ms after its start: the measured
    /// on-phase up to the fall's lead, then relaxing from there to the
    /// held level over [`RELAX_MS`].
    fn rise(&self, x: f64) -> f64 {
        let cut = self.d - self.lead;
        if x < cut {
            at(self.v, self.p, x)
        } else {
            let f = ((x - cut) / RELAX_MS).min(1.0);
            self.on_end_w + (self.held_w - self.on_end_w) * f
        }
    }

    /// The communication phase's body `y` ms after its start: the
    /// measured off-phase up to the rise's lead, then held.
    fn fall(&self, y: f64) -> f64 {
        if y < self.p - self.d - self.lead {
            at(self.v, self.p, self.d + y)
        } else {
            self.off_w
        }
    }

    /// The fall's lead `u` ms into it, against the level it starts from.
    fn fall_lead(&self, u: f64) -> f64 {
        at(self.v, self.p, self.d - self.lead + u) - self.on_end_w
    }

    /// The rise's lead `u` ms into it, against the level it starts from.
    fn rise_lead(&self, u: f64) -> f64 {
        at(self.v, self.p, self.p - self.lead + u) - self.off_w
    }
}

/// [`splice`] of the run's GPU `slot` mod n (None: their mean).
pub fn splice_slot(m: &Measured, t: &Target, slot: Option<usize>) -> Vec<f64> {
    let v = values(m, slot);
    let (p, d) = (m.period_ms, m.duty * m.period_ms);
    let lv = levels(m, v);
    let n = t.points();
    let step = t.period_ms / n as f64;
    let on_ms = t.compute_fraction * t.period_ms;
    // A compute phase held past the measured one relaxes to what the run's
    // sustained rung held (the limiter's level), not to the burst's.
    let held = t.sustained_w.unwrap_or(lv.on_w);
    if t.comm_w.is_none()
        && same_period(p, t.period_ms)
        && (m.duty - t.compute_fraction).abs() < 1e-6
    {
        // The measured cycle itself, read over its whole period (a rung
        // detuned from the sampling grid ran 2010 ms for 2000: its last
        // 10 ms are the rise's start, not to be cut; a user's flat job
        // its recorded stretch).
        return (0..n).map(|j| at(v, p, j as f64 * p / n as f64)).collect();
    }
    if on_ms >= t.period_ms {
        // No communication phase: a constant load.
        return vec![held; n];
    }
    let lead = lead_ms(m).min(0.5 * on_ms).min(0.5 * (t.period_ms - on_ms));
    let pc = Pieces {
        v,
        p,
        d,
        lead,
        on_end_w: at(v, p, d - lead),
        off_w: at(v, p, p - lead),
        held_w: held,
    };
    let comm = match t.comm_w {
        Some(c) if t.floor_holds => c.max(lv.off_w),
        Some(c) => c,
        None => pc.off_w,
    };
    let (lo, hi) = v
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(*x), b.max(*x))
        });
    let settled = (lv.on_w - lv.off_w).abs() >= SETTLED_SHARE * (hi - lo);
    // `num` over the measured step `den`, where the cycle settles.
    let ratio = |num: f64, den: f64| {
        if settled && den.abs() >= 1.0 {
            num / den
        } else {
            1.0
        }
    };
    let off = pc.off_w;
    // The level the rise starts from is the communication phase's end,
    // which depends on where the rise got to: two passes settle it.
    let mut start = comm;
    let mut out = vec![0.0; n];
    for _ in 0..2 {
        let k_up = ratio(lv.on_w - start, lv.on_w - off);
        let on_at = |x: f64| start + (pc.rise(x) - off) * k_up;
        let top = on_at(on_ms);
        let k_down = ratio(top - comm, pc.on_end_w - off);
        let off_at = |y: f64| comm + (pc.fall(y) - off) * k_down;
        for (j, o) in out.iter_mut().enumerate() {
            let x = j as f64 * step;
            *o = if x < on_ms {
                let u = x - (on_ms - lead);
                on_at(x)
                    + if u >= 0.0 {
                        pc.fall_lead(u) * k_down
                    } else {
                        0.0
                    }
            } else {
                let u = x - (t.period_ms - lead);
                off_at(x - on_ms)
                    + if u >= 0.0 {
                        pc.rise_lead(u) * k_up
                    } else {
                        0.0
                    }
            };
        }
        start = off_at(t.period_ms - on_ms);
    }
    short_pause(&mut out, t.period_ms - on_ms, m.resolution_ms, held);
    for o in &mut out {
        *o = o.max(0.0);
    }
    out
}

/// A communication phase shorter than the measured cycles' resolution
/// (`res_ms`): the cycles show an edge smoothed over the resolution, so a
/// pause that short would be spliced as half a fall whatever its length,
/// and the GPU it pauses never settles off: it runs as a constant load.
/// The iteration's departure from the held level is scaled by the pause's
/// length over the resolution (the share of a smoothed step such a pulse
/// holds): a 1 µs pause in a 1 s iteration is the sustained level.
fn short_pause(out: &mut [f64], off_ms: f64, res_ms: f64, held_w: f64) {
    if res_ms.is_nan() || res_ms <= 0.0 || off_ms >= res_ms {
        return;
    }
    let k = off_ms / res_ms;
    for o in out.iter_mut() {
        *o = held_w + (*o - held_w) * k;
    }
}

/// The window a GPU's enforced power limit averages over, ms.
pub const LIMIT_WINDOW_MS: f64 = 1_000.0;

/// The highest mean of the cyclic iteration `v` (one period of
/// `period_ms`) over any window of `window_ms`.
pub fn max_running_mean(v: &[f64], period_ms: f64, window_ms: f64) -> f64 {
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    let len = ((window_ms / period_ms * n as f64).round() as usize).max(1);
    let (whole, part) = (len / n, len % n);
    let total: f64 = v.iter().sum();
    let mut run: f64 = v.iter().take(part).sum();
    let mut best = run;
    for i in 0..n {
        run += v[(i + part) % n] - v[i];
        best = best.max(run);
    }
    (whole as f64 * total + best) / len as f64
}

/// `v` held to the enforced limit: where its highest mean over
/// [`LIMIT_WINDOW_MS`] exceeds `allowed_w`, what rose above a cap is cut
/// off, the cap the highest that brings that mean to `allowed_w` (the
/// limiter trims the burst after a rise; a plateau below the cap keeps
/// its level). Returns the highest mean before, where it was clamped.
pub fn limited(v: &mut [f64], period_ms: f64, allowed_w: f64) -> Option<f64> {
    let top = max_running_mean(v, period_ms, LIMIT_WINDOW_MS);
    if top.is_nan() || top <= allowed_w {
        return None;
    }
    let (lo, hi) = v
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(*x), b.max(*x))
        });
    let capped = |cap: f64| -> Vec<f64> { v.iter().map(|x| x.min(cap)).collect() };
    if max_running_mean(&capped(lo), period_ms, LIMIT_WINDOW_MS) > allowed_w {
        // Even flat at its lowest point the iteration is over: all of it
        // trimmed.
        for x in v.iter_mut() {
            *x *= allowed_w / top;
        }
        return Some(top);
    }
    let (mut a, mut b) = (lo, hi);
    for _ in 0..50 {
        let mid = 0.5 * (a + b);
        if max_running_mean(&capped(mid), period_ms, LIMIT_WINDOW_MS) > allowed_w {
            b = mid;
        } else {
            a = mid;
        }
    }
    for x in v.iter_mut() {
        *x = x.min(a);
    }
    Some(top)
}

/// The measured cycles to blend for `period_ms`: the nearest period at or
/// below it and the nearest above it (one where the target is outside the
/// measured ones or on one of them), with the blend's weight on the upper.
pub fn bracket(periods: &[f64], period_ms: f64) -> (f64, f64, f64) {
    let (Some(lo), Some(hi)) = (periods.first(), periods.last()) else {
        return (f64::NAN, f64::NAN, 0.0);
    };
    if let Some(p) = periods.iter().find(|p| same_period(**p, period_ms)) {
        return (*p, *p, 0.0);
    }
    if period_ms <= *lo {
        return (*lo, *lo, 0.0);
    }
    if period_ms >= *hi {
        return (*hi, *hi, 0.0);
    }
    let i = periods.partition_point(|p| *p < period_ms);
    let (a, b) = (periods[i - 1], periods[i]);
    let w = (period_ms / a).ln() / (b / a).ln();
    (a, b, w)
}

/// `v` (one iteration of `t`) with its compute phase at `compute_w`: the
/// settled compute level (the mean of the compute phase's second half)
/// moved to it, every point scaled about the settled communication level
/// (the mean of that phase's second half) by the same ratio, so that the
/// measured rise, overshoot and fall keep their shape in proportion.
/// Returns the settled level it had.
pub fn declared(v: &mut [f64], t: &Target, compute_w: f64) -> f64 {
    let n = v.len();
    let on = ((t.compute_fraction * n as f64).round() as usize).clamp(1, n);
    let mean = |a: usize, b: usize| {
        let s = &v[a.min(b - 1)..b];
        s.iter().sum::<f64>() / s.len() as f64
    };
    let on_w = mean(on / 2, on);
    if on >= n {
        v.iter_mut().for_each(|x| *x += compute_w - on_w);
        return on_w;
    }
    let off_w = mean(on + (n - on) / 2, n);
    let step = on_w - off_w;
    if step.abs() < 1.0 {
        v[..on].iter_mut().for_each(|x| *x += compute_w - on_w);
        return on_w;
    }
    let k = (compute_w - off_w) / step;
    v.iter_mut().for_each(|x| *x = off_w + (*x - off_w) * k);
    on_w
}

/// One iteration blended from the rungs `set` (one per measured period of
/// a profile, ascending) for `t`, of the run's GPU `slot` mod n (None:
/// their mean).
pub fn blended(set: &[&Measured], t: &Target, slot: Option<usize>) -> Vec<f64> {
    let periods: Vec<f64> = set.iter().map(|m| m.period_ms).collect();
    let (a, b, w) = bracket(&periods, t.period_ms);
    let of = |p: f64| {
        set.iter()
            .find(|m| m.period_ms == p)
            .map(|m| splice_slot(m, t, slot))
            .unwrap_or_default()
    };
    let lo = of(a);
    if w == 0.0 {
        return lo;
    }
    let hi = of(b);
    lo.iter()
        .zip(&hi)
        .map(|(x, y)| x * (1.0 - w) + y * w)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trapezoid(m: usize, duty: f64, lo: f64, hi: f64, ramp: usize) -> Vec<f64> {
        let on = (duty * m as f64) as usize;
        (0..m)
            .map(|j| {
                if j < on {
                    lo + (hi - lo) * (j as f64 / ramp as f64).min(1.0)
                } else {
                    hi - (hi - lo) * ((j - on) as f64 / ramp as f64).min(1.0)
                }
            })
            .collect()
    }

    fn measured(period_ms: f64, duty: f64, gpu_w: Vec<f64>) -> Measured {
        Measured {
            rung_id: 1,
            label: "x".into(),
            period_ms,
            duty,
            mode: powerlab_core::kind::Mode::InPhase,
            gpu_each: vec![gpu_w.clone()],
            gpu_w,
            resolution_ms: 1.0,
            highest_hz: 100.0,
            rel_pm: None,
            caveat: None,
        }
    }

    #[test]
    fn the_measured_period_and_duty_give_the_measured_cycle_back() {
        let v = trapezoid(400, 0.5, 100.0, 700.0, 20);
        let m = measured(200.0, 0.5, v.clone());
        let t = Target {
            period_ms: 200.0,
            compute_fraction: 0.5,
            comm_w: None,
            step_ms: 0.5,
            floor_holds: false,
            sustained_w: None,
        };
        let out = splice(&m, &t);
        assert_eq!(out.len(), 400);
        for (a, b) in out.iter().zip(&v) {
            assert!((a - b).abs() < 1e-9, "{a} vs {b}");
        }
    }

    #[test]
    fn a_declared_compute_level_moves_the_settled_level_and_keeps_the_off_level() {
        let mut v = trapezoid(400, 0.5, 100.0, 700.0, 20);
        let t = Target {
            period_ms: 200.0,
            compute_fraction: 0.5,
            comm_w: None,
            step_ms: 0.5,
            floor_holds: false,
            sustained_w: None,
        };
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let before = mean(&v);
        assert!((declared(&mut v, &t, 400.0) - 700.0).abs() < 1e-9);
        // Settled levels: 400 W on, 100 W off; the mean moves by half.
        assert!((v[150] - 400.0).abs() < 1e-9 && (v[350] - 100.0).abs() < 1e-9);
        let want = 100.0 + (before - 100.0) * 0.5;
        assert!((mean(&v) - want).abs() < 1e-9, "{} vs {want}", mean(&v));
    }

    #[test]
    fn a_longer_iteration_holds_the_settled_levels_and_keeps_the_edges() {
        let m = measured(200.0, 0.5, trapezoid(400, 0.5, 100.0, 700.0, 20));
        let t = Target {
            period_ms: 1000.0,
            compute_fraction: 0.75,
            comm_w: Some(300.0),
            step_ms: 0.5,
            floor_holds: false,
            sustained_w: None,
        };
        let out = splice(&m, &t);
        assert_eq!(out.len(), 2000);
        // The rise from the communication level: 10 ms (20 points) long.
        assert!((out[0] - 300.0).abs() < 1e-9);
        assert!((out[40] - 700.0).abs() < 1e-9);
        assert!((out[1400] - 700.0).abs() < 1e-9);
        // The fall to the communication level, as steep in time.
        assert!((out[1500 + 10] - 500.0).abs() < 1e-9, "{}", out[1510]);
        assert!((out[1999] - 300.0).abs() < 1e-9);
        let mean = out.iter().sum::<f64>() / out.len() as f64;
        assert!(mean > 550.0 && mean < 610.0, "{mean}");
    }

    #[test]
    fn a_compute_phase_shorter_than_the_rise_falls_from_where_it_got() {
        let m = measured(200.0, 0.5, trapezoid(400, 0.5, 100.0, 700.0, 100));
        let t = Target {
            period_ms: 200.0,
            compute_fraction: 0.125,
            comm_w: None,
            step_ms: 0.5,
            floor_holds: false,
            sustained_w: None,
        };
        let out = splice(&m, &t);
        let peak = out.iter().cloned().fold(f64::MIN, f64::max);
        // 25 ms of a 50 ms rise: half way, 400 W; nothing above.
        assert!(peak < 410.0 && peak > 390.0, "{peak}");
    }

    #[test]
    fn a_cycle_that_never_settles_is_not_rescaled_and_a_constant_load_is_held() {
        // A ramp-limited wave: a triangle from 200 to 600 W, never settled.
        let v: Vec<f64> = (0..200)
            .map(|j| 200.0 + 400.0 * (1.0 - (j as f64 - 100.0).abs() / 100.0))
            .collect();
        let m = measured(100.0, 0.5, v.clone());
        let mut t = Target {
            period_ms: 100.0,
            compute_fraction: 0.5,
            comm_w: None,
            step_ms: 0.5,
            floor_holds: true,
            sustained_w: Some(500.0),
        };
        let same = splice(&m, &t);
        assert!(same.iter().zip(&v).all(|(a, b)| (a - b).abs() < 1e-9));
        t.period_ms = 150.0;
        t.comm_w = Some(150.0);
        let out = splice(&m, &t);
        assert!(out.iter().all(|x| (150.0..=601.0).contains(x)), "{out:?}");
        // Compute fraction 1: the sustained level, never the burst's.
        t.compute_fraction = 1.0;
        let flat = splice(&m, &t);
        assert!(
            flat.iter().all(|x| *x == flat[0] && *x <= 500.0),
            "{flat:?}"
        );
    }

    #[test]
    fn periods_between_two_measured_ones_blend_in_log_period() {
        assert_eq!(bracket(&[100.0, 1000.0], 100.0), (100.0, 100.0, 0.0));
        let (a, b, w) = bracket(&[100.0, 1000.0], 316.227766);
        assert_eq!((a, b), (100.0, 1000.0));
        assert!((w - 0.5).abs() < 1e-6);
        assert_eq!(bracket(&[100.0, 1000.0], 50.0), (100.0, 100.0, 0.0));
        assert_eq!(bracket(&[100.0, 1000.0], 5000.0), (1000.0, 1000.0, 0.0));
    }
}
