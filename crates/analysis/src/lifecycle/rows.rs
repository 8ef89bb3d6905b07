//! The lifecycle edges as `lifecycle_edges.csv` rows: one per kind, each
//! figure's mean, standard deviation, least and largest over the events
//! (GPU × repeat), rounded as every figure of the report is.

use super::{LifecycleEdge, Spread};
use powerlab_samples::stats::r3;
use serde::Serialize;

/// One edge's row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LifecycleRow {
    /// `start_cold`, `start_held`, `stop_kill`, `stop_exit`, `stop_held`.
    pub kind: &'static str,
    /// The rungs it was measured in, space-separated.
    pub rungs: String,
    /// Events (rungs) measured.
    pub repeats: usize,
    /// GPUs per event.
    pub gpus: usize,
    /// Samples of each figure (GPU × repeat).
    pub n: usize,
    /// Level before, W: mean.
    pub before_w: f64,
    /// Its standard deviation.
    pub before_w_sd: f64,
    /// Level after, W: mean.
    pub after_w: f64,
    /// Its standard deviation.
    pub after_w_sd: f64,
    /// Step, W: mean.
    pub step_w: f64,
    /// Its standard deviation.
    pub step_w_sd: f64,
    /// Smallest.
    pub step_w_min: f64,
    /// Largest.
    pub step_w_max: f64,
    /// Delay (moment to 10 %), ms: mean.
    pub delay_ms: f64,
    /// Its standard deviation: the events' own scatter (each event's own
    /// 10 % crossing), where wider than the pooled fit's.
    pub delay_ms_sd: f64,
    /// Smallest.
    pub delay_ms_min: f64,
    /// Largest.
    pub delay_ms_max: f64,
    /// 10–90 % time, ms: the pooled edge's own.
    pub t10_90_ms: f64,
    /// One event's standard deviation: the jackknife's (its
    /// pseudo-values'); it may exceed the leave-one-out range.
    pub t10_90_ms_sd: f64,
    /// The pooled edge's time without one event, the least (not an
    /// event's own time: one event's samples cannot time an edge shorter
    /// than their spacing).
    #[serde(rename = "t10_90_ms_loo_min")]
    pub t10_90_ms_min: f64,
    /// The same, the largest.
    #[serde(rename = "t10_90_ms_loo_max")]
    pub t10_90_ms_max: f64,
    /// The 10–90 % time is a bound (under twice the sample spacing or the
    /// resolution, however many events were pooled).
    pub t10_90_bound: bool,
    /// The delay is a bound (under twice the sample spacing or the
    /// resolution).
    pub delay_bound: bool,
    /// The samples' own spacing, ms.
    pub spacing_ms: f64,
    /// The finest time the samples resolve, ms.
    pub resolution_ms: f64,
    /// What the reader must know.
    pub caveat: String,
}

/// Mean and standard deviation, rounded.
fn ms(s: &Spread) -> (f64, f64) {
    (r3(s.mean), r3(s.sd))
}

/// One row per edge, in the edges' order.
pub fn rows(edges: &[LifecycleEdge]) -> Vec<LifecycleRow> {
    edges
        .iter()
        .map(|e| {
            let (before_w, before_w_sd) = ms(&e.before_w);
            let (after_w, after_w_sd) = ms(&e.after_w);
            let (step_w, step_w_sd) = ms(&e.step_w);
            let (delay_ms, delay_ms_sd) = ms(&e.delay_ms);
            let (t10_90_ms, t10_90_ms_sd) = ms(&e.t10_90_ms);
            LifecycleRow {
                kind: e.kind.name(),
                rungs: e.rungs.join(" "),
                repeats: e.repeats,
                gpus: e.gpus,
                n: e.step_w.n,
                before_w,
                before_w_sd,
                after_w,
                after_w_sd,
                step_w,
                step_w_sd,
                step_w_min: r3(e.step_w.min),
                step_w_max: r3(e.step_w.max),
                delay_ms,
                delay_ms_sd,
                delay_ms_min: r3(e.delay_ms.min),
                delay_ms_max: r3(e.delay_ms.max),
                t10_90_ms,
                t10_90_ms_sd,
                t10_90_ms_min: r3(e.t10_90_ms.min),
                t10_90_ms_max: r3(e.t10_90_ms.max),
                t10_90_bound: e.t10_90_is_bound(),
                delay_bound: e.delay_is_bound(),
                spacing_ms: r3(e.spacing_ms),
                resolution_ms: r3(e.resolution_ms),
                caveat: e.caveat.clone().unwrap_or_default(),
            }
        })
        .collect()
}
