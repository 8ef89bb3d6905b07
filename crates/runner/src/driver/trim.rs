//! A floor's trim. The calibration staircase measures each level held
//! alone; in a rung's off-phase the GPU draws differently: the work's
//! tail is still decaying (an H200's plain 100 ms rung sat at 185 W 25 ms
//! into its off-phase, 60 W above idle) and an on-phase at the power cap
//! leaves the clocks pulled down (a 90 % floor held 554 W for 630 W
//! asked). So before the rung every GPU runs the smoothed wave itself for
//! a short trial; the floor it held is measured on its buffered samples
//! in the settled part of the off-phases, and the level corrected by the
//! difference, against the calibration's curve, up to [`TRIALS`] times,
//! until within [`TOLERANCE`]. Each trial is logged with the calibration.

use super::RungDriver;
use crate::StopReason;
use crate::schedule::schedule_for;
use powerlab_campaign::Rung;
use powerlab_core::shape::LoadShape;
use powerlab_core::smoothing::{Calibration, DeviceSmoothing};
use powerlab_core::units::{NS_PER_MS, NS_PER_S};
use powerlab_rundir::{FloorTrial, SmoothingNote};

/// Trials at most.
pub const TRIALS: usize = 4;
/// A floor within this share of the asked one needs no further trial.
pub const TOLERANCE: f64 = 0.02;
/// A trial's length: this many periods, within [`TRIAL_MIN_NS`] and
/// [`TRIAL_MAX_NS`].
const TRIAL_CYCLES: i64 = 6;
/// The shortest trial, ns.
const TRIAL_MIN_NS: i64 = 1_500 * NS_PER_MS;
/// The longest trial, ns.
const TRIAL_MAX_NS: i64 = 4 * NS_PER_S;
/// What a buffered sample covers before its timestamp, ns.
const SAMPLE_SPAN_NS: i64 = 20 * NS_PER_MS;
/// The settled part starts this long after the hysteresis and the ramp
/// down, and ends this long before the next rise, ns.
const GUARD_NS: i64 = 5 * NS_PER_MS;

/// The mean of the samples in the settled part of the off-phases of a
/// wave of `period` ns, `on` ns on, its cycles starting at `origin`, from
/// its second cycle to `end`: the second half of what follows the
/// `settle` ns after each fall (the collator reads the floor held there).
pub fn settled_floor(
    samples: &[(i64, f64)],
    (origin, end): (i64, i64),
    (period, on): (i64, i64),
    settle: i64,
) -> (Option<f64>, usize) {
    // The second half of what is left after the settling (the work's
    // tail decays in the first), at least a guard and a sample's span in.
    let lo = on + settle + ((period - on - settle) / 2).max(GUARD_NS + SAMPLE_SPAN_NS);
    let hi = period - GUARD_NS / 5;
    let (n, sum) = samples
        .iter()
        .filter(|(t, w)| *t >= origin + period && *t <= end && w.is_finite())
        .filter(|(t, _)| (lo..=hi).contains(&(t - origin).rem_euclid(period)))
        .fold((0usize, 0.0), |(n, s), (_, w)| (n + 1, s + w));
    ((n > 0).then(|| sum / n as f64), n)
}

/// The level that holds `asked` W, from the trials so far (`tried`:
/// level and floor held, in order). After one trial: the calibration's
/// curve shifted by what the wave added to it there. After two or more
/// whose floors differ: the secant through the last two (the wave's
/// response is not the curve's: on an H200 at 100 ms, level 0.019 held
/// 245 W and 0.002 held 200 W, where the curve moves 30 W), kept within
/// the levels.
pub fn corrected_level(cal: &Calibration, tried: &[(f64, f64)], asked: f64) -> f64 {
    let Some(&(level, held)) = tried.last() else {
        return cal.level_for(asked).0;
    };
    if let [.., (l0, h0), (l1, h1)] = tried
        && (h1 - h0).abs() > f64::EPSILON
        && (l1 - l0).abs() > f64::EPSILON
    {
        let slope = (h1 - h0) / (l1 - l0);
        if slope > 0.0 {
            return (l1 + (asked - h1) / slope).clamp(0.0, 1.0);
        }
    }
    let offset = held - cal.draw_at(level);
    cal.level_for(asked - offset).0
}

impl RungDriver<'_> {
    /// Trims every GPU's floor level in trials of the smoothed wave.
    pub(super) async fn trim_floors(
        &mut self,
        rung: &Rung,
        smoothing: &mut [DeviceSmoothing],
        cals: &[Calibration],
        note: &mut SmoothingNote,
        t0: i64,
    ) -> Result<(), StopReason> {
        let what = format!("rung {}: floor trial", rung.label);
        let label = format!("{} (floor trial)", rung.label);
        let period = rung
            .period_ms
            .map_or(0, |p| (p.ms() * NS_PER_MS as f64).round() as i64);
        if period <= 0 {
            return Ok(());
        }
        let on = (rung.duty * period as f64).round() as i64;
        let len = (TRIAL_CYCLES * period).clamp(TRIAL_MIN_NS, TRIAL_MAX_NS);
        for _ in 0..TRIALS {
            self.crew.tap.arm();
            let shapes: Vec<Option<LoadShape>> = (0..self.keys.len())
                .map(|i| trial_shape(rung, i, &smoothing[i]))
                .collect();
            let (start, end) = self
                .window_on_all(
                    rung,
                    &what,
                    &label,
                    len,
                    |i, start| shifted(shapes[i].clone(), start),
                    t0,
                )
                .await?;
            self.await_samples(end, &label).await?;
            let mut done = true;
            for (i, sm) in smoothing.iter_mut().enumerate() {
                let g = &mut note.gpus[i];
                let asked = g.floor_w.max(g.idle_w);
                let origin = start + rung.offsets_ns.get(i).copied().unwrap_or(0);
                let settle = sm.hysteresis_ns + sm.ramp_down.ns;
                let (held, samples) = settled_floor(
                    &self.crew.tap.samples(i),
                    (origin, end),
                    (period, on),
                    settle,
                );
                g.trims.push(FloorTrial {
                    level: sm.floor,
                    floor_w: held,
                    samples,
                });
                let Some(held) = held else { continue };
                if (held - asked).abs() > TOLERANCE * asked {
                    let tried: Vec<(f64, f64)> = g
                        .trims
                        .iter()
                        .filter_map(|t| Some((t.level, t.floor_w?)))
                        .collect();
                    let next = corrected_level(&cals[i], &tried, asked);
                    if next == sm.floor {
                        // At the end of the levels: no trial can do better
                        // (the latest trial's figures kept, once).
                        g.notes.retain(|n| !n.starts_with(BEYOND_REACH));
                        g.notes.push(beyond_reach(sm.floor, held, asked));
                        continue;
                    }
                    done = false;
                    sm.floor = next;
                    g.floor_level = sm.floor;
                }
            }
            if done {
                break;
            }
        }
        Ok(())
    }
}

/// How the note of a floor beyond reach starts.
const BEYOND_REACH: &str = "the floor is beyond reach in this wave";

/// The note of a floor the levels cannot hold in the wave.
fn beyond_reach(level: f64, held: f64, asked: f64) -> String {
    let end = if level >= 1.0 {
        "the highest level (every block of the level load)"
    } else {
        "the lowest level (idle)"
    };
    format!(
        "{BEYOND_REACH}: {end} held {held:.0} W against {asked:.0} W asked ({:+.1} %)",
        100.0 * (held - asked) / asked
    )
}

/// GPU `i`'s wave in a trial, its origin relative to the trial's start
/// (no duty ramp: the trial measures the settled wave).
fn trial_shape(rung: &Rung, i: usize, sm: &DeviceSmoothing) -> Option<LoadShape> {
    let mut s = schedule_for(rung, i, 0, Some(sm)).ok()?.shape;
    if let LoadShape::Square { ramp_ns, .. } = &mut s {
        *ramp_ns = 0;
    }
    Some(s)
}

/// `shape` with its origin moved to `start`.
fn shifted(shape: Option<LoadShape>, start: i64) -> LoadShape {
    match shape {
        Some(LoadShape::Square {
            load,
            period_ns,
            duty,
            origin_ns,
            ramp_ns,
            smoothing,
        }) => LoadShape::Square {
            load,
            period_ns,
            duty,
            origin_ns: origin_ns + start,
            ramp_ns,
            smoothing,
        },
        Some(other) => other,
        None => LoadShape::Idle,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_is_read_in_the_settled_off_phase_from_the_second_cycle() {
        let (period, on) = (100 * NS_PER_MS, 50 * NS_PER_MS);
        // Every 2 ms over 5 cycles: on 600 W, a tail of 300 W for the first
        // 20 ms of the off-phase, then 200 W.
        let samples: Vec<(i64, f64)> = (0..250)
            .map(|j| {
                let t = j * 2 * NS_PER_MS;
                let ph = t % period;
                let w = if ph < on {
                    600.0
                } else if ph < on + 20 * NS_PER_MS {
                    300.0
                } else {
                    200.0
                };
                (t, w)
            })
            .collect();
        let (f, n) = settled_floor(&samples, (0, 5 * period), (period, on), 0);
        assert_eq!(f, Some(200.0));
        assert!(n > 20, "{n}");
        // A ramp down of 40 ms leaves nothing settled.
        assert_eq!(
            settled_floor(&samples, (0, 5 * period), (period, on), 40 * NS_PER_MS).1,
            0
        );
    }

    #[test]
    fn a_level_is_corrected_by_what_the_wave_adds() {
        let cal = Calibration {
            points: vec![(0.0, 100.0), (0.5, 400.0), (1.0, 600.0)],
            work_w: 700.0,
            limit_w: 700.0,
        };
        // Level 0.25 holds 250 W alone but 310 W in the wave: +60 W. For
        // 250 W asked, the level that holds 190 W alone: 0.15.
        let l = corrected_level(&cal, &[(0.25, 310.0)], 250.0);
        assert!((l - 0.15).abs() < 1e-9, "{l}");
        // Two trials: the secant through them (0.15 held 280 W: 30 W per
        // 0.1 of level), to 250 W.
        let l = corrected_level(&cal, &[(0.25, 310.0), (0.15, 280.0)], 250.0);
        assert!((l - 0.05).abs() < 1e-9, "{l}");
        // A secant that falls (noise) is not followed: the offset again.
        let l = corrected_level(&cal, &[(0.25, 310.0), (0.15, 320.0)], 250.0);
        assert!(l < 0.15, "{l}");
    }
}
