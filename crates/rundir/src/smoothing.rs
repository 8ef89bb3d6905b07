//! The calibration note of a mitigation rung (topic
//! [`crate::events::SMOOTHING_TOPIC`]): what each GPU drew at each level
//! of its level load just before the rung, and the smoothing made of it.
//! The runner writes it; the collator reads it back with
//! [`smoothing_notes`] (to leave the calibration's window out, and to
//! report what was asked against what was run).

use crate::events::{RunEvent, SMOOTHING_TOPIC};
use powerlab_core::smoothing::{Calibration, DeviceSmoothing, SmoothingSpec};
use serde::{Deserialize, Serialize};

/// How a rung's calibration ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CalibrationOutcome {
    /// Every GPU calibrated: the rung runs with the smoothings below.
    Calibrated,
    /// A GPU could not be calibrated: the rung did not run (`reason`).
    Failed,
    /// The run was stopped during the calibration (`reason`).
    Interrupted,
}

/// One GPU's calibration and the smoothing it runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSmoothingNote {
    /// GPU key.
    pub gpu: String,
    /// What the rung asked.
    pub spec: SmoothingSpec,
    /// (level, mean W) measured, in increasing level order.
    pub points: Vec<(f64, f64)>,
    /// Mean W under the work.
    pub work_w: f64,
    /// Idle (the level-0 point), W.
    pub idle_w: f64,
    /// The enforced power limit, W.
    pub limit_w: f64,
    /// The floor asked, W (`floor_pct` of `limit_w`).
    pub floor_w: f64,
    /// The level held while the work is off (0: idle).
    pub floor_level: f64,
    /// The level held through the hysteresis.
    pub hold_level: f64,
    /// The hysteresis, ns.
    pub hysteresis_ns: i64,
    /// The ramp up's length, ns (0: none) and its steps.
    pub ramp_up_ns: i64,
    /// Steps of the ramp up.
    pub ramp_up_steps: usize,
    /// The ramp down's length, ns (0: none).
    pub ramp_down_ns: i64,
    /// Steps of the ramp down.
    pub ramp_down_steps: usize,
    /// Where the levels could not do what was asked, and steps without samples.
    #[serde(default)]
    pub notes: Vec<String>,
    /// The floor's trials before the rung, in order: the level tried and
    /// the floor it held in the smoothed wave's off-phase (`floor_level`
    /// is the level after the last correction).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trims: Vec<FloorTrial>,
}

/// One trial of a floor: the smoothed wave run briefly before the rung.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FloorTrial {
    /// The level tried.
    pub level: f64,
    /// The floor it held in the off-phase's settled part, W (None: no
    /// sample there).
    pub floor_w: Option<f64>,
    /// Buffered samples that measured it.
    pub samples: usize,
}

impl GpuSmoothingNote {
    /// The note of GPU `gpu` calibrated as `cal`, running `sm`.
    pub fn new(
        gpu: &str,
        spec: &SmoothingSpec,
        cal: &Calibration,
        sm: &DeviceSmoothing,
        notes: Vec<String>,
    ) -> Self {
        GpuSmoothingNote {
            gpu: gpu.to_string(),
            spec: *spec,
            points: cal.points.clone(),
            work_w: cal.work_w,
            idle_w: cal.idle_w(),
            limit_w: cal.limit_w,
            floor_w: spec.floor_pct / 100.0 * cal.limit_w,
            floor_level: sm.floor,
            hold_level: sm.hold,
            hysteresis_ns: sm.hysteresis_ns,
            ramp_up_ns: sm.ramp_up.ns,
            ramp_up_steps: sm.ramp_up.steps.len(),
            ramp_down_ns: sm.ramp_down.ns,
            ramp_down_steps: sm.ramp_down.steps.len(),
            notes,
            trims: Vec::new(),
        }
    }
}

/// A mitigation rung's calibration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmoothingNote {
    /// The rung calibrated for.
    pub rung_id: u32,
    /// Its label.
    pub label: String,
    /// How the calibration ended.
    pub outcome: CalibrationOutcome,
    /// Why it failed or was interrupted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The staircase's window start (run clock, epoch ns).
    pub start_ns: i64,
    /// Its end: the GPUs' load stops then (epoch ns).
    pub end_ns: i64,
    /// Each calibrated GPU (all of them when calibrated).
    pub gpus: Vec<GpuSmoothingNote>,
}

impl SmoothingNote {
    /// This note as an event at `ts_ns`.
    ///
    /// # Errors
    ///
    /// None in practice (a non-finite W is written as null).
    pub fn to_event(&self, ts_ns: i64) -> Result<RunEvent, serde_json::Error> {
        Ok(RunEvent::Note {
            ts_ns,
            topic: SMOOTHING_TOPIC.into(),
            detail: serde_json::to_value(self)?,
        })
    }

    /// The note an event holds: `None` for another event, an error for a
    /// smoothing note that does not read.
    pub fn from_event(event: &RunEvent) -> Option<Result<SmoothingNote, serde_json::Error>> {
        crate::notes::note_of(event, SMOOTHING_TOPIC)
    }
}

/// Every smoothing note of a run's events, in order; one that does not
/// read is left out (an event log of another version).
pub fn smoothing_notes(events: &[RunEvent]) -> Vec<SmoothingNote> {
    crate::notes::notes_of(events, SMOOTHING_TOPIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_reads_back_from_its_event() {
        let spec = SmoothingSpec {
            floor_pct: 60.0,
            ..Default::default()
        };
        let cal = Calibration {
            points: vec![(0.0, 90.0), (0.5, 500.0), (1.0, 690.0)],
            work_w: 700.0,
            limit_w: 700.0,
        };
        let (sm, notes) = DeviceSmoothing::from_spec(&spec, &cal).unwrap();
        let note = SmoothingNote {
            rung_id: 3,
            label: "duty-floor60".into(),
            outcome: CalibrationOutcome::Calibrated,
            reason: None,
            start_ns: 10,
            end_ns: 20,
            gpus: vec![GpuSmoothingNote::new("gpu0", &spec, &cal, &sm, notes)],
        };
        let ev = note.to_event(30).unwrap();
        let other = RunEvent::Note {
            ts_ns: 1,
            topic: "rack".into(),
            detail: serde_json::json!({}),
        };
        assert_eq!(smoothing_notes(&[other, ev]), vec![note.clone()]);
        assert!((note.gpus[0].floor_w - 420.0).abs() < 1e-9);
        assert_eq!(note.gpus[0].idle_w, 90.0);
    }
}
