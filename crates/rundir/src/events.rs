//! `events.jsonl`: one JSON object a line, flushed as written.

use crate::layout::RunDirError;
pub use powerlab_core::kind::{Mode, PhaseKind};
use powerlab_core::units::PeriodMs;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

mod order;
pub use order::RecordOrder;

/// Rung facts copied into the event log so the run directory stands alone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RungInfo {
    /// Rung id.
    pub id: u32,
    /// Unique label.
    pub label: String,
    /// Phase name.
    pub phase: String,
    /// `idle`, `sustained`, `duty`, `nccl`, `soak`, `ramp_up`: a kind this
    /// build does not know makes the line, and so the event log, an error.
    pub kind: PhaseKind,
    /// `in_phase` or `staggered`.
    pub mode: Mode,
    /// Duty period the GPUs ran, ms.
    pub period_ms: Option<PeriodMs>,
    /// Duty period the campaign asked for, ms (equal to `period_ms` unless
    /// the planner detuned it from the sampling grid; absent in runs made
    /// before detuning existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nominal_period_ms: Option<PeriodMs>,
    /// Duty fraction.
    pub duty: f64,
    /// Repeat number (1-based).
    pub repeat: u32,
    /// Repeats of the phase.
    pub repeats: u32,
    /// An idle rung before any CUDA context existed (the first idle
    /// baseline); absent in runs made before it existed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_context: bool,
    /// Keys of the GPUs that ran the load, where only some did (a ramp-up
    /// step, kind `ramp_up`: the others idled); absent when every GPU ran
    /// it, and in runs made before ramp-up existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swinging: Option<Vec<String>>,
    /// The mitigation the rung asked for (a floor, ramps, a hysteresis:
    /// NVIDIA's power-smoothing profile's terms); absent on every other
    /// rung and in runs made before mitigation rungs existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smoothing: Option<powerlab_core::smoothing::SmoothingSpec>,
    /// A workload rung's command and the simulated job that stood in for
    /// it on the simulated node; absent on every other rung.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<Box<WorkloadInfo>>,
}

/// What a workload rung ran, as the event log records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadInfo {
    /// The command, program first.
    pub command: Vec<String>,
    /// The user's iteration hint, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration_ms: Option<f64>,
    /// The simulated job that stands in for it on the simulated node
    /// (whether the command ran is the `workload` note's `ran`).
    pub sim: powerlab_core::training::TrainingSpec,
    /// How the command was stopped at the window's end (absent: SIGTERM,
    /// and in runs made before the key existed).
    #[serde(
        default,
        skip_serializing_if = "powerlab_core::job::WorkloadStop::is_default"
    )]
    pub stop: powerlab_core::job::WorkloadStop,
}

impl RungInfo {
    /// The period the campaign asked for (the achieved one in runs that
    /// predate detuning): what labels and repeat groups go by.
    pub fn requested_period_ms(&self) -> Option<PeriodMs> {
        self.nominal_period_ms.or(self.period_ms)
    }

    /// Whether the rung ran a mitigation (a floor, ramps, a hysteresis):
    /// its swing is not the plain wave's, and the figures that answer
    /// "how hard does the node swing" leave it out.
    pub fn smoothed(&self) -> bool {
        self.smoothing.is_some_and(|s| !s.is_none())
    }
}

/// Topic of the note written after each rung with every GPU's device-clock
/// probes (`{rung_id, gpus: [{gpu, begin_ns, offset_begin_ns, end_ns,
/// offset_end_ns, probe_rtt_ns, drift_ppm}]}`).
pub const DEVICE_CLOCK_TOPIC: &str = "device_clock";

/// Topic of the note written for each mitigation rung's calibration (the
/// level-load staircase run on every GPU before its warm-up): a
/// [`crate::smoothing::SmoothingNote`] (`{rung_id, label, outcome,
/// reason, start_ns, end_ns, gpus: [...]}`; each GPU's asked spec, its
/// calibration points, work, idle and limit W, the floor asked in W, the
/// floor and hold levels, the ramps in ns and steps, and notes). Written
/// also when the calibration failed or was interrupted (`outcome`); its
/// `start_ns..end_ns` is the staircase's window (run clock), which a
/// collator leaves out of the rung's figures. Read it back with
/// [`crate::smoothing::smoothing_notes`].
pub const SMOOTHING_TOPIC: &str = "smoothing";

/// Topic of the note written at the run's start when it serves live
/// metrics (`run --metrics-listen`): `{listen, url}`, the address this
/// node (this rank of a rack) serves them on.
pub const METRICS_TOPIC: &str = "metrics";

/// Topic of the note written when a stop reason (a fault, an interlock, a
/// signal) ends the run inside a rung, warm-up and cool-down included:
/// `{rung_id, label, kind, reason, stopped_at_ns}`, so the record says
/// which rung (which ramp-up step) was under way, and where its window was
/// cut short (`stopped_at_ns`, run clock; null when the stop came outside
/// the window).
pub const STOPPED_IN_RUNG_TOPIC: &str = "stopped_in_rung";

/// A GPU's readiness at a barrier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuReady {
    /// GPU key.
    pub gpu: String,
    /// When it became ready.
    pub ready_at_ns: i64,
    /// Measured arm latency.
    pub arm_latency_ns: i64,
    /// Device clock minus run clock, if measured.
    pub clock_offset_ns: Option<i64>,
    /// Whether the thread feeding the GPU runs in the real-time class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realtime_thread: Option<bool>,
}

/// Events of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum RunEvent {
    /// The run began.
    RunStarted {
        /// When the run started (epoch ns).
        ts_ns: i64,
        /// The campaign's name.
        campaign: String,
        /// The backend that ran it (`cuda` or `sim`).
        backend: String,
        /// Rungs planned.
        rungs: usize,
    },
    /// Every GPU reported ready; the coordinator chose an epoch.
    Barrier {
        /// When the epoch was chosen.
        ts_ns: i64,
        /// Rung id.
        rung_id: u32,
        /// Readiness of each GPU.
        ready: Vec<GpuReady>,
        /// The chosen window start.
        epoch_ns: i64,
        /// Lead between the choice and the epoch.
        lead_ns: i64,
    },
    /// A rung's window began.
    RungStarted {
        /// When the coordinator dispatched it.
        ts_ns: i64,
        /// The rung.
        rung: RungInfo,
        /// Window start (barrier epoch).
        epoch_ns: i64,
        /// Start of the measured window (after any ramp).
        measure_from_ns: i64,
        /// Window end.
        end_ns: i64,
        /// Intended offset of each GPU, ns (stagger is intended, not an error).
        offsets_ns: Vec<i64>,
        /// GPU keys, same order as offsets.
        gpus: Vec<String>,
    },
    /// A rung's window ended.
    RungEnded {
        /// When this happened (epoch ns).
        ts_ns: i64,
        /// Rung id.
        rung_id: u32,
        /// Each GPU's start error against its intended start, ns.
        start_error_ns: Vec<i64>,
        /// Whether every GPU started within the barrier tolerance.
        barrier_ok: bool,
    },
    /// A device or sampler fault.
    Fault {
        /// When this happened (epoch ns).
        ts_ns: i64,
        /// GPU key, if one.
        gpu: Option<String>,
        /// Short kind.
        kind: String,
        /// The evidence, in words.
        detail: String,
        /// Whether it stopped the run.
        fatal: bool,
    },
    /// A safety limit tripped.
    Interlock {
        /// When this happened (epoch ns).
        ts_ns: i64,
        /// Which limit.
        limit: String,
        /// The reading that tripped it.
        reading: String,
    },
    /// The run ended.
    RunEnded {
        /// When this happened (epoch ns).
        ts_ns: i64,
        /// `complete`, `interrupted` or `failed`.
        status: String,
        /// Why, when not complete.
        reason: Option<String>,
    },
    /// A free-form note (NCCL table, calibration, …).
    Note {
        /// When the note was written (epoch ns).
        ts_ns: i64,
        /// What the note is about (e.g. `samplers`).
        topic: String,
        /// The note's content, as JSON.
        detail: serde_json::Value,
    },
}

impl RunEvent {
    /// When it happened (run clock, epoch ns).
    pub fn ts_ns(&self) -> i64 {
        match self {
            RunEvent::RunStarted { ts_ns, .. }
            | RunEvent::Barrier { ts_ns, .. }
            | RunEvent::RungStarted { ts_ns, .. }
            | RunEvent::RungEnded { ts_ns, .. }
            | RunEvent::Fault { ts_ns, .. }
            | RunEvent::Interlock { ts_ns, .. }
            | RunEvent::RunEnded { ts_ns, .. }
            | RunEvent::Note { ts_ns, .. } => *ts_ns,
        }
    }
}

/// Append-only event log.
pub struct EventLog {
    path: PathBuf,
    file: File,
}

impl EventLog {
    /// Creates `events.jsonl`.
    ///
    /// # Errors
    ///
    /// Returns [`RunDirError::Io`] if the file cannot be created; it is
    /// opened with `create_new`, so an `events.jsonl` that already exists is
    /// an error.
    pub fn create(path: &Path) -> Result<EventLog, RunDirError> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| RunDirError::io(path, e))?;
        Ok(EventLog {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Appends and flushes one event.
    ///
    /// # Errors
    ///
    /// Returns [`RunDirError::Format`] if the event cannot be serialized to
    /// JSON, and [`RunDirError::Io`] if writing the line to the file fails.
    pub fn append(&mut self, e: &RunEvent) -> Result<(), RunDirError> {
        let mut line = serde_json::to_string(e).map_err(|er| RunDirError::Format {
            path: self.path.clone(),
            message: er.to_string(),
        })?;
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .map_err(|er| RunDirError::io(&self.path, er))
    }
}

/// Longest event log read when the run recorded no length for it (a killed
/// run): far beyond any campaign's (a week-long soak writes megabytes).
pub const MAX_UNRECORDED_EVENTS_BYTES: u64 = 1 << 30;

/// Reads `events.jsonl`; a torn last line (killed run) is ignored.
///
/// # Errors
///
/// As [`read_events_at_most`] with no recorded length.
pub fn read_events(path: &Path) -> Result<Vec<RunEvent>, RunDirError> {
    read_events_at_most(path, None)
}

/// Reads `events.jsonl`, which must be a regular file of at most
/// `recorded` bytes (the length the run recorded at its end), or of at most
/// [`MAX_UNRECORDED_EVENTS_BYTES`] when it recorded none; a torn last line
/// (killed run) is ignored. Its records must be in the order the run
/// writes them, each once ([`RecordOrder`]).
///
/// # Errors
///
/// Returns [`RunDirError::Io`] if the file cannot be opened (including when
/// it does not exist) or read, and [`RunDirError::Format`] if it is not a
/// regular file, is longer than allowed, a line other than a torn last
/// one (not whole JSON) is not a valid [`RunEvent`] (an unknown rung kind or
/// mode among them), or a record is duplicated or out of order
/// ([`RecordOrder::check`]); the message names the line and the value.
pub fn read_events_at_most(
    path: &Path,
    recorded: Option<u64>,
) -> Result<Vec<RunEvent>, RunDirError> {
    let bytes =
        crate::layout::read_regular(path, Some(recorded.unwrap_or(MAX_UNRECORDED_EVENTS_BYTES)))?;
    let lines: Vec<String> = std::io::BufRead::lines(&bytes[..])
        .collect::<Result<_, _>>()
        .map_err(|e| RunDirError::io(path, e))?;
    let mut out = Vec::new();
    let mut order = RecordOrder::default();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(e) => {
                order
                    .check(i + 1, &e)
                    .map_err(|message| RunDirError::Format {
                        path: path.to_path_buf(),
                        message: format!("line {}: {message}", i + 1),
                    })?;
                out.push(e);
            }
            // A torn last line is a prefix of one, never whole JSON; a whole
            // line that is no event (a rung kind or mode this build does not
            // know) is an error wherever it stands.
            Err(_)
                if i + 1 == lines.len()
                    && serde_json::from_str::<serde::de::IgnoredAny>(line).is_err() =>
            {
                break;
            }
            Err(e) => {
                return Err(RunDirError::Format {
                    path: path.to_path_buf(),
                    message: format!("line {}: {e}", i + 1),
                });
            }
        }
    }
    Ok(out)
}

impl RunEvent {
    /// Its `event` name as written (`rung_started`).
    pub fn name(&self) -> &'static str {
        match self {
            RunEvent::RunStarted { .. } => "run_started",
            RunEvent::Barrier { .. } => "barrier",
            RunEvent::RungStarted { .. } => "rung_started",
            RunEvent::RungEnded { .. } => "rung_ended",
            RunEvent::Fault { .. } => "fault",
            RunEvent::Interlock { .. } => "interlock",
            RunEvent::RunEnded { .. } => "run_ended",
            RunEvent::Note { .. } => "note",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rung_from_before_ramp_up_loads_and_a_ramp_up_step_round_trips() {
        // A `rung_started` rung as written before ramp-up existed.
        let old = r#"{"id":3,"label":"d/p100ms/in_phase","phase":"d","kind":"duty","mode":"in_phase","period_ms":100.11,"duty":0.5,"repeat":1,"repeats":1}"#;
        let info: RungInfo = serde_json::from_str(old).unwrap();
        assert_eq!(info.swinging, None);
        assert!(!serde_json::to_string(&info).unwrap().contains("swinging"));
        let step = RungInfo {
            kind: PhaseKind::RampUp,
            label: "rampup/2of8/p100ms".into(),
            swinging: Some(vec!["gpu0".into(), "gpu1".into()]),
            smoothing: None,
            ..info
        };
        let back: RungInfo = serde_json::from_str(&serde_json::to_string(&step).unwrap()).unwrap();
        assert_eq!(back, step);
    }

    #[test]
    fn an_unknown_rung_kind_is_an_error_naming_the_file_line_and_value() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let rung = r#"{"id":3,"label":"c","phase":"c","kind":"calibration","mode":"in_phase","period_ms":null,"duty":1.0,"repeat":1,"repeats":1}"#;
        let started = format!(
            r#"{{"event":"rung_started","ts_ns":1,"rung":{rung},"epoch_ns":1,"measure_from_ns":1,"end_ns":2,"offsets_ns":[0],"gpus":["gpu0"]}}"#
        );
        let run = r#"{"event":"run_started","ts_ns":0,"campaign":"c","backend":"sim","rungs":1}"#;
        // Last line or not, a whole line with an unknown kind is an error.
        for text in [
            format!("{run}\n{started}\n"),
            format!("{run}\n{started}\n{run}\n"),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = read_events(&path).unwrap_err().to_string();
            assert!(err.contains("events.jsonl"), "{err}");
            assert!(err.contains("line 2"), "{err}");
            assert!(err.contains("calibration"), "{err}");
        }
        // A torn last line is still ignored.
        std::fs::write(&path, format!("{run}\n{}", &started[..40])).unwrap();
        assert_eq!(read_events(&path).unwrap().len(), 1);
    }
}
