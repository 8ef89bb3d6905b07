//! The rack's node power: each node's `report/node_power.csv` (its own
//! meters beside its GPU sum, per rung) added across the nodes, per rung
//! and source name. A rung where some node has no figure has no rack
//! figure, and says how many nodes had one: a missing node is a gap,
//! never less power.

use powerlab_samples::error::CollateError;
use powerlab_samples::stats::r3;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One rung, one source name, the whole rack.
#[derive(Debug, Clone, Serialize)]
pub struct RackNodePowerRow {
    /// Rung id.
    pub rung_id: u32,
    /// Rung label.
    pub rung: String,
    /// Source name (one per node, the same name on each).
    pub source: String,
    /// Nodes with a figure for this rung.
    pub nodes: usize,
    /// Nodes in the rack.
    pub of_nodes: usize,
    /// Sum of the nodes' chassis means, W.
    pub chassis_mean_w: Option<f64>,
    /// Sum of the nodes' GPU sums over the same spans, W.
    pub gpu_sum_w: Option<f64>,
    /// Chassis − GPU sum, W.
    pub non_gpu_w: Option<f64>,
    /// (Chassis − GPU sum) / chassis.
    pub non_gpu_share: Option<f64>,
    /// The least coverage of any node.
    pub min_coverage: f64,
    /// Why a figure is missing, or what qualifies it.
    pub verdict: String,
}

/// What the rack reads of a row of a node's `node_power.csv`
/// ([`powerlab_analysis::node_power::NodePowerRung`]): its figures, and
/// its verdict's words, which the rack repeats and never judges.
#[derive(Debug, Clone, Deserialize)]
struct NodeMeterRow {
    rung_id: u32,
    rung: String,
    source: String,
    coverage: f64,
    chassis_mean_w: Option<f64>,
    gpu_sum_w: Option<f64>,
    verdict: String,
}

/// Adds the nodes' tables. `reports` are (node id, its `report/` directory)
/// of the nodes with a report; `of_nodes` counts every node of the rack.
///
/// # Errors
///
/// [`CollateError::BadRaw`] when a node's `node_power.csv` does not parse.
pub fn rack_node_power(
    reports: &[(String, PathBuf)],
    of_nodes: usize,
) -> Result<Vec<RackNodePowerRow>, CollateError> {
    let mut by: BTreeMap<(u32, String), Vec<(String, NodeMeterRow)>> = BTreeMap::new();
    for (node, dir) in reports {
        let path = dir.join(powerlab_rundir::ReportFile::NodePowerCsv.file_name());
        if !path.is_file() {
            continue;
        }
        let rows: Vec<NodeMeterRow> =
            powerlab_rundir::read_rows(&path).map_err(|e| CollateError::BadRaw {
                path: path.clone(),
                message: e.to_string(),
            })?;
        for r in rows {
            by.entry((r.rung_id, r.source.clone()))
                .or_default()
                .push((node.clone(), r));
        }
    }
    Ok(by
        .into_iter()
        .map(|((rung_id, source), rows)| {
            let with: Vec<&NodeMeterRow> = rows
                .iter()
                .map(|(_, r)| r)
                .filter(|r| r.chassis_mean_w.is_some() && r.gpu_sum_w.is_some())
                .collect();
            let complete = with.len() == of_nodes;
            let sum = |f: &dyn Fn(&NodeMeterRow) -> Option<f64>| -> Option<f64> {
                complete.then(|| with.iter().filter_map(|r| f(r)).sum::<f64>())
            };
            let chassis = sum(&|r| r.chassis_mean_w);
            let gpu = sum(&|r| r.gpu_sum_w);
            let non_gpu = chassis.zip(gpu).map(|(c, g)| c - g);
            let mut verdict = Vec::new();
            if !complete {
                let missing: Vec<&str> = reports
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .filter(|n| {
                        !rows
                            .iter()
                            .any(|(m, r)| m == n && r.chassis_mean_w.is_some())
                    })
                    .collect();
                verdict.push(format!(
                    "no rack figure: {} of {of_nodes} nodes have one{}",
                    with.len(),
                    if missing.is_empty() {
                        String::new()
                    } else {
                        format!(" (none from {})", missing.join(", "))
                    }
                ));
            }
            let notes: Vec<&str> = rows
                .iter()
                .filter_map(|(_, r)| (!r.verdict.is_empty()).then_some(r.verdict.as_str()))
                .collect();
            if let Some(first) = notes.first() {
                verdict.push(format!("{} node(s): {first}", notes.len()));
            }
            RackNodePowerRow {
                rung_id,
                rung: rows[0].1.rung.clone(),
                source,
                nodes: with.len(),
                of_nodes,
                chassis_mean_w: chassis.map(r3),
                gpu_sum_w: gpu.map(r3),
                non_gpu_w: non_gpu.map(r3),
                non_gpu_share: non_gpu
                    .zip(chassis)
                    .filter(|(_, c)| *c > 0.0)
                    .map(|(n, c)| r3(n / c)),
                min_coverage: rows.iter().map(|(_, r)| r.coverage).fold(1.0, f64::min),
                verdict: verdict.join("; "),
            }
        })
        .collect())
}
