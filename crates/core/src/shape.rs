//! Load shapes: what a GPU should draw over a rung, as a pure function of
//! absolute time, and the edges (on/off transitions) that function implies.
//!
//! The simulated node evaluates [`LoadShape::is_on`] directly; the CUDA
//! backend hands the same edge list to the device as `%globaltimer`
//! deadlines. Both therefore agree on what "intended" means, and the edge
//! log compares achieved transitions against exactly these times.

use crate::smoothing::{DeviceSmoothing, Draw};
use crate::units::EpochNs;
use serde::{Deserialize, Serialize};

/// What load a GPU runs while "on".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadKind {
    /// The power virus (as hard as the GPU goes).
    Virus,
    /// Collective communication over the fabric (NCCL). As a keep-warm load
    /// before a fabric rung it is local memory streaming: collectives need
    /// every rank in lockstep and cannot idle-loop independently.
    Fabric,
}

/// The shape of one GPU's load over a rung window `[start, end)`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "shape", rename_all = "snake_case")]
pub enum LoadShape {
    /// No load at all.
    Idle,
    /// Constant load for the whole window.
    Constant {
        /// What runs.
        load: LoadKind,
    },
    /// A sweep of collectives over message sizes (NCCL), then idle until the
    /// window ends.
    Sweep {
        /// What to run.
        spec: crate::collective::SweepSpec,
    },
    /// Back-to-back all-reduces, or compute bursts each followed by an
    /// all-reduce (bulk-synchronous), for the whole window.
    Fabric {
        /// Message size and compute burst.
        spec: crate::collective::FabricSpec,
    },
    /// A square wave. Cycle `k` starts at `origin_ns + k * period_ns`; it is
    /// on for `duty * period` (the duty ramps linearly from 0 over `ramp_ns`
    /// after the window start). The wave extends backwards from its origin,
    /// so a staggered GPU is already mid-cycle at the window start.
    Square {
        /// What runs while on.
        load: LoadKind,
        /// Period of the wave.
        period_ns: i64,
        /// Fraction of each period spent on, in (0, 1].
        duty: f64,
        /// Start of cycle 0 (window start plus this GPU's stagger offset).
        origin_ns: EpochNs,
        /// Duration of the linear duty ramp after the window start (0 = none).
        ramp_ns: i64,
        /// A mitigation (a floor, ramps, a hysteresis), where asked; the
        /// edges stay those of the work.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        smoothing: Option<DeviceSmoothing>,
    },
    /// The user's own job (a workload phase): on a real node the harness
    /// runs no load of its own (the command does); on the simulated node
    /// the simulated training job `job` draws, its iteration 0 at
    /// `origin_ns`.
    Workload {
        /// The simulated job.
        job: crate::training::TrainingSpec,
        /// Start of its iteration 0.
        origin_ns: EpochNs,
    },
    /// Steps of equal length, each a draw, then the last held to the
    /// window's end: the staircase a smoothing is calibrated on.
    Staircase {
        /// The draws in time order.
        steps: Vec<Draw>,
        /// Length of each step, ns.
        step_ns: i64,
    },
}

/// Kind of an edge in a GPU's schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    /// The schedule takes over from keep-warm load at the window start.
    Start,
    /// Load switches on.
    Rise,
    /// Load switches off.
    Fall,
}

impl EdgeKind {
    /// Short name used in `edges.csv`.
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::Start => "start",
            EdgeKind::Rise => "rise",
            EdgeKind::Fall => "fall",
        }
    }

    /// Parses a name of `edges.csv` ([`EdgeKind::as_str`]).
    pub fn parse(name: &str) -> Option<EdgeKind> {
        [EdgeKind::Start, EdgeKind::Rise, EdgeKind::Fall]
            .into_iter()
            .find(|k| k.as_str() == name)
    }
}

impl LoadShape {
    /// Load running while on (`None` for idle).
    pub fn load(&self) -> Option<LoadKind> {
        match self {
            LoadShape::Idle | LoadShape::Workload { .. } => None,
            LoadShape::Constant { load } | LoadShape::Square { load, .. } => Some(*load),
            LoadShape::Staircase { .. } => Some(LoadKind::Virus),
            LoadShape::Sweep { .. } | LoadShape::Fabric { .. } => Some(LoadKind::Fabric),
        }
    }

    fn on_ns_of_cycle(
        period_ns: i64,
        duty: f64,
        ramp_ns: i64,
        window_start: EpochNs,
        cycle_start: EpochNs,
    ) -> i64 {
        let ramp_fraction = if ramp_ns <= 0 {
            1.0
        } else {
            ((cycle_start - window_start) as f64 / ramp_ns as f64).clamp(0.0, 1.0)
        };
        ((duty * ramp_fraction) * period_ns as f64).round() as i64
    }

    /// Whether the load is on at time `t` for a window starting at `window_start`.
    pub fn is_on(&self, window_start: EpochNs, t: EpochNs) -> bool {
        match self {
            // The harness runs no load of its own in a workload window.
            LoadShape::Idle | LoadShape::Workload { .. } => false,
            LoadShape::Constant { .. } | LoadShape::Sweep { .. } | LoadShape::Fabric { .. } => true,
            LoadShape::Staircase { .. } => {
                matches!(self.draw_at(window_start, t), Draw::Work)
            }
            LoadShape::Square {
                period_ns,
                duty,
                origin_ns,
                ramp_ns,
                ..
            } => {
                let k = (t - origin_ns).div_euclid(*period_ns);
                let cycle_start = origin_ns + k * period_ns;
                let on =
                    Self::on_ns_of_cycle(*period_ns, *duty, *ramp_ns, window_start, cycle_start);
                t - cycle_start < on
            }
        }
    }

    /// What the GPU draws at `t` for a window starting at `window_start`:
    /// the work, or the level load (0: idle). A smoothed wave draws its
    /// ramp-up after each rise and its hold, ramp down and floor after
    /// each fall; an off-phase whose fall came before the window start
    /// holds the floor.
    pub fn draw_at(&self, window_start: EpochNs, t: EpochNs) -> Draw {
        match self {
            LoadShape::Staircase { steps, step_ns } => {
                let i = ((t - window_start) / (*step_ns).max(1)).max(0) as usize;
                steps
                    .get(i)
                    .or(steps.last())
                    .copied()
                    .unwrap_or(Draw::Level(0.0))
            }
            LoadShape::Workload { job, origin_ns } => job.draw_at(*origin_ns, t),
            LoadShape::Square {
                period_ns,
                duty,
                origin_ns,
                ramp_ns,
                smoothing,
                ..
            } => {
                let on = self.is_on(window_start, t);
                let Some(sm) = smoothing else {
                    return if on { Draw::Work } else { Draw::Level(0.0) };
                };
                let k = (t - origin_ns).div_euclid(*period_ns);
                let cycle_start = origin_ns + k * period_ns;
                let on_ns =
                    Self::on_ns_of_cycle(*period_ns, *duty, *ramp_ns, window_start, cycle_start);
                if on && cycle_start <= window_start {
                    // Risen with the window: the warm-up's work runs on.
                    return Draw::Work;
                }
                if on {
                    return DeviceSmoothing::step_at(&sm.on_steps(on_ns), t - cycle_start)
                        .map_or(Draw::Work, Draw::Level);
                }
                let fall = cycle_start + on_ns;
                if fall < window_start {
                    return Draw::Level(sm.floor);
                }
                let steps = sm.off_steps(period_ns - on_ns);
                Draw::Level(DeviceSmoothing::step_at(&steps, t - fall).unwrap_or(sm.floor))
            }
            _ if self.is_on(window_start, t) => Draw::Work,
            _ => Draw::Level(0.0),
        }
    }

    /// Every intended edge in `[start, end)`: a `Start` edge at `start`, then
    /// each rise and fall in time order.
    pub fn edges(&self, start: EpochNs, end: EpochNs) -> Vec<(EdgeKind, EpochNs)> {
        let mut out = vec![(EdgeKind::Start, start)];
        if let LoadShape::Square {
            period_ns,
            duty,
            origin_ns,
            ramp_ns,
            ..
        } = self
        {
            let period = *period_ns;
            let mut k = (start - origin_ns).div_euclid(period);
            loop {
                let cycle_start = origin_ns + k * period;
                if cycle_start >= end {
                    break;
                }
                let on = Self::on_ns_of_cycle(period, *duty, *ramp_ns, start, cycle_start);
                let prev_on_at_end = {
                    let prev_start = cycle_start - period;
                    let prev_on = Self::on_ns_of_cycle(period, *duty, *ramp_ns, start, prev_start);
                    prev_on >= period
                };
                if on > 0 && cycle_start > start && !prev_on_at_end {
                    out.push((EdgeKind::Rise, cycle_start));
                }
                let fall = cycle_start + on;
                if on < period && on > 0 && fall > start && fall < end {
                    out.push((EdgeKind::Fall, fall));
                }
                k += 1;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square(period: i64, duty: f64, origin: i64, ramp: i64) -> LoadShape {
        LoadShape::Square {
            load: LoadKind::Virus,
            period_ns: period,
            duty,
            origin_ns: origin,
            ramp_ns: ramp,
            smoothing: None,
        }
    }

    #[test]
    fn in_phase_square_edges_alternate_and_match_level() {
        let s = square(100, 0.3, 1000, 0);
        let e = s.edges(1000, 1500);
        assert_eq!(e[0], (EdgeKind::Start, 1000));
        // cycles at 1000,1100,..,1400: the first rise coincides with start.
        let rises: Vec<_> = e
            .iter()
            .filter(|x| x.0 == EdgeKind::Rise)
            .map(|x| x.1)
            .collect();
        let falls: Vec<_> = e
            .iter()
            .filter(|x| x.0 == EdgeKind::Fall)
            .map(|x| x.1)
            .collect();
        assert_eq!(rises, vec![1100, 1200, 1300, 1400]);
        assert_eq!(falls, vec![1030, 1130, 1230, 1330, 1430]);
        for &(kind, t) in &e[1..] {
            assert_eq!(s.is_on(1000, t), kind == EdgeKind::Rise, "at {t}");
            assert_eq!(s.is_on(1000, t - 1), kind != EdgeKind::Rise, "before {t}");
        }
    }

    #[test]
    fn staggered_wave_is_mid_cycle_at_start() {
        // origin 60 ns after start, period 100, duty 0.5: at start we are at
        // phase 40 of the previous cycle: on until 50.
        let s = square(100, 0.5, 1060, 0);
        assert!(s.is_on(1000, 1000));
        assert!(!s.is_on(1000, 1010));
        let e = s.edges(1000, 1200);
        assert_eq!(e[1], (EdgeKind::Fall, 1010));
        assert_eq!(e[2], (EdgeKind::Rise, 1060));
    }

    #[test]
    fn duty_one_has_no_edges_after_start() {
        let s = square(100, 1.0, 0, 0);
        assert_eq!(s.edges(0, 1000).len(), 1);
        assert!(s.is_on(0, 999));
    }

    #[test]
    fn a_smoothed_wave_ramps_after_each_edge_and_holds_its_floor() {
        use crate::smoothing::LevelRamp;
        let sm = DeviceSmoothing {
            floor: 0.25,
            hold: 0.9,
            hysteresis_ns: 10,
            ramp_up: LevelRamp {
                steps: vec![0.4, 0.6],
                ns: 20,
            },
            ramp_down: LevelRamp {
                steps: vec![0.7, 0.5],
                ns: 10,
            },
        };
        let mut s = square(100, 0.5, 1000, 0);
        if let LoadShape::Square { smoothing, .. } = &mut s {
            *smoothing = Some(sm);
        }
        let at = |t: i64| s.draw_at(1000, t);
        // Cycle 1 (1100..1200): rise at 1100, fall at 1150.
        assert_eq!(at(1105), Draw::Level(0.4));
        assert_eq!(at(1115), Draw::Level(0.6));
        assert_eq!(at(1125), Draw::Work);
        assert_eq!(at(1155), Draw::Level(0.9));
        assert_eq!(at(1162), Draw::Level(0.7));
        assert_eq!(at(1167), Draw::Level(0.5));
        assert_eq!(at(1190), Draw::Level(0.25));
        // The edges are the work's, unchanged.
        assert_eq!(
            s.edges(1000, 1200),
            square(100, 0.5, 1000, 0).edges(1000, 1200)
        );
        // A staggered GPU already on at the window start runs the work.
        let mut late = square(100, 0.5, 1060, 0);
        if let LoadShape::Square { smoothing, .. } = &mut late {
            *smoothing = Some(DeviceSmoothing::default());
        }
        assert_eq!(late.draw_at(1000, 1000), Draw::Work);
        assert_eq!(late.draw_at(1000, 1020), Draw::Level(0.0));
        assert_eq!(late.draw_at(1000, 1070), Draw::Work);
    }

    #[test]
    fn a_staircase_steps_then_holds_its_last() {
        let s = LoadShape::Staircase {
            steps: vec![Draw::Level(0.0), Draw::Level(0.5), Draw::Work],
            step_ns: 10,
        };
        assert_eq!(s.draw_at(0, 5), Draw::Level(0.0));
        assert_eq!(s.draw_at(0, 15), Draw::Level(0.5));
        assert_eq!(s.draw_at(0, 25), Draw::Work);
        assert_eq!(s.draw_at(0, 500), Draw::Work);
        assert!(s.is_on(0, 25) && !s.is_on(0, 15));
        assert_eq!(s.edges(0, 100).len(), 1);
    }

    #[test]
    fn ramp_grows_on_time() {
        let s = square(100, 0.5, 0, 400);
        let on_time = |k: i64| (k * 100..(k + 1) * 100).filter(|&t| s.is_on(0, t)).count();
        assert_eq!(on_time(0), 0);
        assert_eq!(on_time(2), 25);
        assert_eq!(on_time(5), 50);
    }
}
