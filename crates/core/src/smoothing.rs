//! Power smoothing: a mitigation of the square wave's swing, named as in
//! NVIDIA's power-smoothing profile (a floor as a share of the power
//! limit, ramp-up and ramp-down rates in W/s, a ramp-down hysteresis).
//!
//! Three forms, from the campaign to the device:
//! - [`SmoothingSpec`]: what a rung asks for, in watts (per GPU);
//! - [`Calibration`]: what one GPU drew at each level of the level load,
//!   measured just before the rung against its buffered samples;
//! - [`DeviceSmoothing`]: what the device runs, in levels and nanoseconds,
//!   made from the two by [`DeviceSmoothing::from_spec`]. The simulated
//!   node and the CUDA engine both step through it with
//!   [`DeviceSmoothing::on_steps`] and [`DeviceSmoothing::off_steps`], so
//!   they agree on what was asked.
//!
//! A *level* is a share of the level load (the CUDA engine's `burn_until`
//! kernel on that share of its blocks): 0 is idle, 1 all of its blocks.
//! Its draw is not linear in the level and differs per GPU: hence the
//! calibration.

use crate::units::{NS_PER_MS, NS_PER_S, NS_PER_US};
use serde::{Deserialize, Serialize};

/// What a mitigation rung asks of every GPU, named as in NVIDIA's
/// power-smoothing profile. All zero / `None`: no mitigation.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct SmoothingSpec {
    /// While the work is off, each GPU draws this share of its enforced
    /// power limit, % (0: no floor).
    #[serde(default)]
    pub floor_pct: f64,
    /// The fastest each GPU's draw may rise, W/s (None: unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp_up_w_per_s: Option<f64>,
    /// The fastest each GPU's draw may fall, W/s (None: unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp_down_w_per_s: Option<f64>,
    /// How long the draw holds after the work stops before it ramps down, ms.
    #[serde(default)]
    pub ramp_down_hysteresis_ms: f64,
}

impl SmoothingSpec {
    /// Whether this asks for nothing (the plain rung).
    pub fn is_none(&self) -> bool {
        self.floor_pct == 0.0
            && self.ramp_up_w_per_s.is_none()
            && self.ramp_down_w_per_s.is_none()
            && self.ramp_down_hysteresis_ms == 0.0
    }

    /// The label part naming it (`floor60`, `up10k`, `floor30-down2k5-h5ms`);
    /// `plain` for none.
    pub fn label(&self) -> String {
        if self.is_none() {
            return "plain".into();
        }
        let mut parts = Vec::new();
        if self.floor_pct > 0.0 {
            parts.push(format!("floor{}", short(self.floor_pct)));
        }
        if let Some(r) = self.ramp_up_w_per_s {
            parts.push(format!("up{}", rate(r)));
        }
        if let Some(r) = self.ramp_down_w_per_s {
            parts.push(format!("down{}", rate(r)));
        }
        if self.ramp_down_hysteresis_ms > 0.0 {
            parts.push(format!("h{}ms", short(self.ramp_down_hysteresis_ms)));
        }
        parts.join("-")
    }
}

/// A number without a trailing `.0`, a decimal point written `p` (labels
/// are path-safe).
fn short(x: f64) -> String {
    format!("{x}").replace('.', "p")
}

/// A rate in W/s as a label part: `500`, `10k`, `2k5`.
fn rate(w_per_s: f64) -> String {
    if w_per_s >= 1000.0 {
        short(w_per_s / 1000.0).replace('p', "k") + if w_per_s % 1000.0 == 0.0 { "k" } else { "" }
    } else {
        short(w_per_s)
    }
}

/// What one GPU drew at each level of the level load and under the work
/// itself, from the buffered samples of the calibration staircase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// (level, mean W) in increasing level order; level 0 is idle.
    pub points: Vec<(f64, f64)>,
    /// Mean W under the work (the power virus).
    pub work_w: f64,
    /// The GPU's enforced power limit, W.
    pub limit_w: f64,
}

/// Why a calibration cannot serve a smoothing.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
pub enum CalibrationError {
    /// Fewer than two levels measured, or one without samples.
    #[error(
        "the calibration measured {0} level(s) with samples; it needs idle and at least one load level (were the buffered samples flowing?)"
    )]
    TooFew(usize),
    /// The work drew no more than idle.
    #[error("the work drew {work_w:.0} W against {idle_w:.0} W idle: there is no swing to smooth")]
    NoSwing {
        /// Under the work, W.
        work_w: f64,
        /// Idle, W.
        idle_w: f64,
    },
}

impl Calibration {
    /// The calibration's points made monotone (each at least the one
    /// below), with the levels sorted.
    fn monotone(&self) -> Vec<(f64, f64)> {
        let mut p = self.points.clone();
        p.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut top = f64::MIN;
        for q in &mut p {
            top = top.max(q.1);
            q.1 = top;
        }
        p
    }

    /// Idle draw (the level-0 point, else the lowest), W.
    pub fn idle_w(&self) -> f64 {
        self.monotone().first().map_or(0.0, |p| p.1)
    }

    /// The level whose draw is `w`, interpolated between the measured
    /// points, and whether `w` lay outside what the levels reach (then
    /// the nearest end is given).
    pub fn level_for(&self, w: f64) -> (f64, bool) {
        let p = self.monotone();
        let (Some(lo), Some(hi)) = (p.first(), p.last()) else {
            return (0.0, true);
        };
        if w <= lo.1 {
            return (lo.0, w < lo.1);
        }
        if w >= hi.1 {
            return (hi.0, w > hi.1);
        }
        let i = p.partition_point(|q| q.1 < w).max(1);
        let (a, b) = (p[i - 1], p[i]);
        let f = if b.1 > a.1 {
            (w - a.1) / (b.1 - a.1)
        } else {
            0.0
        };
        (a.0 + (b.0 - a.0) * f, false)
    }

    /// What the level load draws at `level` held alone, interpolated
    /// between the measured points (the nearest end outside them), W.
    pub fn draw_at(&self, level: f64) -> f64 {
        let p = self.monotone();
        let (Some(lo), Some(hi)) = (p.first(), p.last()) else {
            return f64::NAN;
        };
        if level <= lo.0 {
            return lo.1;
        }
        if level >= hi.0 {
            return hi.1;
        }
        let i = p.partition_point(|q| q.0 < level).max(1);
        let (a, b) = (p[i - 1], p[i]);
        a.1 + (b.1 - a.1) * (level - a.0) / (b.0 - a.0)
    }

    /// Checks it can serve a smoothing.
    ///
    /// # Errors
    ///
    /// [`CalibrationError`] when it has too few points or no swing.
    pub fn check(&self) -> Result<(), CalibrationError> {
        if self.points.len() < 2 {
            return Err(CalibrationError::TooFew(self.points.len()));
        }
        let idle_w = self.idle_w();
        if self.work_w <= idle_w {
            return Err(CalibrationError::NoSwing {
                work_w: self.work_w,
                idle_w,
            });
        }
        Ok(())
    }
}

/// A ramp in levels: `steps` evenly spaced over `ns`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LevelRamp {
    /// Levels in time order.
    pub steps: Vec<f64>,
    /// Its length, ns (0: none, a step).
    pub ns: i64,
}

impl LevelRamp {
    /// The steps with their end offsets, cut at `room_ns`.
    fn timed(&self, room_ns: i64) -> Vec<(f64, i64)> {
        let n = self.steps.len() as i64;
        if n == 0 || self.ns <= 0 {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (j, &l) in self.steps.iter().enumerate() {
            let at = |k: i64| (i128::from(self.ns) * i128::from(k) / i128::from(n)) as i64;
            let end = at(j as i64 + 1).min(room_ns);
            let start = at(j as i64);
            if start >= room_ns {
                break;
            }
            out.push((l, end));
        }
        out
    }
}

/// The smoothing a device runs, in levels of its level load and ns.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct DeviceSmoothing {
    /// Level held while the work is off, after the ramp down (0: idle).
    pub floor: f64,
    /// Level held through the hysteresis after the work stops (the level
    /// nearest the work's draw).
    pub hold: f64,
    /// How long `hold` lasts after each fall, ns.
    pub hysteresis_ns: i64,
    /// The rise after each rise edge, before the work runs alone.
    pub ramp_up: LevelRamp,
    /// The fall after the hysteresis, down to `floor`.
    pub ramp_down: LevelRamp,
}

/// What a GPU draws through a stretch of a smoothed wave.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Draw {
    /// The work itself (the power virus).
    Work,
    /// The level load at this level (0: idle).
    Level(f64),
}

/// A ramp is cut in steps of about this (a kernel launch between two
/// steps costs a few µs), at most [`MAX_RAMP_STEPS`] of them.
pub const RAMP_STEP_NS: i64 = 500 * NS_PER_US;
/// The most steps a ramp has.
pub const MAX_RAMP_STEPS: i64 = 64;
/// The longest ramp, ns (an hour).
pub const MAX_RAMP_NS: i64 = 3_600 * NS_PER_S;

impl DeviceSmoothing {
    /// The smoothing that does what `spec` asks of a GPU calibrated as
    /// `cal`; notes where the levels cannot reach what was asked.
    ///
    /// # Errors
    ///
    /// [`CalibrationError`] when `cal` cannot serve (see [`Calibration::check`]).
    pub fn from_spec(
        spec: &SmoothingSpec,
        cal: &Calibration,
    ) -> Result<(DeviceSmoothing, Vec<String>), CalibrationError> {
        cal.check()?;
        let mut notes = Vec::new();
        let idle_w = cal.idle_w();
        let floor_w = (spec.floor_pct / 100.0 * cal.limit_w).max(idle_w);
        let (floor, floor_clipped) = cal.level_for(floor_w);
        if spec.floor_pct > 0.0 && floor_clipped {
            notes.push(format!(
                "a floor of {} % of {:.0} W ({:.0} W) is beyond what the level load reaches ({:.0}–{:.0} W): it holds the nearest level",
                spec.floor_pct,
                cal.limit_w,
                spec.floor_pct / 100.0 * cal.limit_w,
                idle_w,
                cal.monotone().last().map_or(0.0, |p| p.1)
            ));
        }
        let (hold, _) = cal.level_for(cal.work_w);
        let swing_w = (cal.work_w - floor_w).max(0.0);
        let ramp = |rate: Option<f64>, up: bool| -> LevelRamp {
            let Some(r) = rate.filter(|r| *r > 0.0 && swing_w > 0.0) else {
                return LevelRamp::default();
            };
            // At most an hour (the campaign bounds rates; this keeps the
            // step arithmetic far from overflow whatever it is handed).
            let ns = (swing_w / r * NS_PER_S as f64)
                .round()
                .min(MAX_RAMP_NS as f64) as i64;
            let n = (ns / RAMP_STEP_NS).clamp(1, MAX_RAMP_STEPS);
            let steps = (0..n)
                .map(|j| {
                    let f = (j as f64 + 0.5) / n as f64;
                    let f = if up { f } else { 1.0 - f };
                    cal.level_for(floor_w + swing_w * f).0
                })
                .collect();
            LevelRamp { steps, ns }
        };
        Ok((
            DeviceSmoothing {
                floor: if spec.floor_pct > 0.0 { floor } else { 0.0 },
                hold,
                hysteresis_ns: (spec.ramp_down_hysteresis_ms * NS_PER_MS as f64).round() as i64,
                ramp_up: ramp(spec.ramp_up_w_per_s, true),
                ramp_down: ramp(spec.ramp_down_w_per_s, false),
            },
            notes,
        ))
    }

    /// The stretches of an on-phase of `on_ns` before the work runs alone:
    /// (draw, end offset after the rise), the ramp-up cut at `on_ns`.
    pub fn on_steps(&self, on_ns: i64) -> Vec<(f64, i64)> {
        self.ramp_up.timed(on_ns)
    }

    /// The stretches of an off-phase of `off_ns`: (level, end offset after
    /// the fall), covering it whole: the hold, the ramp down and the
    /// floor, cut where the next rise comes.
    pub fn off_steps(&self, off_ns: i64) -> Vec<(f64, i64)> {
        let mut out = Vec::new();
        let h = self.hysteresis_ns.min(off_ns);
        if h > 0 {
            out.push((self.hold, h));
        }
        for (l, end) in self.ramp_down.timed(off_ns - h) {
            out.push((l, h + end));
        }
        let last = out.last().map_or(0, |s| s.1);
        if last < off_ns {
            out.push((self.floor, off_ns));
        }
        out
    }

    /// What is drawn `since_ns` into a stretch made of `steps` (from
    /// [`Self::on_steps`] or [`Self::off_steps`]); `None` past their end.
    pub fn step_at(steps: &[(f64, i64)], since_ns: i64) -> Option<f64> {
        steps.iter().find(|s| since_ns < s.1).map(|s| s.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cal() -> Calibration {
        Calibration {
            points: vec![(0.0, 100.0), (0.1, 300.0), (0.5, 500.0), (1.0, 600.0)],
            work_w: 700.0,
            limit_w: 700.0,
        }
    }

    #[test]
    fn levels_interpolate_and_clip() {
        let c = cal();
        assert_eq!(c.level_for(300.0), (0.1, false));
        let (l, clip) = c.level_for(400.0);
        assert!((l - 0.3).abs() < 1e-12 && !clip);
        assert_eq!(c.level_for(650.0), (1.0, true));
        assert_eq!(c.level_for(50.0), (0.0, true));
        assert!((c.draw_at(0.3) - 400.0).abs() < 1e-9);
        assert_eq!(c.draw_at(2.0), 600.0);
    }

    #[test]
    fn a_floor_is_a_share_of_the_limit() {
        let spec = SmoothingSpec {
            floor_pct: 60.0,
            ..Default::default()
        };
        let (d, notes) = DeviceSmoothing::from_spec(&spec, &cal()).unwrap();
        // 60 % of 700 W = 420 W: between 0.1 (300 W) and 0.5 (500 W).
        assert!((d.floor - 0.34).abs() < 1e-9, "{}", d.floor);
        assert!(notes.is_empty());
        assert_eq!(d.off_steps(50), vec![(d.floor, 50)]);
        assert!(d.on_steps(50).is_empty());
    }

    #[test]
    fn ramps_take_swing_over_rate_and_are_cut_by_the_phase() {
        let spec = SmoothingSpec {
            ramp_up_w_per_s: Some(60_000.0),
            ramp_down_w_per_s: Some(60_000.0),
            ramp_down_hysteresis_ms: 2.0,
            ..Default::default()
        };
        let (d, _) = DeviceSmoothing::from_spec(&spec, &cal()).unwrap();
        // Swing 700 - 100 = 600 W at 60 kW/s: 10 ms.
        assert_eq!(d.ramp_up.ns, 10 * NS_PER_MS);
        assert!(d.ramp_up.steps.windows(2).all(|w| w[0] <= w[1]));
        assert!(d.ramp_down.steps.windows(2).all(|w| w[0] >= w[1]));
        let on = d.on_steps(4 * NS_PER_MS);
        assert_eq!(on.last().unwrap().1, 4 * NS_PER_MS);
        let off = d.off_steps(50 * NS_PER_MS);
        assert_eq!(off[0], (d.hold, 2 * NS_PER_MS));
        assert_eq!(off.last().unwrap(), &(0.0, 50 * NS_PER_MS));
        assert_eq!(DeviceSmoothing::step_at(&off, NS_PER_MS), Some(d.hold));
        assert_eq!(DeviceSmoothing::step_at(&off, 50 * NS_PER_MS), None);
    }

    #[test]
    fn labels_name_each_part() {
        let s = SmoothingSpec {
            floor_pct: 30.0,
            ramp_down_w_per_s: Some(2500.0),
            ramp_down_hysteresis_ms: 5.0,
            ..Default::default()
        };
        assert_eq!(s.label(), "floor30-down2k5-h5ms");
        assert_eq!(SmoothingSpec::default().label(), "plain");
        let up = SmoothingSpec {
            ramp_up_w_per_s: Some(10_000.0),
            ..Default::default()
        };
        assert_eq!(up.label(), "up10k");
    }

    #[test]
    fn a_calibration_without_swing_is_refused() {
        let mut c = cal();
        c.work_w = 90.0;
        assert!(matches!(c.check(), Err(CalibrationError::NoSwing { .. })));
        c.points.truncate(1);
        assert_eq!(c.check(), Err(CalibrationError::TooFew(1)));
    }
}
