//! The board's power controller, shaped after what the H200's buffered
//! samples show on a 2 s square wave (results/h200x2-2026-11-30/sweep):
//!
//! - a fast loop acting on the power averaged over the last few tens of ms,
//!   with its set point a few percent above the enforced limit: a rising
//!   edge overshoots to 850–960 W for ~80–100 ms before it is pulled down,
//!   and a long on-phase then reads ~725–740 W;
//! - a slow loop that integrates the energy drawn above the limit while
//!   loaded: about 0.85 s into a sustained on-phase it trips, clamps the
//!   board hard (a dip to ~480 W for some tens of ms) and then holds the
//!   board's 1 s average just below the limit (a sustained virus, or
//!   compute bursts between all-reduces, settles at ~99 % of it) by
//!   trimming the fast loop's set point, until the load stops.
//!
//! Short on-phases (≤ 0.5 s) never accumulate enough energy to trip the
//! slow loop, as on the real board.

use crate::profile::Profile;
use powerlab_core::units::{ms_to_ns_trunc, ms_to_s, ns_to_s};

/// State of the slow loop.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Slow {
    /// Not tripped: the fast loop's set point is above the limit.
    Free,
    /// Tripped: clamping down until this time (ns).
    Dip(i64),
    /// After the dip: the set point is just below the limit until the load stops.
    Held,
}

/// The power controller of one board.
#[derive(Debug, Clone)]
pub struct Controller {
    cap: f64,
    excess_j: f64,
    slow: Slow,
    off_ns: i64,
    trim: f64,
}

impl Default for Controller {
    fn default() -> Self {
        Controller {
            cap: 1.0,
            excess_j: 0.0,
            slow: Slow::Free,
            off_ns: 0,
            trim: 0.0,
        }
    }
}

/// How fast the held set point trims the 1 s average onto its target, s.
const TRIM_TAU_S: f64 = 0.5;

impl Controller {
    /// The share of the load's demand above idle the board lets through.
    pub fn cap(&self) -> f64 {
        self.cap
    }

    /// Advances the controller by one step of `dt_ns` ending at `now_ns`.
    /// `power_w` is the board's draw now, `sensed_w` its draw averaged over
    /// the fast loop's sensing window, `second_w` over the last second,
    /// `loaded` whether any load is asked for.
    pub fn step(
        &mut self,
        p: &Profile,
        now_ns: i64,
        dt_ns: i64,
        (power_w, sensed_w, second_w): (f64, f64, f64),
        loaded: bool,
    ) -> f64 {
        let dt_s = ns_to_s(dt_ns);
        let limit = p.power_limit_w;
        // The slow loop: net energy above the limit while loaded, leaking
        // away while idle.
        if loaded {
            self.excess_j = (self.excess_j + (power_w - limit) * dt_s).max(0.0);
        } else {
            self.excess_j -= self.excess_j * dt_s / ms_to_s(p.slow_leak_ms);
        }
        if self.slow == Slow::Free && self.excess_j > p.slow_trip_s * limit {
            self.slow = Slow::Dip(now_ns + ms_to_ns_trunc(p.dip_ms));
            self.excess_j = 0.0;
        }
        if loaded {
            self.off_ns = 0;
        } else {
            self.off_ns += dt_ns;
            if self.off_ns >= 50_000_000 {
                self.slow = Slow::Free;
                self.excess_j = 0.0;
            }
        }
        match self.slow {
            Slow::Dip(until) => {
                let span = (p.virus_demand_w - p.idle_w).max(1.0);
                let dip_cap = ((p.dip_fraction * limit - p.idle_w) / span).clamp(0.2, 1.0);
                self.cap += (dip_cap - self.cap) * dt_s / 0.015;
                if now_ns >= until {
                    self.slow = Slow::Held;
                    self.trim = 0.0;
                }
            }
            Slow::Free | Slow::Held => {
                let set_point = if self.slow == Slow::Free {
                    limit * (1.0 + p.cap_margin)
                } else {
                    let target = limit * (1.0 + p.held_margin);
                    self.trim = (self.trim - (second_w - target) / target * dt_s / TRIM_TAU_S)
                        .clamp(-0.3, 0.0);
                    target * (1.0 + self.trim)
                };
                if sensed_w > set_point {
                    self.cap -= p.cap_gain_per_s * (sensed_w - set_point) / set_point * dt_s;
                } else {
                    self.cap += (1.0 - self.cap) * dt_s / ms_to_s(p.cap_relax_ms);
                }
            }
        }
        self.cap = self.cap.clamp(0.2, 1.0);
        self.cap
    }
}
