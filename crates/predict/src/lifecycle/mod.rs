//! A schedule's `[lifecycle]`: the job's start, checkpoints, crashes,
//! restarts and end placed in a waveform of the whole job, streamed over
//! the study's span (a day of a million GPUs is never held).
//!
//! 1. [`timeline`]: the events in time, crashes declared and drawn;
//! 2. [`edges`]: each event's transition, one GPU's measured edge (a cold
//!    start, a kill, a clean exit; a checkpoint as the duty fall and rise
//!    of a process that holds its context), and the levels between;
//! 3. [`mix`]: the running share and the rest's level at each instant;
//! 4. [`study`]: every scenario's running waveform drawn as
//!    [`stream`](super::stream), the state applied, the figures updated
//!    ([`stats`]) and the rows handed to the writers;
//! 5. [`judge`]: the figures against the `[grid]` and `[supply]`.

pub mod edges;
pub mod judge;
pub mod mix;
pub mod stats;
pub mod study;
pub mod timeline;

#[cfg(test)]
mod tests;

use super::waveform::Layout;
use edges::Edges;
use powerlab_campaign::schedule::Lifecycle;
use serde::Serialize;
use study::Window;
use timeline::{Event, EventKind};

/// A lifecycle study: what was streamed, its figures and their verdicts.
#[derive(Debug, Clone, PartialEq)]
pub struct LifecycleStudy {
    /// What is streamed.
    pub plan: Plan,
    /// Its figures.
    pub study: study::Study,
    /// The figures against the `[grid]` and `[supply]`.
    pub verdicts: Vec<judge::Verdict>,
}

impl LifecycleStudy {
    /// Streams `plan` (keeping nothing but the figures) and judges it.
    ///
    /// # Errors
    ///
    /// None in practice: a sink that keeps nothing does not fail.
    pub fn of(
        plan: Plan,
        grid: Option<&powerlab_campaign::Grid>,
        supply: Option<&powerlab_campaign::Supply>,
    ) -> std::io::Result<LifecycleStudy> {
        let study = study::study(&plan, &mut study::NoSink)?;
        let verdicts = judge::judge(&study, grid, supply, plan.gpus);
        Ok(LifecycleStudy {
            plan,
            study,
            verdicts,
        })
    }
}

/// A state of the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// No process on the GPUs: before the start, after the end.
    Idle,
    /// Running the iteration (from each start's event).
    Running,
    /// In a checkpoint.
    Checkpoint,
    /// Down after a crash, until the restart.
    Down,
}

impl State {
    /// The name in the report.
    pub fn name(self) -> &'static str {
        match self {
            State::Idle => "idle",
            State::Running => "running",
            State::Checkpoint => "checkpoint",
            State::Down => "down (crashed)",
        }
    }
}

/// One scenario's running job: its iterations and where its nodes start.
#[derive(Debug, Clone, PartialEq)]
pub struct Channel {
    /// The scenario's label.
    pub label: String,
    /// Each stagger group's GPU iteration, W.
    pub iterations: Vec<Vec<f64>>,
    /// The nodes' offsets.
    pub layout: Layout,
}

/// What the study streams: the lifecycle, its events and edges, every
/// scenario's running job.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The schedule's `[lifecycle]`.
    pub lc: Lifecycle,
    /// GPUs in the job.
    pub gpus: u64,
    /// The iteration, ms.
    pub iteration_ms: f64,
    /// The events.
    pub events: Vec<Event>,
    /// The transitions and levels.
    pub edges: Edges,
    /// Every scenario (the first is the schedule's own).
    pub channels: Vec<Channel>,
    /// The supply's windows, ms (the highest mean over each is stated).
    pub windows_ms: Vec<f64>,
    /// The critical band, Hz.
    pub band_hz: [f64; 2],
    /// What the reader must know: edges, levels, events moved or dropped.
    pub notes: Vec<String>,
}

impl Plan {
    /// An event's level windows: whole iterations, at least a second,
    /// before it and after its edge settles.
    pub fn window(&self, kind: EventKind, t_s: f64) -> Window {
        let (tr, _, _) = mix::Mixer::new(&self.events, &self.edges).of(kind);
        Window::new(t_s, tr.length_ms() / 1000.0, self.level_s())
    }

    /// The level window, s: whole iterations, at least a second.
    pub fn level_s(&self) -> f64 {
        let it = self.iteration_ms / 1000.0;
        it * (1.0 / it).ceil().max(1.0)
    }

    /// Time in each state over the span, s.
    pub fn states(&self) -> Vec<(State, f64)> {
        let mut out = vec![
            (State::Idle, 0.0),
            (State::Running, 0.0),
            (State::Checkpoint, 0.0),
            (State::Down, 0.0),
        ];
        let mut t = 0.0;
        let mut s = State::Idle;
        for e in &self.events {
            add(&mut out, s, e.t_s - t);
            t = e.t_s;
            s = match e.kind {
                EventKind::Start | EventKind::Restart | EventKind::CheckpointEnd => State::Running,
                EventKind::CheckpointBegin => State::Checkpoint,
                EventKind::Crash => State::Down,
                EventKind::End => State::Idle,
            };
        }
        add(&mut out, s, self.lc.span_s - t);
        out
    }
}

fn add(out: &mut [(State, f64)], s: State, dt: f64) {
    if let Some(x) = out.iter_mut().find(|x| x.0 == s) {
        x.1 += dt.max(0.0);
    }
}

/// Each transition the study places and the measured edge it comes from,
/// with that edge's own figures per GPU (the ± over its events).
fn quoted(edges: &Edges, measured: &[powerlab_analysis::lifecycle::LifecycleEdge]) -> Vec<String> {
    let figures = |tr: &edges::Transition| {
        let e = tr.kind.and_then(|k| measured.iter().find(|e| e.kind == k));
        e.map_or_else(String::new, |e| {
            format!(
                ": {:.1} → {:.1} W per GPU, step {:+.1} ± {:.1} W, delay {:.1} ms, 10–90 % {}{:.1} ms",
                e.before_w.mean,
                e.after_w.mean,
                e.step_w.mean,
                e.step_w.sd,
                e.delay_ms.mean,
                if e.t10_90_is_bound() { "≤ " } else { "" },
                e.t10_90_ms.mean
            )
        })
    };
    let mut out = vec![format!(
        "start and restart: {}{}",
        edges.start.source,
        figures(&edges.start)
    )];
    let each = [
        ("checkpoint in", &edges.checkpoint_down),
        ("checkpoint out", &edges.checkpoint_up),
        ("crash", &edges.crash),
        ("end", &edges.end),
    ];
    for (what, tr) in each {
        if let Some(t) = tr {
            out.push(format!("{what}: {}{}", t.source, figures(t)));
        }
    }
    out
}

/// The study's plan from the schedule's lifecycle, the run's measured
/// edges and every scenario's running job.
///
/// # Errors
///
/// An edge the lifecycle needs that the run did not measure, or a
/// declared crash when the job does not run, in words.
pub fn plan(
    lc: &Lifecycle,
    measured: &[powerlab_analysis::lifecycle::LifecycleEdge],
    gpus: u64,
    iteration_ms: f64,
    seed: u64,
    channels: Vec<Channel>,
) -> Result<Plan, String> {
    let (events, mut notes) = timeline::timeline(lc, seed)?;
    let edges = edges::edges(lc, measured)?;
    notes.extend(edges.levels.iter().cloned());
    notes.extend(quoted(&edges, measured));
    Ok(Plan {
        lc: lc.clone(),
        gpus,
        iteration_ms,
        events,
        edges,
        channels,
        windows_ms: Vec::new(),
        band_hz: powerlab_campaign::DEFAULT_BAND_HZ,
        notes,
    })
}
