//! The node's own power meters in a node report: `node_power/` read and
//! joined with the node curve.

use super::{NodePower, NodePowerSeries};
use powerlab_analysis::{curve, node_power};
use powerlab_core::units::PeriodMs;
use powerlab_core::units::{NS_PER_S, ns_to_s};
use powerlab_rundir::{PhaseKind, RunDir};
use powerlab_samples::error::CollateError;
use powerlab_samples::load;

/// Reads `node_power/` and joins it with the node curve. A damaged source
/// file is named among the raw problems and left out: node power is an
/// extra, and the GPU figures stand without it.
///
/// # Errors
///
/// [`CollateError::RunDir`] when `node_power/` cannot be listed.
pub fn node_power_of(
    dir: &RunDir,
    run: &load::Run,
    curve: &curve::NodeCurve,
    problems: &mut Vec<String>,
) -> Result<NodePower, CollateError> {
    let mut sources = Vec::new();
    for f in powerlab_rundir::node_power::node_power_files(&dir.path)? {
        match powerlab_rundir::node_power::read_node_power(&f) {
            Ok((mut rows, bad)) => {
                let name = powerlab_rundir::raw::raw_stem(&f);
                if bad > 0 {
                    problems.push(format!(
                        "node_power/{name}.csv: {bad} row(s) cut short or not in the format (dropped)"
                    ));
                }
                // A reading no running node can have (edited, or written by
                // another tool) is dropped and said, never summed.
                let before = rows.len();
                rows.retain(|r| {
                    r.watts
                        .is_none_or(powerlab_core::meter::is_plausible_node_w)
                });
                if rows.len() < before {
                    problems.push(format!(
                        "node_power/{name}.csv: {} reading(s) not finite, not above 0 or above {} W (dropped)",
                        before - rows.len(),
                        powerlab_core::meter::MAX_NODE_W
                    ));
                }
                let kind = rows.first().map(|r| r.kind.clone()).unwrap_or_default();
                let interval_ms = run.campaign.node_power_interval_ms(&name);
                sources.push(node_power::SourceRows {
                    source: name,
                    kind,
                    interval_ms,
                    rows,
                });
            }
            Err(e) => problems.push(format!("{e}; that node power source is left out")),
        }
    }
    if sources.is_empty() {
        return Ok(NodePower {
            facts: vec![],
            rungs: vec![],
            plot: NodePowerSeries {
                gpu: vec![],
                sources: vec![],
            },
        });
    }
    let (t_ns, w) = (&curve.columns().t_ns, &curve.columns().buffered_w);
    let spans: Vec<node_power::RungSpan> = run
        .rungs
        .iter()
        .map(|r| node_power::RungSpan {
            id: r.info.id,
            label: r.info.label.clone(),
            kind: r.info.kind,
            period_ms: r
                .info
                .period_ms
                .map(PeriodMs::ms)
                .filter(|_| r.info.kind == PhaseKind::Duty),
            from_ns: r.measure_from_ns,
            to_ns: r.end_ns,
        })
        .collect();
    let (facts, rungs) = node_power::analyse(&sources, &spans, &node_power::GpuSum { t_ns, w });
    let t0 = run.manifest.started_ns;
    let secs = |t: i64| ns_to_s(t - t0);
    let plot = NodePowerSeries {
        gpu: gpu_second_means(t_ns, w, t0),
        sources: sources
            .iter()
            .map(|s| {
                (
                    s.source.clone(),
                    s.rows
                        .iter()
                        .filter(|r| r.quantity == "node")
                        .filter_map(|r| r.watts.map(|w| (secs(r.recv_ns), w)))
                        .collect(),
                )
            })
            .collect(),
    };
    Ok(NodePower { facts, rungs, plot })
}

/// The GPU sum `w` (at `t_ns`) in 1 s means, for the plot: `(s after t0,
/// mean W)`, each placed at the first sample of a later second; samples
/// with no value are skipped, and the last second is left out.
fn gpu_second_means(t_ns: &[i64], w: &[Option<f64>], t0: i64) -> Vec<(f64, f64)> {
    let mut gpu = Vec::new();
    let mut acc = (0.0, 0usize, None::<i64>);
    for (t, v) in t_ns.iter().zip(w) {
        let sec = (t - t0).div_euclid(NS_PER_S);
        if acc.2.is_some_and(|s| s != sec) && acc.1 > 0 {
            gpu.push((ns_to_s(*t - t0), acc.0 / acc.1 as f64));
            acc = (0.0, 0, None);
        }
        if let Some(v) = v {
            acc = (acc.0 + v, acc.1 + 1, Some(sec));
        }
    }
    gpu
}
