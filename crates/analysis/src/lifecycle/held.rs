//! The edges of a process that holds its context: the duty rungs' own
//! rises and falls (the power virus switched on and off), every GPU about
//! each of its recorded edges (`edges.csv`: the device's own time of the
//! switch, so each event's timing is exact and the pooled edge is not
//! widened by aligning it). Only plain duty rungs whose on- and
//! off-phases both last [`MIN_PHASE_MS`] or more are used, at most
//! [`MAX_EDGES_PER_GPU`] edges of each GPU of each (spread over its
//! window). The level before is the mean over the last [`BEFORE_MS`]
//! before the edge, the level after over the second half of the phase it
//! starts (as the folded cycle's own levels are read), the delay from the
//! recorded edge to 10 % of the step.
//!
//! The folded cycles ([`crate::cycle`]) are not read here: cut to the
//! harmonics the sample window passes, their edges are no sharper than
//! their resolution (the simulated H200's 26 ms fall read 34 ms off a
//! 2 s rung's cycle, 27 ms pooled from its samples).

use super::measure::{Windows, read_edge};
use super::node::{Buffers, Measured, edge_of};
use super::{EdgeKind, LifecycleEdge};
use crate::workload::resample::placed;
use powerlab_core::shape::EdgeKind as Switch;
use powerlab_rundir::PhaseKind;
use powerlab_samples::load::{Run, RungWindow};
use powerlab_samples::series::EdgeIndex;

/// A duty rung's on- and off-phases must both last this long, ms (the
/// levels settle in their second halves).
pub const MIN_PHASE_MS: f64 = 400.0;

/// At most this many edges of each GPU of each rung are measured.
pub const MAX_EDGES_PER_GPU: usize = 16;

/// The level before a held edge: the mean over this long before it, ms
/// (at most a quarter of the phase): a board's own controller may step
/// within a phase (an H100's on-phase fell from 787 W to 510 W 0.76 s
/// into it), and the edge leaves the level it holds at the switch.
pub const BEFORE_MS: f64 = 100.0;

/// That window ends this long before the edge, ms (a sample there
/// averages nothing of it).
pub const GUARD_MS: f64 = 5.0;

/// The plain duty rungs that ended, with both phases long enough:
/// (rung, period ms).
fn held_rungs(run: &Run) -> Vec<(&RungWindow, f64)> {
    run.rungs
        .iter()
        .filter(|r| r.info.kind == PhaseKind::Duty && !r.info.smoothed())
        .filter(|r| r.barrier_ok.is_some() && r.info.duty > 0.0 && r.info.duty < 1.0)
        .filter_map(|r| r.info.period_ms.map(|p| (r, p.ms())))
        .filter(|(r, p)| p * r.info.duty.min(1.0 - r.info.duty) >= MIN_PHASE_MS)
        .collect()
}

/// At most `k` of `v`, evenly spread.
fn evenly(v: Vec<i64>, k: usize) -> Vec<i64> {
    if v.len() <= k {
        return v;
    }
    (0..k).map(|i| v[i * v.len() / k]).collect()
}

/// ms as ns.
fn ns(ms: f64) -> i64 {
    powerlab_core::units::ms_to_ns_trunc(ms)
}

/// The held edge of `kind` ([`EdgeKind::StartHeld`] or
/// [`EdgeKind::StopHeld`]) from the run's duty rungs; None without one
/// measured.
pub(super) fn held_edge(
    run: &Run,
    bufs: &Buffers,
    edges: &EdgeIndex,
    kind: EdgeKind,
) -> Option<LifecycleEdge> {
    let rises = kind.rises();
    let (mut m, mut refused) = (Measured::default(), Vec::new());
    for (r, p) in held_rungs(run) {
        let d = r.info.duty;
        let (before_ms, after_ms) = if rises {
            ((1.0 - d) * p, d * p)
        } else {
            (d * p, (1.0 - d) * p)
        };
        let (mut gpus, mut most) = (0, 0);
        for (gi, g) in run.manifest.backend.gpus.iter().enumerate() {
            let Some(b) = bufs.get(&g.key) else {
                refused.push(format!(
                    "{} on {}: no sensor model of its buffered samples",
                    r.info.label, g.key
                ));
                continue;
            };
            let times = if rises {
                crate::cycle::rises_of(edges, r, gi, &g.key)
            } else {
                edges.get(r.info.id, &g.key, Switch::Fall).to_vec()
            };
            let whole: Vec<i64> = times
                .into_iter()
                .filter(|t| t - ns(before_ms) >= r.measure_from_ns && t + ns(after_ms) <= r.end_ns)
                .collect();
            let mut n = 0;
            for t in evenly(whole, MAX_EDGES_PER_GPU) {
                let from = t - ns(before_ms / 2.0);
                let win = Windows {
                    before: (t - ns(BEFORE_MS.min(0.25 * before_ms)), t - ns(GUARD_MS)),
                    after: (t + ns(after_ms / 2.0), t + ns(0.95 * after_ms)),
                };
                let pts = placed(b.raw, from, win.after.1, b.centre_ns);
                match read_edge(&g.key, &pts, (t, from), win, rises) {
                    Ok(e) => {
                        m.push(e, b);
                        n += 1;
                    }
                    Err(why) => refused.push(format!("{} on {}: {why}", r.info.label, g.key)),
                }
            }
            gpus += usize::from(n > 0);
            most = most.max(n);
        }
        if most > 0 {
            m.rungs.push(r.info.label.clone());
            m.repeats += most;
            m.gpus = m.gpus.max(gpus);
        }
    }
    edge_of(kind, m, &refused)
}
