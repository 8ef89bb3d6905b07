//! A node run's lifecycle edges: every kind of recorded moment over every
//! GPU ([`super::node`]) and the held edges of its duty rungs
//! ([`super::held`]).

use super::events::{Moment, moments};
use super::held;
use super::node::{Buffers, event_edge};
use super::{EdgeKind, LifecycleEdge};
use crate::sensor::model::SensorModel;
use powerlab_samples::load::Run;
use powerlab_samples::series::{EdgeIndex, SeriesSet};

/// A node run's lifecycle edges and what could not be measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lifecycle {
    /// One edge per kind measured, in [`EdgeKind`] order.
    pub edges: Vec<LifecycleEdge>,
    /// The lifecycle moments the run recorded (0: it measured no
    /// process's edges, and the report says nothing of them).
    pub recorded: usize,
    /// Each GPU's event that could not be measured, in words.
    pub refused: Vec<String>,
}

/// Every lifecycle edge of the run: each kind of recorded moment over
/// every GPU, and the held edges of its duty rungs (about their recorded
/// edges, `edges`).
pub fn analyse(run: &Run, series: &SeriesSet, model: &SensorModel, edges: &EdgeIndex) -> Lifecycle {
    let end = series.last_ts_ns().unwrap_or(i64::MAX);
    let all = moments(run, end);
    let bufs = Buffers::of(run, series, model);
    let mut out = Lifecycle {
        recorded: all.len(),
        ..Lifecycle::default()
    };
    for kind in [EdgeKind::StartCold, EdgeKind::StopKill, EdgeKind::StopExit] {
        let of: Vec<&Moment> = all.iter().filter(|m| m.kind == kind).collect();
        if of.is_empty() {
            continue;
        }
        let mut refused = Vec::new();
        if let Some(e) = event_edge(run, &bufs, kind, &of, &mut refused) {
            out.edges.push(e);
        }
        out.refused.extend(refused);
    }
    // The two held kinds are independent: each on its own core.
    let held = powerlab_samples::parallel::map_in_order(
        &[EdgeKind::StartHeld, EdgeKind::StopHeld],
        |kind| held::held_edge(run, &bufs, edges, *kind),
    );
    out.edges.extend(held.into_iter().flatten());
    out.edges.sort_by_key(|e| e.kind);
    out
}
