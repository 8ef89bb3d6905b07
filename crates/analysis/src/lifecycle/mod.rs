//! Lifecycle edges measured on the node: how fast a GPU's draw rises when
//! a job starts (from a cold process, or from a context it holds) and how
//! fast it falls when the process driving it is killed (SIGKILL
//! mid-compute) or exits cleanly. `powerlab predict` builds a schedule's
//! `[lifecycle]` (start, checkpoint, crash, restart, end) from these, never
//! from square waves where a measured edge exists.

pub mod analyse;
mod events;
pub mod held;
pub mod measure;
pub mod node;
pub mod pool;
pub mod rows;

pub use analyse::{Lifecycle, analyse};

use serde::Serialize;

/// Which lifecycle edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EdgeKind {
    /// A new process starts the job: CUDA initialisation, then load.
    StartCold,
    /// A process that holds its context starts computing again (a duty
    /// rung's rising edge).
    StartHeld,
    /// The process driving the GPU is killed mid-compute (SIGKILL).
    StopKill,
    /// The process ends its work and exits on its own (or on SIGTERM,
    /// handled).
    StopExit,
    /// A process that holds its context stops computing (a duty rung's
    /// falling edge).
    StopHeld,
}

impl EdgeKind {
    /// The name used in files and the report.
    pub fn name(self) -> &'static str {
        match self {
            EdgeKind::StartCold => "start_cold",
            EdgeKind::StartHeld => "start_held",
            EdgeKind::StopKill => "stop_kill",
            EdgeKind::StopExit => "stop_exit",
            EdgeKind::StopHeld => "stop_held",
        }
    }

    /// A rising edge.
    pub fn rises(self) -> bool {
        matches!(self, EdgeKind::StartCold | EdgeKind::StartHeld)
    }
}

/// A figure over the measured events: mean, spread, extremes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// Events (GPU × repeat) it is computed from.
    pub n: usize,
    /// Mean.
    pub mean: f64,
    /// Sample standard deviation (0 for one event).
    pub sd: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    /// The spread of `values` (none: every figure NaN, `n` 0).
    pub fn of(values: &[f64]) -> Spread {
        let n = values.len();
        if n == 0 {
            return Spread {
                n,
                mean: f64::NAN,
                sd: f64::NAN,
                min: f64::NAN,
                max: f64::NAN,
            };
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let sd = if n > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Spread {
            n,
            mean,
            sd,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }
}

/// Fewer events than this leave a spread that is no spread.
pub const MIN_EVENTS: usize = 3;

/// A 10–90 % time under this many times the resolution is a bound.
pub const BOUND_PER_RESOLUTION: f64 = 2.0;

/// The resolution rule, one for every edge timed from samples (duty
/// edges, lifecycle edges, workloads): a time (a 10–90 % time, a delay)
/// under [`BOUND_PER_RESOLUTION`] × the samples' own spacing, or × the
/// finer resolution pooling gives, is a bound, however many events were
/// pooled. Pooling events at other phases of the sample grid shows an
/// edge's shape finer than one event's samples, but each event still
/// has 1–3 samples on an edge under two spacings: a kill's 10–90 % read
/// 33.8 ms "pooled" from 20 ms samples, with one event's standard
/// deviation 88 ms.
pub fn is_bound(time_ms: f64, spacing_ms: f64, resolution_ms: f64) -> bool {
    time_ms.abs() < BOUND_PER_RESOLUTION * spacing_ms.max(resolution_ms)
}

/// What the reader must know of an edge measured from `events` events:
/// too few of them, a 10–90 % time or a delay that is a bound
/// ([`is_bound`]), events refused (in words, each naming its rung and
/// GPU).
pub(crate) fn caveat(
    events: usize,
    (t10_90_ms, delay_ms): (f64, f64),
    (spacing_ms, resolution_ms): (f64, f64),
    refused: &[String],
) -> Option<String> {
    let mut parts = Vec::new();
    if events < MIN_EVENTS {
        parts.push(format!(
            "only {events} event(s), fewer than {MIN_EVENTS}: the spread says little"
        ));
    }
    let unit = spacing_ms.max(resolution_ms);
    let what = if spacing_ms >= resolution_ms {
        "the sample spacing"
    } else {
        "the resolution"
    };
    if is_bound(t10_90_ms, spacing_ms, resolution_ms) {
        parts.push(format!(
            "the 10–90 % time is under {BOUND_PER_RESOLUTION} × {what} ({unit:.1} ms): a bound (the edge is at least this fast), however many events were pooled"
        ));
    }
    if is_bound(delay_ms, spacing_ms, resolution_ms) {
        parts.push(format!(
            "the delay is under {BOUND_PER_RESOLUTION} × {what} ({unit:.1} ms): a bound (at most this long), its ± the events' own scatter"
        ));
    }
    if !refused.is_empty() {
        let shown: Vec<&str> = refused.iter().take(3).map(String::as_str).collect();
        parts.push(format!(
            "{} event(s) not measured ({}{})",
            refused.len(),
            shown.join("; "),
            if refused.len() > shown.len() {
                "; …"
            } else {
                ""
            }
        ));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// One kind of lifecycle edge as the run measured it, per GPU (every
/// figure is one GPU's, W or ms).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LifecycleEdge {
    /// Which edge.
    pub kind: EdgeKind,
    /// The rungs it was measured in (labels).
    pub rungs: Vec<String>,
    /// Events measured (repeats); each GPU of each is one sample of the
    /// figures below.
    pub repeats: usize,
    /// GPUs per event.
    pub gpus: usize,
    /// The level before the edge, W per GPU (the mean over the last
    /// second before it: for a stop, the running job's mean).
    pub before_w: Spread,
    /// The level it settles at, W per GPU.
    pub after_w: Spread,
    /// after − before, W per GPU (negative: a fall).
    pub step_w: Spread,
    /// From the event (the spawn, the signal, the exit) to 10 % of the
    /// step, ms: a cold start's CUDA initialisation shows here.
    pub delay_ms: Spread,
    /// From 10 % to 90 % of the step, ms.
    pub t10_90_ms: Spread,
    /// The finest time the samples resolve, ms (a 10–90 % time under it is
    /// a bound, not a measurement).
    pub resolution_ms: f64,
    /// The samples' own spacing (the widest GPU's median), ms: a time
    /// under twice it is a bound whatever the pooling ([`is_bound`]).
    pub spacing_ms: f64,
    /// One GPU's mean edge, W: the mean over GPUs and repeats, each
    /// aligned at its event, at `shape_step_ms` from `shape_t0_ms` after
    /// the event (negative: before it).
    pub shape_w: Vec<f64>,
    /// The shape's spacing, ms.
    pub shape_step_ms: f64,
    /// The shape's first point, ms from the event.
    pub shape_t0_ms: f64,
    /// What the reader must know (events refused, a bound, too few).
    pub caveat: Option<String>,
}

impl LifecycleEdge {
    /// Whether the 10–90 % time is under [`BOUND_PER_RESOLUTION`] × the
    /// sample spacing or the resolution ([`is_bound`]): a bound (the edge
    /// is at least this fast), not a measurement.
    pub fn t10_90_is_bound(&self) -> bool {
        is_bound(self.t10_90_ms.mean, self.spacing_ms, self.resolution_ms)
    }

    /// Whether the delay is under [`BOUND_PER_RESOLUTION`] × the sample
    /// spacing ([`is_bound`]): a bound (at most this long).
    pub fn delay_is_bound(&self) -> bool {
        is_bound(self.delay_ms.mean, self.spacing_ms, self.resolution_ms)
    }
}
