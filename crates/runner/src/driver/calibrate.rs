//! A mitigation rung's calibration: before its warm-up, every GPU at once
//! runs the level-load staircase ([`CAL_LEVELS`], then the work, each
//! [`CAL_STEP_NS`]); the driver measures each step on the GPU's buffered
//! samples (through the crew's power tap) and turns the rung's
//! [`SmoothingSpec`] into each GPU's [`DeviceSmoothing`]. A GPU that
//! cannot be calibrated fails the rung: a mitigation rung never runs
//! uncalibrated. The calibration is logged (topic
//! [`powerlab_rundir::events::SMOOTHING_TOPIC`]) however it ends.

use super::RungDriver;
use super::journal::Progress;
use crate::StopReason;
use crate::barrier::choose_lead_ns;
use crate::worker::{WorkerCmd, ask_all, first_error};
use powerlab_campaign::Rung;
use powerlab_core::hw::GpuSchedule;
use powerlab_core::shape::LoadShape;
use powerlab_core::smoothing::{Calibration, DeviceSmoothing, Draw, SmoothingSpec};
use powerlab_core::units::{NS_PER_MS, NS_PER_S};
use powerlab_rundir::{CalibrationOutcome, GpuSmoothingNote, SmoothingNote};
use std::time::Duration;

/// The levels of the calibration staircase, in order; the work follows.
pub const CAL_LEVELS: [f64; 12] = [
    0.0, 0.005, 0.01, 0.02, 0.04, 0.08, 0.15, 0.25, 0.4, 0.6, 0.8, 1.0,
];
/// Each step of the staircase, ns.
pub const CAL_STEP_NS: i64 = 250 * NS_PER_MS;
/// The start of each step left out (the draw settles), ns.
const SETTLE_NS: i64 = 100 * NS_PER_MS;
/// What a buffered sample covers before its timestamp, ns: a sample
/// counts when all of it lies after the settling.
const SAMPLE_SPAN_NS: i64 = 20 * NS_PER_MS;
/// Longest wait for the buffered samples of the staircase's end, ns.
const ARRIVAL_WAIT_NS: i64 = NS_PER_S;
/// Between two looks at the tap while waiting, ns.
const ARRIVAL_POLL_NS: i64 = 50 * NS_PER_MS;

/// The calibration staircase: each level, then the work.
pub fn staircase() -> LoadShape {
    let mut steps: Vec<Draw> = CAL_LEVELS.iter().map(|l| Draw::Level(*l)).collect();
    steps.push(Draw::Work);
    LoadShape::Staircase {
        steps,
        step_ns: CAL_STEP_NS,
    }
}

/// The staircase's length, ns.
pub fn staircase_ns() -> i64 {
    (CAL_LEVELS.len() as i64 + 1) * CAL_STEP_NS
}

/// The mean of the samples measuring step `k` of a staircase from `start`.
fn step_mean(samples: &[(i64, f64)], start: i64, k: usize) -> Option<f64> {
    let from = start + k as i64 * CAL_STEP_NS + SETTLE_NS + SAMPLE_SPAN_NS;
    let to = start + (k as i64 + 1) * CAL_STEP_NS;
    let (n, sum) = samples
        .iter()
        .filter(|(t, w)| *t >= from && *t <= to && w.is_finite())
        .fold((0usize, 0.0), |(n, s), (_, w)| (n + 1, s + w));
    (n > 0).then(|| sum / n as f64)
}

/// One GPU's calibration from its buffered samples of a staircase run
/// from `start`, with notes on steps left out; an error saying what is
/// missing and what to check.
pub fn measure(
    samples: &[(i64, f64)],
    start: i64,
    limit_w: f64,
) -> Result<(Calibration, Vec<String>), String> {
    if samples.is_empty() {
        return Err(
            "no buffered power sample arrived during the calibration; check that its buffered power samples flow (BufferedW rows in its raw file) and that `buffer_interval_ms` is well under 1 s".into(),
        );
    }
    let mut points = Vec::new();
    let mut notes = Vec::new();
    for (k, l) in CAL_LEVELS.iter().enumerate() {
        match step_mean(samples, start, k) {
            Some(w) => points.push((*l, w)),
            None if k == 0 => {
                return Err(
                    "no buffered sample measured its idle step; check for gaps in its BufferedW rows (dropped readings) and run again".into(),
                );
            }
            None => notes.push(format!(
                "level {l}: no buffered sample in the step's last 150 ms; left out"
            )),
        }
    }
    let Some(work_w) = step_mean(samples, start, CAL_LEVELS.len()) else {
        return Err(
            "no buffered sample measured the work's step; check for gaps in its BufferedW rows (dropped readings) and run again".into(),
        );
    };
    Ok((
        Calibration {
            points,
            work_w,
            limit_w,
        },
        notes,
    ))
}

impl RungDriver<'_> {
    /// Calibrates every GPU for `spec`, the smoothing `rung` asks for, and
    /// logs the calibration; returns each GPU's smoothing, by run index.
    pub(super) async fn calibrate(
        &mut self,
        rung: &Rung,
        spec: &SmoothingSpec,
        t0: i64,
    ) -> Result<Vec<DeviceSmoothing>, StopReason> {
        let mut note = SmoothingNote {
            rung_id: rung.id,
            label: rung.label.clone(),
            outcome: CalibrationOutcome::Calibrated,
            reason: None,
            start_ns: t0,
            end_ns: t0,
            gpus: Vec::new(),
        };
        self.crew.tap.arm();
        let result = self.calibrate_armed(rung, spec, t0, &mut note).await;
        self.crew.tap.disarm();
        if let Err(stop) = &result {
            note.outcome = if self.journal.stop_reason().is_some() {
                CalibrationOutcome::Interrupted
            } else {
                CalibrationOutcome::Failed
            };
            note.reason = Some(stop.text().to_string());
        }
        let logged = note
            .to_event(self.journal.clock.now_ns())
            .map_err(|e| StopReason::Failed(format!("writing the calibration note: {e}")))
            .and_then(|ev| self.journal.log(ev).map_err(super::rung::io));
        // A failed write does not hide why the calibration ended.
        let smoothing = result?;
        logged?;
        Ok(smoothing)
    }

    /// The calibration with the tap armed: every GPU ready (idle), the
    /// staircase on every GPU at once, its samples, each GPU's smoothing.
    async fn calibrate_armed(
        &mut self,
        rung: &Rung,
        spec: &SmoothingSpec,
        t0: i64,
        note: &mut SmoothingNote,
    ) -> Result<Vec<DeviceSmoothing>, StopReason> {
        let what = format!("rung {}: calibration", rung.label);
        // What the progress shows meanwhile.
        let label = format!("{} (calibration)", rung.label);
        let shape = staircase();
        let (start, end) = self
            .window_on_all(
                rung,
                &what,
                &label,
                staircase_ns(),
                |_, _| shape.clone(),
                t0,
            )
            .await?;
        (note.start_ns, note.end_ns) = (start, end);
        self.await_samples(end, &label).await?;
        let (mut smoothing, cals) = self.smoothings(spec, start, &what, note)?;
        if spec.floor_pct > 0.0 {
            self.trim_floors(rung, &mut smoothing, &cals, note, t0)
                .await?;
            note.end_ns = self.journal.clock.now_ns();
        }
        Ok(smoothing)
    }

    /// Runs a window of `len_ns` on every GPU of this node at once (each
    /// GPU `i` the shape `shape(i, start)`), after readying them idle;
    /// returns its start and end. No rack exchange: each node calibrates
    /// its own GPUs.
    pub(super) async fn window_on_all(
        &mut self,
        rung: &Rung,
        what: &str,
        label: &str,
        len_ns: i64,
        shape: impl Fn(usize, i64) -> LoadShape,
        t0: i64,
    ) -> Result<(i64, i64), StopReason> {
        let n = self.keys.len();
        let ready = self.prepare_all(what, label, 0, &vec![None; n], t0).await?;
        // Timed on the run's one clock (virtual on a simulated node).
        let ping_start = self.journal.clock.now_ns();
        let _ = ask_all(&self.crew.workers, |_, reply| WorkerCmd::Ping { reply }).await;
        let lead_ns = choose_lead_ns(&ready, self.journal.clock.now_ns() - ping_start);
        let start = self.journal.clock.now_ns() + lead_ns;
        let end = start + len_ns;
        let run = ask_all(&self.crew.workers, |i, reply| WorkerCmd::Run {
            schedule: GpuSchedule {
                rung_id: rung.id,
                start_ns: start,
                end_ns: end,
                shape: shape(i, start),
            },
            reply,
        });
        let hang_limit = Duration::from_nanos((lead_ns + len_ns) as u64) + Duration::from_secs(30);
        let progress = Progress {
            done_ns: self.done_ns,
            total_ns: self.total_ns,
            start_ns: t0,
            label,
        };
        match self
            .journal
            .guarded(tokio::time::timeout(hang_limit, run), progress)
            .await?
        {
            Err(_) => Err(StopReason::Failed(format!(
                "{what}: a GPU did not finish its window within 30 s of its end (hung)"
            ))),
            Ok(Err(e)) => Err(StopReason::Failed(format!("{what}: {e}"))),
            Ok(Ok(results)) => {
                first_error(results, &self.keys)
                    .map_err(|(g, e)| StopReason::Failed(format!("{what} on {g}: {e}")))?;
                Ok((start, end))
            }
        }
    }

    /// Waits (at most [`ARRIVAL_WAIT_NS`]) until every GPU's buffered
    /// samples up to `end` have reached the tap.
    pub(super) async fn await_samples(&mut self, end: i64, label: &str) -> Result<(), StopReason> {
        let clock = self.journal.clock;
        let give_up = clock.now_ns() + ARRIVAL_WAIT_NS;
        loop {
            let arrived = self
                .crew
                .tap
                .latest()
                .iter()
                .all(|t| t.is_some_and(|t| t >= end - SAMPLE_SPAN_NS));
            let now = clock.now_ns();
            if arrived || now >= give_up {
                return Ok(());
            }
            let progress = Progress {
                done_ns: self.done_ns,
                total_ns: self.total_ns,
                start_ns: now,
                label,
            };
            let until = (now + ARRIVAL_POLL_NS).min(give_up);
            self.journal
                .guarded(clock.sleep_until(until), progress)
                .await?;
        }
    }

    /// Each GPU's calibration (from the tap) and smoothing, into `note`.
    fn smoothings(
        &mut self,
        spec: &SmoothingSpec,
        start: i64,
        what: &str,
        note: &mut SmoothingNote,
    ) -> Result<(Vec<DeviceSmoothing>, Vec<Calibration>), StopReason> {
        let mut out = Vec::new();
        let mut cals = Vec::new();
        for (i, key) in self.keys.iter().enumerate() {
            let limit_w = self.limits_w.get(i).copied().unwrap_or(f64::NAN);
            let fail = |m: String| {
                StopReason::Failed(format!(
                    "{what}: {key} could not be calibrated: {m}; the mitigation rung does not run uncalibrated"
                ))
            };
            if !(limit_w.is_finite() && limit_w > 0.0) {
                return Err(fail(format!(
                    "its power limit reads {limit_w} W; check that the enforced power limit can be read (nvidia-smi -q -d POWER)"
                )));
            }
            let (cal, mut notes) =
                measure(&self.crew.tap.samples(i), start, limit_w).map_err(fail)?;
            let (sm, more) = DeviceSmoothing::from_spec(spec, &cal).map_err(|e| {
                fail(format!(
                    "{e}; check that the GPU is loaded by the work (not held by another process or a low power limit)"
                ))
            })?;
            notes.extend(more);
            note.gpus
                .push(GpuSmoothingNote::new(key, spec, &cal, &sm, notes));
            out.push(sm);
            cals.push(cal);
        }
        Ok((out, cals))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples every 20 ms over a staircase from 0, drawing `w(level)`
    /// (the work draws `work`), but none in the steps of `gaps`.
    fn samples(w: impl Fn(f64) -> f64, work: f64, gaps: &[usize]) -> Vec<(i64, f64)> {
        (0..staircase_ns() / (20 * NS_PER_MS))
            .map(|j| j * 20 * NS_PER_MS + 7)
            .filter(|t| !gaps.contains(&((t / CAL_STEP_NS) as usize)))
            .map(|t| {
                let k = (t / CAL_STEP_NS) as usize;
                (t, CAL_LEVELS.get(k).map_or(work, |l| w(*l)))
            })
            .collect()
    }

    #[test]
    fn each_step_is_measured_after_its_settling() {
        let s = samples(|l| 100.0 + 500.0 * l, 700.0, &[3]);
        let (cal, notes) = measure(&s, 0, 700.0).unwrap();
        assert_eq!(cal.points.len(), CAL_LEVELS.len() - 1);
        assert_eq!(cal.points[0], (0.0, 100.0));
        assert_eq!(cal.points[2], (0.01, 105.0));
        assert_eq!(cal.work_w, 700.0);
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("level 0.02"), "{notes:?}");
        // A sample whose span reaches back into the settling is left out.
        let settling = vec![(SETTLE_NS + 5 * NS_PER_MS, 1.0e6), (CAL_STEP_NS, 50.0)];
        assert_eq!(step_mean(&settling, 0, 0), Some(50.0));
    }

    #[test]
    fn missing_samples_are_an_error_saying_what_to_check() {
        let e = measure(&[], 0, 700.0).unwrap_err();
        assert!(e.contains("BufferedW"), "{e}");
        let no_idle = samples(|l| 100.0 + l, 700.0, &[0]);
        assert!(measure(&no_idle, 0, 700.0).unwrap_err().contains("idle"));
        let no_work = samples(|l| 100.0 + l, 700.0, &[CAL_LEVELS.len()]);
        assert!(measure(&no_work, 0, 700.0).unwrap_err().contains("work"));
    }
}
