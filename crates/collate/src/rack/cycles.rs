//! A rack's duty rungs: its nodes' composed cycles added at each rung's
//! shared epoch, with their intervals summed, and the nodes' marks of an
//! incomplete window carried over.

use super::NodeReport;
use super::tables;
use powerlab_analysis::cycle::interval::{self, Stated};
use powerlab_analysis::cycle::{CyclePart, NoCycle, NodeCycle, sum_cycles};
use powerlab_analysis::metric;
use powerlab_analysis::summary::{Cycles, RungSummary};
use powerlab_core::units::PeriodMs;
use powerlab_rundir::summary::SummaryRow;
use powerlab_rundir::{PhaseKind, RunDir};
use powerlab_samples::load::Run;
use std::collections::{BTreeMap, HashMap};

/// A rack rung built in part from a node's incomplete window (stopped,
/// killed) says so, naming the node, where the reader looks first: the
/// node's own mark, carried over.
pub(super) fn mark_incomplete_nodes(
    rungs: &mut [RungSummary],
    states: &[tables::NodeState],
    summaries: &[Vec<SummaryRow>],
) {
    for r in rungs.iter_mut() {
        let marks: Vec<String> = states
            .iter()
            .zip(summaries)
            .filter_map(|(st, rows)| {
                let row = rows.iter().find(|x| x.rung_id == r.rung.id)?;
                let m = row.incomplete.as_ref()?;
                Some(format!("node {}: {m}", st.node))
            })
            .collect();
        if marks.is_empty() {
            continue;
        }
        let own = r.incomplete.take();
        r.incomplete = Some(own.into_iter().chain(marks).collect::<Vec<_>>().join("; "));
    }
}

/// A rack cycle's step and intervals from its nodes' summaries (see
/// [`interval::summed`]): left without them unless every node states them.
fn with_node_intervals(c: &mut NodeCycle, rows: &[Option<&SummaryRow>]) {
    let stated: Option<Vec<[Stated; 4]>> = rows
        .iter()
        .map(|r| {
            r.and_then(|r| r.stated()).map(|s| {
                s.map(|(figure_w, lo_w, hi_w)| Stated {
                    figure_w,
                    lo_w,
                    hi_w,
                })
            })
        })
        .collect();
    let steps: Option<f64> = rows.iter().map(|r| r.and_then(|r| r.step_w)).sum();
    let cycles = rows
        .iter()
        .map(|r| r.and_then(|r| r.cycles))
        .min()
        .flatten();
    let (Some(stated), Some(step), Some(cycles)) = (stated, steps, cycles) else {
        return;
    };
    let figure = |i: usize| stated.iter().map(|s| s[i]).collect::<Vec<_>>();
    let (m, p, s, w) = (figure(0), figure(1), figure(2), figure(3));
    c.step_w = step;
    c.interval = Some(interval::summed(&c.stats, [&m, &p, &s, &w], cycles));
    summed_own(c, rows);
}

/// The rack's interval of each of the registry's own bootstrapped metrics
/// (those without a typed column): its nodes' read back and summed (see
/// [`interval::summed_bounds`]); none unless every node states it.
fn summed_own(c: &mut NodeCycle, rows: &[Option<&SummaryRow>]) {
    for m in metric::own_bootstrapped() {
        let mut v = c.metrics.get(m.column());
        let Some(figure) = v.value else { continue };
        let nodes: Option<Vec<Stated>> = rows
            .iter()
            .map(|r| match metric::read(m, (*r)?) {
                [Some(figure_w), Some(lo_w), Some(hi_w)] => Some(Stated {
                    figure_w,
                    lo_w,
                    hi_w,
                }),
                _ => None,
            })
            .collect();
        v.ci95 = nodes.map(|n| interval::summed_bounds(figure, &n).holding(figure));
        c.metrics.set(m.column(), v);
    }
}

/// The rack's composed cycle of every duty rung of `reference`: the sum of
/// every node's, in node order. A rung that some node could not fold (or a
/// node without a report) has that node's verdict instead, and the sum of
/// the nodes' means where every node has one (from its energy counter or
/// its cycle).
pub(super) fn rack_cycles(
    reference: &Run,
    runs: &[(RunDir, Run)],
    usable: &[usize],
    parts: &[BTreeMap<u32, CyclePart>],
    summaries: &[Vec<SummaryRow>],
    reports: &[NodeReport],
    missing: Option<&String>,
) -> (Cycles, HashMap<u32, f64>) {
    let mut cycles: Cycles = HashMap::new();
    let mut means = HashMap::new();
    for r in &reference.rungs {
        let periodic = r.info.kind == PhaseKind::Duty
            && r.info.period_ms.map(PeriodMs::ms).is_some()
            && r.info.duty > 0.0
            && r.info.duty < 1.0;
        if !periodic {
            cycles.insert(r.info.id, Err(NoCycle::NotPeriodic));
            continue;
        }
        let mut found = Vec::new();
        let mut rows = Vec::new();
        let mut why = missing
            .map(|n| format!("node {n}: rack.json lists it, nodes/ has no directory for it"));
        for (k, (_, run)) in runs.iter().enumerate() {
            let node = &run.manifest.backend.node_id;
            let part = usable
                .iter()
                .position(|u| *u == k)
                .and_then(|p| parts[p].get(&r.info.id));
            match part {
                Some(c) => {
                    found.push(c);
                    rows.push(summaries[k].iter().find(|s| s.rung_id == r.info.id));
                }
                None if why.is_none() => {
                    let v = match &reports[k] {
                        NodeReport::Failed(e) => format!("its collation failed: {e}"),
                        _ => summaries[k]
                            .iter()
                            .find(|s| s.rung_id == r.info.id)
                            .and_then(|s| s.verdict.clone())
                            .unwrap_or_else(|| "no composed cycle for this rung".into()),
                    };
                    why = Some(format!("node {node}: {v}"));
                }
                None => {}
            }
        }
        match why {
            None => match sum_cycles(r, &found) {
                Some(mut c) => {
                    with_node_intervals(&mut c, &rows);
                    cycles.insert(r.info.id, Ok(c));
                }
                None => {
                    cycles.insert(
                        r.info.id,
                        Err(NoCycle::Verdict(
                            "the nodes' cycles are of different periods: not one rack run".into(),
                        )),
                    );
                }
            },
            Some(v) => {
                let node_means: Option<Vec<f64>> = summaries
                    .iter()
                    .map(|rows| {
                        rows.iter()
                            .find(|s| s.rung_id == r.info.id)
                            .and_then(|s| s.mean_w)
                    })
                    .collect();
                if let Some(m) = node_means.filter(|m| m.len() == runs.len() && missing.is_none()) {
                    means.insert(r.info.id, m.iter().sum());
                }
                cycles.insert(r.info.id, Err(NoCycle::Verdict(v)));
            }
        }
    }
    (cycles, means)
}
