//! The lifecycle moments a run recorded (`lifecycle` notes of its event
//! log: a workload rung's spawn, and its kill or exit), each with the
//! span of samples that belongs to it: from the previous moment's
//! settling to the next moment, so that one edge's levels never take in
//! another's.

use super::EdgeKind;
use powerlab_rundir::{LifecycleEvent, lifecycle_notes};
use powerlab_samples::load::Run;

/// The samples of the span after the previous moment start this long
/// after it (its own edge has settled), ms.
pub const AFTER_PREVIOUS_MS: f64 = 500.0;

/// One recorded moment of a workload rung's process.
#[derive(Debug, Clone, PartialEq)]
pub struct Moment {
    /// The edge it starts.
    pub kind: EdgeKind,
    /// Its rung's label.
    pub rung: String,
    /// Its rung's id.
    pub rung_id: u32,
    /// When, run clock, ns.
    pub at_ns: i64,
    /// The earliest sample that belongs to it, ns.
    pub from_ns: i64,
    /// The latest, ns (exclusive).
    pub to_ns: i64,
}

/// The edge a recorded moment starts.
fn kind_of(e: LifecycleEvent) -> EdgeKind {
    match e {
        LifecycleEvent::Spawn => EdgeKind::StartCold,
        LifecycleEvent::Kill => EdgeKind::StopKill,
        LifecycleEvent::Exit => EdgeKind::StopExit,
    }
}

/// Every lifecycle moment of the run, in time order, each spanning from
/// [`AFTER_PREVIOUS_MS`] after the previous moment, or after the end of
/// the window of the rung before its own, to the next moment (or the
/// run's last sample at `end_ns`).
pub fn moments(run: &Run, end_ns: i64) -> Vec<Moment> {
    let mut notes = lifecycle_notes(&run.events);
    notes.sort_by_key(|n| n.at_ns);
    let after = powerlab_core::units::ms_to_ns_trunc(AFTER_PREVIOUS_MS);
    // The end of the window of the last rung that started before `at`
    // and is not the moment's own.
    let rung_before = |id: u32, at: i64| {
        run.rungs
            .iter()
            .filter(|r| r.info.id != id && r.epoch_ns < at)
            .map(|r| r.end_ns + after)
            .max()
    };
    (0..notes.len())
        .map(|i| {
            let n = &notes[i];
            let prev = i.checked_sub(1).map(|j| notes[j].at_ns + after);
            let from = prev
                .into_iter()
                .chain(rung_before(n.rung_id, n.at_ns))
                .max()
                .unwrap_or(i64::MIN)
                .min(n.at_ns);
            let to = notes.get(i + 1).map_or(end_ns, |x| x.at_ns).max(n.at_ns);
            Moment {
                kind: kind_of(n.event),
                rung: n.label.clone(),
                rung_id: n.rung_id,
                at_ns: n.at_ns,
                from_ns: from,
                to_ns: to,
            }
        })
        .collect()
}
