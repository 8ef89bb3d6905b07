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
/// its verdict's words, which the rack repeats and never parses. Whether
/// the node's meter measures its GPUs is the node's own rule applied to
/// the figures ([`NodeMeterRow::figures`]), not read from the words.
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

impl NodeMeterRow {
    /// The node's chassis mean and GPU sum, W, where it has both and its
    /// meter does not read below its GPU sum
    /// ([`powerlab_analysis::node_power::below_gpu_sum_w`], the node's own
    /// rule on the figures it wrote): a meter that does not measure the
    /// node's GPUs gives the rack no figure of that node.
    fn figures(&self) -> Option<(f64, f64)> {
        let (c, g) = self.chassis_mean_w.zip(self.gpu_sum_w)?;
        powerlab_analysis::node_power::below_gpu_sum_w(c, g)
            .is_none()
            .then_some((c, g))
    }
}

/// Why a rung has no rack figure: `with` of `of_nodes` nodes have one,
/// the nodes with none named, and each whose meter reads below its GPU
/// sum said so.
fn missing_words(
    reports: &[(String, PathBuf)],
    rows: &[(String, NodeMeterRow)],
    with: usize,
    of_nodes: usize,
) -> String {
    let missing: Vec<&str> = reports
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| !rows.iter().any(|(m, r)| m == n && r.figures().is_some()))
        .collect();
    let below: Vec<String> = rows
        .iter()
        .filter_map(|(node, r)| {
            let (c, g) = r.chassis_mean_w.zip(r.gpu_sum_w)?;
            let by_w = powerlab_analysis::node_power::below_gpu_sum_w(c, g)?;
            Some(format!(
                "{node}'s meter reads {by_w:.0} W below its GPU sum: it does not measure that node's GPUs"
            ))
        })
        .collect();
    let mut words = format!("no rack figure: {with} of {of_nodes} nodes have one");
    if !missing.is_empty() {
        words.push_str(&format!(" (none from {})", missing.join(", ")));
    }
    for b in below {
        words.push_str(&format!("; {b}"));
    }
    words
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
                .filter(|r| r.figures().is_some())
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
                verdict.push(missing_words(reports, &rows, with.len(), of_nodes));
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

#[cfg(test)]
mod tests {
    use super::rack_node_power;
    use std::path::PathBuf;

    const HEADER: &str = "rung_id,rung,source,readings,failed,coverage,chassis_mean_w,chassis_peak_w,chassis_swing_w,gpu_sum_w,non_gpu_w,non_gpu_share,verdict\n";

    /// A node's report directory whose `node_power.csv` has one sustained
    /// rung: the meter's mean and the GPU sum beside it.
    fn node(dir: &tempfile::TempDir, name: &str, chassis_w: f64, gpu_w: f64) -> (String, PathBuf) {
        let report = dir.path().join(name);
        std::fs::create_dir_all(&report).unwrap();
        let non = chassis_w - gpu_w;
        std::fs::write(
            report.join("node_power.csv"),
            format!(
                "{HEADER}1,sustained,bmc,20,0,1.0,{chassis_w},{chassis_w},,{gpu_w},{non},{},\n",
                non / chassis_w
            ),
        )
        .unwrap();
        (name.to_string(), report)
    }

    #[test]
    fn the_rack_adds_every_node_whose_meter_measures_it() {
        let dir = tempfile::tempdir().unwrap();
        let nodes = [
            node(&dir, "n000", 1500.0, 1400.0),
            node(&dir, "n001", 1600.0, 1450.0),
        ];
        let rows = rack_node_power(&nodes, 2).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].nodes, 2);
        assert_eq!(rows[0].chassis_mean_w, Some(3100.0));
        assert_eq!(rows[0].gpu_sum_w, Some(2850.0));
        assert_eq!(rows[0].non_gpu_w, Some(250.0));
    }

    #[test]
    fn a_meter_below_its_own_gpu_sum_gives_the_rack_no_figure() {
        // n001's meter reads 700 W against 1,450 W of its own GPUs: it
        // measures something else (one PSU, another node). Added in, the
        // rack's chassis would read 750 W low and its non-GPU power
        // negative, a plausible-looking wrong figure.
        let dir = tempfile::tempdir().unwrap();
        let nodes = [
            node(&dir, "n000", 1500.0, 1400.0),
            node(&dir, "n001", 700.0, 1450.0),
        ];
        let rows = rack_node_power(&nodes, 2).unwrap();
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!((r.nodes, r.of_nodes), (1, 2));
        assert_eq!(
            (r.chassis_mean_w, r.gpu_sum_w, r.non_gpu_w),
            (None, None, None)
        );
        assert!(
            r.verdict.contains("1 of 2 nodes have one (none from n001)"),
            "{}",
            r.verdict
        );
        assert!(
            r.verdict
                .contains("n001's meter reads 750 W below its GPU sum"),
            "{}",
            r.verdict
        );
    }

    #[test]
    fn a_meter_within_the_instruments_disagreement_still_counts() {
        // 15 W under a 1,000 W GPU sum: within max(20 W, 3 %), the two
        // instruments' disagreement, so the node's figure stands.
        let dir = tempfile::tempdir().unwrap();
        let nodes = [
            node(&dir, "n000", 985.0, 1000.0),
            node(&dir, "n001", 1100.0, 1000.0),
        ];
        let rows = rack_node_power(&nodes, 2).unwrap();
        assert_eq!(rows[0].nodes, 2);
        assert_eq!(rows[0].chassis_mean_w, Some(2085.0));
    }
}
