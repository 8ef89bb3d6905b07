//! The transitions a lifecycle is built from, each one GPU's measured
//! edge as the share of its step done since the event (0 at the event, 1
//! once settled), and the levels between them: a start is the run's cold
//! start (or its duty rise, or a declared ramp), a checkpoint the duty
//! fall and rise of a process that holds its context, a crash the kill
//! edge, the end the clean exit.

use powerlab_analysis::lifecycle::{EdgeKind, LifecycleEdge};
use powerlab_campaign::schedule::{Lifecycle, StartEdge};

/// The share of a step below which an edge recorded before its moment has
/// not begun (the level before it scatters by a few per cent).
const EARLY_SHARE: f64 = 0.05;

/// The non-decreasing sequence nearest `y` in least squares (pooling
/// adjacent violators): the share of the GPUs that have changed state
/// never goes back. A mean shape of few events binned finer than their
/// samples alternates between one event's sample and the next's (a cold
/// start's on an H100 read 117, 399, 121, 422 W 50 ms apart); across a
/// job's nodes that is noise, not a ripple.
pub fn monotone(y: &[f64]) -> Vec<f64> {
    let mut blocks: Vec<(f64, usize)> = Vec::with_capacity(y.len());
    for &v in y {
        blocks.push((v, 1));
        while blocks.len() > 1 {
            let (b, nb) = blocks[blocks.len() - 1];
            let (a, na) = blocks[blocks.len() - 2];
            if a <= b {
                break;
            }
            blocks.pop();
            let n = na + nb;
            let last = blocks.len() - 1;
            blocks[last] = ((a * na as f64 + b * nb as f64) / n as f64, n);
        }
    }
    blocks
        .into_iter()
        .flat_map(|(v, n)| std::iter::repeat_n(v, n))
        .collect()
}

/// A transition: the share of the step done, from the event on.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    /// The share done, one point per `step_ms` from the event.
    pub done: Vec<f64>,
    /// Its spacing, ms.
    pub step_ms: f64,
    /// Where it comes from, in words.
    pub source: String,
    /// The measured edge's own 10–90 % time, ms, and its spread over the
    /// measured events (sd), where measured.
    pub measured_t10_90_ms: Option<(f64, f64)>,
    /// The measured edge it comes from (None: declared).
    pub kind: Option<EdgeKind>,
}

impl Transition {
    /// One GPU's measured edge from the event on, as the share of its
    /// step: the edge's level before is 0, its level after 1, held within
    /// 0 ..= 1 and never going back ([`monotone`]). The edge gives when the GPUs change state,
    /// not their transient: a burst above the settled level (the virus's
    /// start on the simulated H200 reaches ~945 W for a few hundred ms
    /// before settling at ~600) multiplied onto the job's own level, which
    /// already holds each iteration's compute burst, drew 1,580 W a GPU
    /// (a 160 MW peak for a 93 MW job); the running job's waveform carries
    /// its own.
    pub fn of_edge(e: &LifecycleEdge) -> Option<Transition> {
        let s = &e.shape_w;
        let step = e.shape_step_ms;
        let (from, to) = (e.before_w.mean, e.after_w.mean);
        if s.len() < 4 || step <= 0.0 || (to - from).abs() < 1e-9 {
            return None;
        }
        let zero = (((-e.shape_t0_ms) / step).round().max(0.0) as usize).min(s.len() - 1);
        let share: Vec<f64> = s
            .iter()
            .map(|v| ((v - from) / (to - from)).clamp(0.0, 1.0))
            .collect();
        let done = monotone(&share);
        // An edge that begins before its recorded moment (a clean exit is
        // seen once the process has torn down, ~0.9 s after its GPU fell
        // on an H100) begins the transition there: a job's end is its fall.
        let half = done.iter().position(|x| *x >= 0.5).unwrap_or(zero);
        let first = if half < zero {
            done[..half]
                .iter()
                .rposition(|x| *x < EARLY_SHARE)
                .map_or(0, |i| i + 1)
        } else {
            zero
        };
        Some(Transition {
            done: done[first..].to_vec(),
            step_ms: step,
            source: format!(
                "the run's measured {} edge ({} events × {} GPUs, rungs {})",
                e.kind.name(),
                e.repeats,
                e.gpus,
                match e.rungs.as_slice() {
                    [first, _, .., last] => format!("{first} … {last}"),
                    all => all.join(", "),
                }
            ),
            measured_t10_90_ms: Some((e.t10_90_ms.mean, e.t10_90_ms.sd)),
            kind: Some(e.kind),
        })
    }

    /// A linear ramp over `ramp_s`.
    pub fn ramp(ramp_s: f64, step_ms: f64) -> Transition {
        let n = ((ramp_s * 1000.0 / step_ms).ceil() as usize).max(1);
        Transition {
            done: (0..=n).map(|k| k as f64 / n as f64).collect(),
            step_ms,
            source: format!("a declared linear ramp over {ramp_s} s"),
            measured_t10_90_ms: None,
            kind: None,
        }
    }

    /// The share done `tau_ms` after the event (1 once past the shape).
    pub fn at(&self, tau_ms: f64) -> f64 {
        if tau_ms < 0.0 {
            return 0.0;
        }
        let x = tau_ms / self.step_ms;
        let j = x.floor() as usize;
        if j + 1 >= self.done.len() {
            return 1.0;
        }
        let f = x - j as f64;
        self.done[j] * (1.0 - f) + self.done[j + 1] * f
    }

    /// How long it lasts, ms (past it, the share is 1).
    pub fn length_ms(&self) -> f64 {
        self.done.len() as f64 * self.step_ms
    }

    /// Spread over nodes started uniformly over `width_ms`: the mean of
    /// the transition delayed by every offset.
    pub fn spread(&self, width_ms: f64) -> Transition {
        let k = (width_ms / self.step_ms).round() as usize;
        if k == 0 {
            return self.clone();
        }
        let n = self.done.len() + k;
        let done = (0..n)
            .map(|j| {
                (0..=k)
                    .map(|d| self.at((j as f64 - d as f64) * self.step_ms))
                    .sum::<f64>()
                    / (k + 1) as f64
            })
            .collect();
        Transition {
            done,
            source: format!("{}, nodes spread uniformly over {width_ms} ms", self.source),
            ..self.clone()
        }
    }

    /// The times the share first reaches 10 % and 90 %, ms.
    pub fn t10_t90_ms(&self) -> (f64, f64) {
        let first = |q: f64| {
            self.done
                .iter()
                .position(|v| *v >= q)
                .map_or(self.length_ms(), |j| j as f64 * self.step_ms)
        };
        (first(0.1), first(0.9))
    }
}

/// Every transition of a lifecycle, and the levels between them, W per
/// GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct Edges {
    /// The job's start and every restart.
    pub start: Transition,
    /// Into a checkpoint (None: the schedule has none).
    pub checkpoint_down: Option<Transition>,
    /// Out of it.
    pub checkpoint_up: Option<Transition>,
    /// A crash (None: the schedule declares none and draws none).
    pub crash: Option<Transition>,
    /// The clean end (None: the job runs to the span's end).
    pub end: Option<Transition>,
    /// An instant step (what an edge the schedule does not place would
    /// be).
    pub instant: Transition,
    /// A GPU with no process on it, W.
    pub idle_w: f64,
    /// A GPU through a checkpoint, W.
    pub checkpoint_w: f64,
    /// Where each level comes from, in words.
    pub levels: Vec<String>,
}

/// The edge of `kind` the run measured, or an error that says how to
/// measure it.
fn measured(edges: &[LifecycleEdge], kind: EdgeKind) -> Result<&LifecycleEdge, String> {
    edges.iter().find(|e| e.kind == kind).ok_or_else(|| {
        let how = match kind {
            EdgeKind::StartCold | EdgeKind::StopKill | EdgeKind::StopExit => {
                "a `kind = \"workload\"` phase with `stop = \"sigkill\"` and one with `stop = \"exit\"` (campaigns/edges-demo.toml, campaigns/device-lifecycle.toml)"
            }
            EdgeKind::StartHeld | EdgeKind::StopHeld => "a duty phase",
        };
        let or_idle = if kind == EdgeKind::StopKill {
            " (where the schedule has no crash, declaring lifecycle.idle_w_per_gpu does instead: the kill edge gives the idle level)"
        } else {
            ""
        };
        format!(
            "the schedule's [lifecycle] needs the run's measured {} edge, and the run has none: predict from a run whose campaign has {how}{or_idle}",
            kind.name()
        )
    })
}

/// The transition of the measured edge `kind`.
fn transition(edges: &[LifecycleEdge], kind: EdgeKind) -> Result<Transition, String> {
    let e = measured(edges, kind)?;
    Transition::of_edge(e).ok_or_else(|| {
        format!(
            "the run's measured {} edge has no shape to build from (a step of 0 W, or fewer than 4 points); measure it again",
            kind.name()
        )
    })
}

/// A clean end: the measured exit's own fall, aligned on its edge (its
/// 10–90 % time as a straight ramp). Its mean shape is aligned where each
/// exit was seen, after the process's teardown, which varies (±120 ms on
/// an H100, widening that shape's 10–90 % to ~370 ms); a synchronous
/// job's ranks leave their last iteration together, so their GPUs fall
/// together.
fn end_of(e: &LifecycleEdge) -> Result<Transition, String> {
    let t = e.t10_90_ms.mean;
    if !(t.is_finite() && t >= 0.0) {
        return Err(
            "the run's measured stop_exit edge has no 10–90 % time; measure it again".into(),
        );
    }
    let mut tr = Transition::ramp(t / 0.8 / 1000.0, (t / 20.0).clamp(0.1, 10.0));
    tr.source = format!(
        "the run's measured clean exit, its own fall (10–90 % {t:.1} ms over {} events × {} GPUs) as a ramp",
        e.repeats, e.gpus
    );
    tr.measured_t10_90_ms = Some((t, e.t10_90_ms.sd));
    tr.kind = Some(e.kind);
    Ok(tr)
}

/// The lifecycle's transitions and levels from the run's measured edges
/// and the schedule's declarations.
///
/// # Errors
///
/// An edge the schedule needs that the run did not measure, in words
/// naming the campaign phase that measures it.
pub fn edges(lc: &Lifecycle, measured_edges: &[LifecycleEdge]) -> Result<Edges, String> {
    let ckpt = lc.checkpoint.is_some();
    let crashes = !lc.crash_at_s.is_empty() || lc.crash_per_hour > 0.0;
    let when = |need: bool, kind: EdgeKind| -> Result<Option<Transition>, String> {
        need.then(|| transition(measured_edges, kind)).transpose()
    };
    let start = match lc.start {
        StartEdge::Measured => transition(measured_edges, EdgeKind::StartCold)?,
        StartEdge::Held => transition(measured_edges, EdgeKind::StartHeld)?,
        StartEdge::Ramp { ramp_s } => Transition::ramp(ramp_s, 10.0),
    };
    let mut levels = Vec::new();
    let idle_w = match lc.idle_w_per_gpu {
        Some(w) => {
            levels.push(format!("idle {w:.0} W per GPU, as declared"));
            w
        }
        None => {
            let kill = measured(measured_edges, EdgeKind::StopKill)?;
            levels.push(format!(
                "idle {:.1} W per GPU, the level the run's kill edge settled at",
                kill.after_w.mean
            ));
            kill.after_w.mean
        }
    };
    let checkpoint_w = match lc.checkpoint.and_then(|c| c.w_per_gpu) {
        Some(w) => {
            levels.push(format!("checkpoint {w:.0} W per GPU, as declared"));
            w
        }
        None if ckpt => {
            let held = measured(measured_edges, EdgeKind::StopHeld)?;
            levels.push(format!("checkpoint {:.1} W per GPU, the level the run's duty fall settled at (a GPU holding its context, computing nothing)", held.after_w.mean));
            held.after_w.mean
        }
        None => f64::NAN,
    };
    Ok(Edges {
        start: start.spread(lc.start_spread_ms),
        checkpoint_down: when(ckpt, EdgeKind::StopHeld)?,
        checkpoint_up: when(ckpt, EdgeKind::StartHeld)?,
        crash: when(crashes, EdgeKind::StopKill)?,
        end: lc
            .end_at_s
            .map(|_| end_of(measured(measured_edges, EdgeKind::StopExit)?))
            .transpose()?,
        instant: Transition {
            done: vec![1.0],
            step_ms: 1.0,
            source: "an instant step".into(),
            measured_t10_90_ms: None,
            kind: None,
        },
        idle_w,
        checkpoint_w,
        levels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_monotone_fit_pools_what_goes_back_and_keeps_the_mean() {
        let y = [0.0, 0.3, 0.1, 0.5, 0.4, 0.45, 1.0];
        let m = monotone(&y);
        assert!(m.windows(2).all(|w| w[0] <= w[1]), "{m:?}");
        assert_eq!(m[0], 0.0);
        assert!((m[1] - 0.2).abs() < 1e-12 && (m[2] - 0.2).abs() < 1e-12);
        assert!((m[3] - 0.45).abs() < 1e-12 && (m[5] - 0.45).abs() < 1e-12);
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        assert!((mean(&m) - mean(&y)).abs() < 1e-12);
    }
}
