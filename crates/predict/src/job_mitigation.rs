//! A measured mitigation applied to the user's own job: the run's
//! mitigation rungs (square waves under a floor or ramp limit) say what
//! the emulation held and achieved, and the job's measured iteration is
//! put through the same limits:
//!
//! - **floor**: the level the mitigated rungs held (the report's achieved
//!   floor per GPU), below which the job's iteration no longer falls;
//! - **ramps**: the 10–90 % fall rate they achieved (the report's, per
//!   GPU), which the job's falls may no longer exceed (a slew limit run
//!   twice around the cycle, so that it wraps).
//!
//! The rise rate they achieved is named, not applied: a rise limit holds
//! the job's compute back, and the work then takes longer, which a
//! recording cannot show.

use super::response::Measured;
use powerlab_collate::report::Report;

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

/// What the run's rungs of mitigation `profile` held and achieved, from
/// the report's mitigation table (`mitigation_gpus.csv`): the floor each
/// GPU held where one was asked, and the 10–90 % rise and fall rates each
/// achieved where ramps were asked, averaged over the GPUs and rungs the
/// report credits (None: the run has no credited rung of it). A rate the
/// report gives only as a lower bound is used as it is: the job's fall is
/// then held at least as slow as measured, its cost not under-stated.
pub fn limits(report: &Report, profile: &str) -> Option<Limits> {
    let node = report.node()?;
    let ids: Vec<u32> = node
        .mitigation
        .rows
        .iter()
        .filter(|r| r.mitigation == profile && r.withheld.is_none())
        .map(|r| r.rung_id)
        .collect();
    let gpus: Vec<_> = node
        .mitigation
        .gpus
        .iter()
        .filter(|g| ids.contains(&g.rung_id))
        .collect();
    if gpus.is_empty() {
        return None;
    }
    let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let floor = mean(
        gpus.iter()
            .filter(|g| g.asked_floor_w.is_some())
            .filter_map(|g| g.achieved_floor_w)
            .collect(),
    );
    let up = mean(
        gpus.iter()
            .filter(|g| g.asked_up_w_per_s.is_some())
            .filter_map(|g| g.achieved_up_w_per_s)
            .collect(),
    );
    let down = mean(
        gpus.iter()
            .filter(|g| g.asked_down_w_per_s.is_some())
            .filter_map(|g| g.achieved_down_w_per_s)
            .collect(),
    );
    Some(Limits {
        floor_w: floor,
        up_w_per_ms: up.map(|w| w / 1000.0),
        down_w_per_ms: down.map(|w| w / 1000.0),
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
        let l = Limits {
            floor_w: Some(400.0),
            up_w_per_ms: None,
            down_w_per_ms: None,
        };
        let y = apply(&v, 1000.0, &l);
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        assert!((mean(&y) - 550.0).abs() < 1e-9);
        assert!((mean(&v) - 400.0).abs() < 1e-9);
    }

    #[test]
    fn a_ramp_limit_holds_every_step_to_its_slope_around_the_wrap() {
        let v = square(1000, 0.5, 100.0, 700.0);
        let l = Limits {
            floor_w: None,
            up_w_per_ms: Some(10.0),
            down_w_per_ms: Some(5.0),
        };
        let y = slew(&v, 1000.0, &l);
        for i in 0..1000 {
            let d = y[(i + 1) % 1000] - y[i];
            assert!((-5.0 - 1e-9..=10.0 + 1e-9).contains(&d), "{i}: {d}");
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
