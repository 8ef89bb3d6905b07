//! A measured mitigation applied to the user's own job: the run's
//! mitigation rungs (square waves under a floor or ramp limit) say what
//! the emulation held and achieved, and the job's measured iteration is
//! put through the same limits:
//!
//! - **floor**: the level the mitigated rungs' off-phases held (the mean of
//!   the last quarter of their off-phase, per GPU), below which the job's
//!   iteration no longer falls;
//! - **ramps**: the 10–90 % rise and fall rates the mitigated rungs'
//!   cycles show (W/ms per GPU), which the job's
//!   iteration may no longer exceed (a slew limit run twice around the
//!   cycle, so that it wraps).
//!
//! The plain rungs' own steepest rise and fall bound what the instrument
//! resolves: a mitigated slope within [`UNLIMITED_SHARE`] of the plain one
//! limits nothing. The ramp-up limit holds the power back, not the work:
//! a job whose compute is slowed by it runs longer than this shows.

use super::response::Measured;

/// A mitigated slope at least this share of the plain rungs' is no limit.
pub const UNLIMITED_SHARE: f64 = 0.8;

/// What a mitigation profile's rungs held and achieved, per GPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// The floor, W (None: no higher than the plain rungs' off level).
    pub floor_w: Option<f64>,
    /// The steepest rise, W/ms (None: as steep as plain).
    pub up_w_per_ms: Option<f64>,
    /// The steepest fall, W/ms (positive; None: as steep as plain).
    pub down_w_per_ms: Option<f64>,
}

fn off_level(m: &Measured) -> f64 {
    let v = &m.gpu_w;
    let n = v.len();
    let from = ((m.duty + 0.75 * (1.0 - m.duty)) * n as f64) as usize;
    let s = &v[from.min(n - 1)..];
    s.iter().sum::<f64>() / s.len() as f64
}

/// The rise and fall of `m`'s mean cycle, W/ms (the fall positive): 80 %
/// of its step between its settled levels over the time from 10 % to 90 %
/// of it (after the rise at phase 0, and after the fall at the duty), as
/// the collator's ramps are read. A cycle whose step is under 10 W has
/// none.
fn slopes(m: &Measured) -> (f64, f64) {
    let v = &m.gpu_w;
    let n = v.len();
    let step_ms = m.period_ms / n as f64;
    let on = ((m.duty * n as f64).round() as usize).clamp(1, n - 1);
    let mean = |a: usize, b: usize| v[a..b].iter().sum::<f64>() / (b - a).max(1) as f64;
    let hi = mean(on / 2, on);
    let lo = mean(on + (n - on) * 3 / 4, n);
    let d = hi - lo;
    if d.abs() < 10.0 {
        return (f64::INFINITY, f64::INFINITY);
    }
    // First index from `from` (cyclic) where `pred` holds.
    let first = |from: usize, pred: &dyn Fn(f64) -> bool| {
        (0..n).map(|k| (from + k) % n).position(|i| pred(v[i])).map_or(n, |k| k)
    };
    let start = on + (n - on) / 2;
    let r10 = first(start, &|x| x >= lo + 0.1 * d);
    let r90 = first(start, &|x| x >= lo + 0.9 * d);
    let f10 = first(on / 2, &|x| x <= hi - 0.1 * d);
    let f90 = first(on / 2, &|x| x <= hi - 0.9 * d);
    let rate = |a: usize, b: usize| 0.8 * d / ((b.saturating_sub(a)).max(1) as f64 * step_ms);
    (rate(r10, r90), rate(f10, f90))
}

/// What the mitigated rungs `mitigated` held and achieved against the
/// plain rungs `plain` (both lists of one run; None: nothing measured).
pub fn limits(plain: &[Measured], mitigated: &[Measured]) -> Option<Limits> {
    if mitigated.is_empty() {
        return None;
    }
    let mean = |v: Vec<f64>| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let floor = mean(mitigated.iter().map(off_level).collect());
    let plain_floor = (!plain.is_empty()).then(|| mean(plain.iter().map(off_level).collect()));
    // The fastest of each list: the limit is what the mitigation let
    // through at its most, the plain rungs' what the instrument resolves.
    let fastest = |l: &[Measured]| {
        l.iter()
            .map(slopes)
            .filter(|s| s.0.is_finite() && s.1.is_finite())
            .fold((0.0_f64, 0.0_f64), |a, s| (a.0.max(s.0), a.1.max(s.1)))
    };
    let (mu, md) = fastest(mitigated);
    let (pu, pd) = fastest(plain);
    let limited = |m: f64, p: f64| (p > 0.0 && m < UNLIMITED_SHARE * p).then_some(m);
    Some(Limits {
        floor_w: match plain_floor {
            Some(p) if floor <= p + 5.0 => None,
            _ => Some(floor),
        },
        up_w_per_ms: limited(mu, pu),
        down_w_per_ms: limited(md, pd),
    })
}

/// `v` (one cyclic iteration of `period_ms`) under `l`'s floor and fall
/// limit. The rise limit is not applied: it holds a job's compute back
/// (the work takes longer, the iteration stretches), which a recording
/// cannot show; cutting the rise alone would show a saving of energy
/// that is a slower job.
pub fn apply(v: &[f64], period_ms: f64, l: &Limits) -> Vec<f64> {
    let l = Limits {
        up_w_per_ms: None,
        ..*l
    };
    slew(v, period_ms, &l)
}

/// `v` under every limit of `l`, the rise's included.
pub fn slew(v: &[f64], period_ms: f64, l: &Limits) -> Vec<f64> {
    let mut y: Vec<f64> = match l.floor_w {
        Some(f) => v.iter().map(|x| x.max(f)).collect(),
        None => v.to_vec(),
    };
    if l.up_w_per_ms.is_none() && l.down_w_per_ms.is_none() {
        return y;
    }
    let n = y.len();
    let dt = period_ms / n as f64;
    let up = l.up_w_per_ms.map_or(f64::INFINITY, |u| u * dt);
    let down = l.down_w_per_ms.map_or(f64::INFINITY, |d| d * dt);
    let target = y.clone();
    // Twice around: the second pass starts from where the first ended.
    let mut prev = target[n - 1];
    for _ in 0..2 {
        for (yi, want) in y.iter_mut().zip(&target) {
            *yi = want.clamp(prev - down, prev + up);
            prev = *yi;
        }
    }
    y
}

/// The job's measured iteration `job` under the limits of a profile.
pub fn mitigated(job: &Measured, l: &Limits) -> Measured {
    let mut m = job.clone();
    m.gpu_w = apply(&job.gpu_w, job.period_ms, l);
    m.gpu_each = job
        .gpu_each
        .iter()
        .map(|v| apply(v, job.period_ms, l))
        .collect();
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square(n: usize, duty: f64, lo: f64, hi: f64) -> Vec<f64> {
        (0..n)
            .map(|i| if (i as f64) < duty * n as f64 { hi } else { lo })
            .collect()
    }

    #[test]
    fn a_floor_lifts_the_off_phase_and_costs_its_energy() {
        let v = square(1000, 0.5, 100.0, 700.0);
        let l = Limits { floor_w: Some(400.0), up_w_per_ms: None, down_w_per_ms: None };
        let y = apply(&v, 1000.0, &l);
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        assert!((mean(&y) - 550.0).abs() < 1e-9);
        assert!((mean(&v) - 400.0).abs() < 1e-9);
    }

    #[test]
    fn a_ramp_limit_holds_every_step_to_its_slope_around_the_wrap() {
        let v = square(1000, 0.5, 100.0, 700.0);
        let l = Limits { floor_w: None, up_w_per_ms: Some(10.0), down_w_per_ms: Some(5.0) };
        let y = slew(&v, 1000.0, &l);
        for i in 0..1000 {
            let d = y[(i + 1) % 1000] - y[i];
            assert!(d <= 10.0 + 1e-9 && d >= -5.0 - 1e-9, "{i}: {d}");
        }
        // The rise takes 60 ms, the fall 120 ms: half-way 30 and 60 ms in.
        assert!((y[29] - 400.0).abs() < 1e-9, "{}", y[29]);
        assert!((y[559] - 400.0).abs() < 1e-9, "{}", y[559]);
        // On a job only the fall is held: its rise is the job's own.
        let z = apply(&v, 1000.0, &l);
        assert_eq!(z[0], 700.0);
        assert!((z[559] - 400.0).abs() < 1e-9, "{}", z[559]);
    }
}
