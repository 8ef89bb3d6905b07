//! `events.jsonl`: one JSON object a line, flushed as written.

use crate::layout::RunDirError;
pub use powerlab_core::kind::{Mode, PhaseKind};
use powerlab_core::units::PeriodMs;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

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

/// What the run writes once per run or per rung, and in time order, as
/// read so far from an event log: a record repeated (a duplicated line
/// made a rung a second repeat of itself, with a 0 W interval) or out of
/// order is refused, as a row listed twice in `edges.csv` is.
///
/// The run's driver writes `run_started` first, then for each rung a
/// `barrier`, its `rung_started` and its `rung_ended`, and `run_ended`
/// last, every one stamped from the one run clock as it writes it: their
/// `ts_ns` never go back. Faults and interlocks are stamped where they were
/// seen and written later, and notes carry their own times: their `ts_ns`
/// are not checked; a rung's `device_clock`, `smoothing` and
/// `stopped_in_rung` note is written once. A rung whose `rung_started` is
/// missing (lost from the log) is not refused here: the collator names it.
#[derive(Debug, Default)]
pub struct RecordOrder {
    /// The first record's line and event name.
    first: Option<(usize, &'static str)>,
    /// The `run_started` line.
    run_started: Option<usize>,
    /// The `run_ended` line.
    run_ended: Option<usize>,
    /// Each rung's `barrier` line.
    barriers: std::collections::HashMap<u32, usize>,
    /// Each rung's `rung_started` line.
    started: std::collections::HashMap<u32, usize>,
    /// Each rung's `rung_ended` line.
    ended: std::collections::HashMap<u32, usize>,
    /// Each (topic, rung) note's line, for the notes written once per rung.
    notes: std::collections::HashMap<(String, u64), usize>,
    /// The last time-ordered record: its line, `ts_ns` and event name.
    last: Option<(usize, i64, &'static str)>,
}

/// What to do about a record the run wrote once, found again.
const DUPLICATE: &str = "the line was copied: remove it (the samples are untouched), or restore events.jsonl from the original run directory";
/// What to do about a record out of the run's order.
const MOVED: &str = "lines were moved or edited: put them back in the order the run wrote them, or restore events.jsonl from the original run directory";

/// Notes the run writes once per rung (`detail.rung_id`).
const ONCE_PER_RUNG: [&str; 3] = [DEVICE_CLOCK_TOPIC, SMOOTHING_TOPIC, STOPPED_IN_RUNG_TOPIC];

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

impl RecordOrder {
    /// Takes record `e` of line `line` (1-based) after those already
    /// taken.
    ///
    /// # Errors
    ///
    /// What is wrong with it, in words, ending with what to do: a second
    /// `run_started` or `run_started` after another record; a second
    /// `run_ended`; a rung's `barrier`, `rung_started` or `rung_ended`
    /// repeated, or one of them after a later one of the same rung (or
    /// after `run_ended`); a once-per-rung note repeated; a `ts_ns` of
    /// these records earlier than the previous one's.
    pub fn check(&mut self, line: usize, e: &RunEvent) -> Result<(), String> {
        let name = e.name();
        let first = *self.first.get_or_insert((line, name));
        match e {
            RunEvent::RunStarted { .. } => {
                if let Some(at) = self.run_started {
                    return Err(format!(
                        "a second `run_started` (the first is line {at}): a run starts once; {DUPLICATE}"
                    ));
                }
                if first.0 != line {
                    return Err(format!(
                        "`run_started` after line {}'s `{}`: the run writes it first; {MOVED}",
                        first.0, first.1
                    ));
                }
                self.run_started = Some(line);
            }
            RunEvent::RunEnded { .. } => {
                if let Some(at) = self.run_ended {
                    return Err(format!(
                        "a second `run_ended` (the first is line {at}): a run ends once; {DUPLICATE}"
                    ));
                }
                self.run_ended = Some(line);
            }
            RunEvent::Barrier { rung_id, .. } => self.barrier(line, *rung_id)?,
            RunEvent::RungStarted {
                rung,
                epoch_ns,
                measure_from_ns,
                end_ns,
                ..
            } => {
                self.rung_started(line, rung)?;
                window_in_order(rung, *epoch_ns, *measure_from_ns, *end_ns)?;
            }
            RunEvent::RungEnded { rung_id, .. } => self.rung_ended(line, *rung_id)?,
            RunEvent::Note { topic, detail, .. } => return self.note(line, topic, detail),
            RunEvent::Fault { .. } | RunEvent::Interlock { .. } => return Ok(()),
        }
        self.in_time(line, e.ts_ns(), name)
    }

    /// A structural record after `run_ended` is out of order.
    fn after_the_end(&self, what: &str) -> Result<(), String> {
        match self.run_ended {
            Some(at) => Err(format!(
                "{what} after the run ended (line {at}): copied or moved there; remove it, or restore events.jsonl from the original run directory"
            )),
            None => Ok(()),
        }
    }

    /// Rung `id`'s barrier: once, before the rung starts.
    fn barrier(&mut self, line: usize, id: u32) -> Result<(), String> {
        self.after_the_end(&format!("a `barrier` of rung {id}"))?;
        if let Some(at) = self.barriers.get(&id) {
            return Err(format!(
                "a second `barrier` of rung {id} (the first is line {at}): each rung has one; {DUPLICATE}"
            ));
        }
        if let Some(at) = self.started.get(&id).or_else(|| self.ended.get(&id)) {
            return Err(format!(
                "a `barrier` of rung {id} after the rung started (line {at}): out of order; {MOVED}"
            ));
        }
        self.barriers.insert(id, line);
        Ok(())
    }

    /// Rung `rung` starts: once, before it ends.
    fn rung_started(&mut self, line: usize, rung: &RungInfo) -> Result<(), String> {
        let (id, label) = (rung.id, &rung.label);
        self.after_the_end(&format!("rung {id} (`{label}`) starts"))?;
        if let Some(at) = self.started.get(&id) {
            return Err(format!(
                "rung {id} (`{label}`) starts a second time (its `rung_started` is line {at}): a duplicated record would count the rung as a repeat of itself; {DUPLICATE}"
            ));
        }
        if let Some(at) = self.ended.get(&id) {
            return Err(format!(
                "rung {id} (`{label}`) starts after its `rung_ended` (line {at}): out of order; {MOVED}"
            ));
        }
        self.started.insert(id, line);
        Ok(())
    }

    /// Rung `id` ends: once (its start may be missing: lost from the log).
    fn rung_ended(&mut self, line: usize, id: u32) -> Result<(), String> {
        self.after_the_end(&format!("a `rung_ended` of rung {id}"))?;
        if let Some(at) = self.ended.get(&id) {
            return Err(format!(
                "rung {id} ends a second time (its `rung_ended` is line {at}); {DUPLICATE}"
            ));
        }
        self.ended.insert(id, line);
        Ok(())
    }

    /// A note written once per rung appears once.
    fn note(&mut self, line: usize, topic: &str, detail: &serde_json::Value) -> Result<(), String> {
        let Some(id) = detail.get("rung_id").and_then(serde_json::Value::as_u64) else {
            return Ok(());
        };
        if !ONCE_PER_RUNG.contains(&topic) {
            return Ok(());
        }
        if let Some(at) = self.notes.insert((topic.to_string(), id), line) {
            return Err(format!(
                "a second `{topic}` note of rung {id} (the first is line {at}): the run writes one; {DUPLICATE}"
            ));
        }
        Ok(())
    }

    /// The time-ordered records' `ts_ns` never go back.
    fn in_time(&mut self, line: usize, ts_ns: i64, name: &'static str) -> Result<(), String> {
        if let Some((at, prev, what)) = self.last
            && ts_ns < prev
        {
            return Err(format!(
                "`{name}` at ts_ns {ts_ns}, earlier than line {at}'s `{what}` at {prev}: the run writes these records in time order: {MOVED}"
            ));
        }
        self.last = Some((line, ts_ns, name));
        Ok(())
    }
}

/// A rung's window as the runner writes it: the epoch (its barrier) no
/// later than the measured window's start, which is no later than its
/// end. A digit lost from one of them reads as a window of minus 58
/// years, which the collator would fold as a rung of no cycles.
fn window_in_order(
    rung: &RungInfo,
    epoch_ns: i64,
    from_ns: i64,
    end_ns: i64,
) -> Result<(), String> {
    if epoch_ns <= from_ns && from_ns <= end_ns {
        return Ok(());
    }
    Err(format!(
        "rung {} (`{}`) has epoch_ns {epoch_ns}, measure_from_ns {from_ns} and end_ns {end_ns}, which the runner writes in that order: the record was damaged (a digit lost or changed); restore events.jsonl from the original run directory",
        rung.id, rung.label
    ))
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

    /// The lines of a run of two rungs as the driver writes them: a fault
    /// seen during rung 0 written after its end (stamped earlier), a
    /// device-clock note per rung.
    fn run_lines() -> Vec<String> {
        let rung = |id: u32| {
            format!(
                r#"{{"id":{id},"label":"d/p500ms/r{id}","phase":"d","kind":"duty","mode":"in_phase","period_ms":500.0,"duty":0.5,"repeat":1,"repeats":1}}"#
            )
        };
        let mut out = vec![
            r#"{"event":"run_started","ts_ns":100,"campaign":"c","backend":"sim","rungs":2}"#
                .to_string(),
        ];
        for (id, t) in [(0u32, 1000i64), (1, 5000)] {
            out.push(format!(r#"{{"event":"barrier","ts_ns":{t},"rung_id":{id},"ready":[],"epoch_ns":{},"lead_ns":10}}"#, t + 10));
            out.push(format!(r#"{{"event":"rung_started","ts_ns":{t},"rung":{},"epoch_ns":{},"measure_from_ns":{},"end_ns":{},"offsets_ns":[0],"gpus":["gpu0"]}}"#, rung(id), t + 10, t + 20, t + 3000));
            out.push(format!(r#"{{"event":"note","ts_ns":{},"topic":"device_clock","detail":{{"rung_id":{id},"gpus":[]}}}}"#, t + 3001));
            out.push(format!(r#"{{"event":"rung_ended","ts_ns":{},"rung_id":{id},"start_error_ns":[0],"barrier_ok":true}}"#, t + 3002));
        }
        out.insert(
            6,
            r#"{"event":"fault","ts_ns":2000,"gpu":"gpu0","kind":"k","detail":"d","fatal":false}"#
                .into(),
        );
        out.push(r#"{"event":"run_ended","ts_ns":9000,"status":"complete","reason":null}"#.into());
        out
    }

    /// Issue 45, defect 9: a duplicated `rung_started` (a fake repeat of
    /// the rung, with a 0 W interval) was read as a second rung; now it,
    /// and every other record repeated or out of order, is refused naming
    /// the file and the line, with what to do.
    #[test]
    fn a_duplicated_or_out_of_order_record_is_refused_naming_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let lines = run_lines();
        // As the run writes it: read whole; and with rung 0's start lost.
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        assert_eq!(read_events(&path).unwrap().len(), lines.len());
        let mut lost = lines.clone();
        lost.remove(2);
        std::fs::write(&path, lost.join("\n") + "\n").unwrap();
        assert_eq!(read_events(&path).unwrap().len(), lines.len() - 1);
        // (edit, the line named, what the message says)
        type Edit = fn(&mut Vec<String>);
        let cases: [(&str, Edit, usize, &str); 9] = [
            (
                "a digit lost from end_ns",
                |l| l[2] = l[2].replace(r#""end_ns":4000"#, r#""end_ns":400"#),
                3,
                "which the runner writes in that order",
            ),
            (
                "rung_started duplicated",
                |l| {
                    let x = l[2].clone();
                    l.insert(3, x)
                },
                4,
                "starts a second time",
            ),
            (
                "rung_started appended",
                |l| {
                    let x = l[7].clone();
                    l.push(x)
                },
                12,
                "starts after the run ended (line 11)",
            ),
            (
                "rung_ended duplicated",
                |l| {
                    let x = l[4].clone();
                    l.insert(5, x)
                },
                6,
                "ends a second time",
            ),
            (
                "rung_ended before its start",
                |l| l.swap(2, 4),
                5,
                "starts after its `rung_ended` (line 3)",
            ),
            (
                "run_started twice",
                |l| {
                    let x = l[0].clone();
                    l.insert(1, x)
                },
                2,
                "a second `run_started`",
            ),
            (
                "a rung moved before another",
                |l| {
                    let x: Vec<String> = l.drain(5..10).collect();
                    l.splice(1..1, x);
                },
                7,
                "earlier than line 6's `rung_ended`",
            ),
            (
                "barrier duplicated",
                |l| {
                    let x = l[1].clone();
                    l.insert(2, x)
                },
                3,
                "a second `barrier` of rung 0",
            ),
            (
                "note duplicated",
                |l| {
                    let x = l[3].clone();
                    l.insert(4, x)
                },
                5,
                "a second `device_clock` note of rung 0",
            ),
        ];
        for (name, edit, line, says) in cases {
            let mut l = lines.clone();
            edit(&mut l);
            std::fs::write(&path, l.join("\n") + "\n").unwrap();
            let err = read_events(&path).unwrap_err().to_string();
            assert!(err.contains("events.jsonl"), "{name}: {err}");
            assert!(err.contains(&format!("line {line}:")), "{name}: {err}");
            assert!(err.contains(says), "{name}: {err}");
            assert!(err.contains("restore events.jsonl"), "{name}: {err}");
        }
    }
}
