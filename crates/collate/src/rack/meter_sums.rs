//! The rack's node power: each node's `report/node_power.csv` (its own
//! meters beside its GPU sum, per rung) added across the nodes, per rung
//! and source name. A rung where some node has no figure has no rack
//! figure, and says how many nodes had one: a missing node is a gap,
//! never less power.

use powerlab_analysis::node_power::NodePowerNote;
use powerlab_samples::error::CollateError;
use powerlab_samples::stats::r3;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
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
/// the figures ([`Refused`]), not read from the words.
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

/// A node's meter (node id, source name) whose figures in some rung it
/// cannot be the node's ([`powerlab_analysis::node_power::meter_mismatch`],
/// the node's rule on the figures it wrote: below its GPU sum, or far
/// above it): it measures something else (one PSU, another node, many
/// nodes) or reads in another unit, in every rung, so it gives the rack
/// no figure of that node in any rung.
#[derive(Debug, Clone, PartialEq)]
struct Refused {
    /// The first rung (in the node's table) where it read so.
    rung_id: u32,
    /// What it read there.
    note: NodePowerNote,
}

/// Every meter of `by_node` refused in some rung, by (node, source).
fn refused_meters(by_node: &[(String, Vec<NodeMeterRow>)]) -> HashMap<(&str, &str), Refused> {
    let mut refused = HashMap::new();
    for (node, rows) in by_node {
        for r in rows {
            let mismatch = r
                .chassis_mean_w
                .zip(r.gpu_sum_w)
                .and_then(|(c, g)| powerlab_analysis::node_power::meter_mismatch(c, g));
            if let Some(note) = mismatch {
                refused
                    .entry((node.as_str(), r.source.as_str()))
                    .or_insert(Refused {
                        rung_id: r.rung_id,
                        note,
                    });
            }
        }
    }
    refused
}

/// A node's rows, read from its `node_power.csv` at `path`: each (rung,
/// source) once.
fn node_rows(path: &std::path::Path) -> Result<Vec<NodeMeterRow>, CollateError> {
    let bad = |message: String| CollateError::BadRaw {
        path: path.to_path_buf(),
        message,
    };
    let rows: Vec<NodeMeterRow> =
        powerlab_rundir::read_rows(path).map_err(|e| bad(e.to_string()))?;
    let mut seen = std::collections::HashSet::new();
    if let Some(r) = rows
        .iter()
        .find(|r| !seen.insert((r.rung_id, r.source.as_str())))
    {
        return Err(bad(format!(
            "rung {} of source `{}` is listed twice: the file was edited after its collation; collate the node again",
            r.rung_id, r.source
        )));
    }
    Ok(rows)
}

/// Why a rung of `source` has no rack figure: `with` of `of_nodes` nodes
/// have one; the nodes with a report and none are named, and each whose
/// meter is refused says why.
fn missing_words(
    source: &str,
    nodes_without: &[&str],
    refused: &HashMap<(&str, &str), Refused>,
    with: usize,
    of_nodes: usize,
) -> String {
    let mut words = format!("no rack figure: {with} of {of_nodes} nodes have one");
    if !nodes_without.is_empty() {
        words.push_str(&format!(" (none from {})", nodes_without.join(", ")));
    }
    for node in nodes_without {
        if let Some(r) = refused.get(&(*node, source)) {
            words.push_str(&format!(
                "; {node}'s meter, refused in every rung, in rung {}: {}",
                r.rung_id, r.note
            ));
        }
    }
    words
}

/// Adds the nodes' tables. `reports` are (node id, its `report/` directory)
/// of the nodes with a report; `of_nodes` counts every node of the rack.
/// A node counts in a rung where its row has both figures and its meter
/// is not refused ([`Refused`]); the rack has a figure only where every
/// node counts.
///
/// # Errors
///
/// [`CollateError::BadRaw`] when a node's `node_power.csv` does not parse
/// or lists a rung of a source twice.
pub fn rack_node_power(
    reports: &[(String, PathBuf)],
    of_nodes: usize,
) -> Result<Vec<RackNodePowerRow>, CollateError> {
    let mut by_node = Vec::new();
    for (node, dir) in reports {
        let path = dir.join(powerlab_rundir::ReportFile::NodePowerCsv.file_name());
        if path.is_file() {
            by_node.push((node.clone(), node_rows(&path)?));
        }
    }
    let refused = refused_meters(&by_node);
    let mut by: BTreeMap<(u32, &str), Vec<(&str, &NodeMeterRow)>> = BTreeMap::new();
    for (node, rows) in &by_node {
        for r in rows {
            by.entry((r.rung_id, r.source.as_str()))
                .or_default()
                .push((node.as_str(), r));
        }
    }
    Ok(by
        .into_iter()
        .map(|((rung_id, source), rows)| {
            rack_row(rung_id, source, &rows, reports, &refused, of_nodes)
        })
        .collect())
}

/// One rung of one source, added over the nodes' `rows`.
fn rack_row(
    rung_id: u32,
    source: &str,
    rows: &[(&str, &NodeMeterRow)],
    reports: &[(String, PathBuf)],
    refused: &HashMap<(&str, &str), Refused>,
    of_nodes: usize,
) -> RackNodePowerRow {
    let counts = |node: &str, r: &NodeMeterRow| {
        r.chassis_mean_w.is_some()
            && r.gpu_sum_w.is_some()
            && !refused.contains_key(&(node, source))
    };
    let with: Vec<&NodeMeterRow> = rows
        .iter()
        .filter(|(n, r)| counts(n, r))
        .map(|(_, r)| *r)
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
        let without: Vec<&str> = reports
            .iter()
            .map(|(n, _)| n.as_str())
            .filter(|n| !rows.iter().any(|(m, r)| m == n && counts(m, r)))
            .collect();
        verdict.push(missing_words(
            source,
            &without,
            refused,
            with.len(),
            of_nodes,
        ));
    }
    let notes: Vec<(&str, &str)> = rows
        .iter()
        .filter(|(_, r)| !r.verdict.is_empty())
        .map(|(n, r)| (*n, r.verdict.as_str()))
        .collect();
    if let Some((node, words)) = notes.first() {
        verdict.push(format!("{} node(s), first {node}: {words}", notes.len()));
    }
    RackNodePowerRow {
        rung_id,
        rung: rows[0].1.rung.clone(),
        source: source.to_string(),
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
}

#[cfg(test)]
mod tests {
    use super::{RackNodePowerRow, rack_node_power};
    use powerlab_samples::error::CollateError;
    use std::path::PathBuf;

    const HEADER: &str = "rung_id,rung,source,readings,failed,coverage,chassis_mean_w,chassis_peak_w,chassis_swing_w,gpu_sum_w,non_gpu_w,non_gpu_share,verdict\n";

    /// A node's rung: (rung id, chassis W, GPU sum W).
    type Rung = (u32, f64, f64);

    /// The rack's rows of `nodes` (name, its rungs), each a report
    /// directory whose `node_power.csv` has one row per rung, source `bmc`.
    fn rack_of(nodes: &[(&str, &[Rung])]) -> Result<Vec<RackNodePowerRow>, CollateError> {
        let dir = tempfile::tempdir().unwrap();
        let reports: Vec<(String, PathBuf)> = nodes
            .iter()
            .map(|(name, rungs)| {
                let report = dir.path().join(name);
                std::fs::create_dir_all(&report).unwrap();
                let rows: String = rungs
                    .iter()
                    .map(|&(id, chassis_w, gpu_w)| {
                        let non = chassis_w - gpu_w;
                        format!(
                            "{id},rung {id},bmc,20,0,1.0,{chassis_w},{chassis_w},,{gpu_w},{non},{},\n",
                            non / chassis_w
                        )
                    })
                    .collect();
                std::fs::write(report.join("node_power.csv"), format!("{HEADER}{rows}")).unwrap();
                (name.to_string(), report)
            })
            .collect();
        rack_node_power(&reports, nodes.len())
    }

    #[test]
    fn the_rack_adds_every_node_whose_meter_measures_it() {
        let rows = rack_of(&[
            ("n000", &[(1, 1500.0, 1400.0)]),
            ("n001", &[(1, 1600.0, 1450.0)]),
        ])
        .unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].nodes, 2);
        assert_eq!(rows[0].chassis_mean_w, Some(3100.0));
        assert_eq!(rows[0].gpu_sum_w, Some(2850.0));
        assert_eq!(rows[0].non_gpu_w, Some(250.0));
    }

    #[test]
    fn a_meter_below_its_gpu_sum_in_one_rung_gives_the_rack_no_figure_in_any() {
        // n001's meter reads 700 W against 1,450 W of its own GPUs under
        // load: it measures something else (one PSU, another node), at
        // idle too, where it happens to read above its GPUs. Added in,
        // the rack's chassis would read low and its non-GPU power wrong.
        let rows = rack_of(&[
            ("n000", &[(0, 900.0, 800.0), (1, 1500.0, 1400.0)]),
            ("n001", &[(0, 850.0, 800.0), (1, 700.0, 1450.0)]),
        ])
        .unwrap();
        assert_eq!(rows.len(), 2);
        for r in &rows {
            assert_eq!((r.nodes, r.of_nodes), (1, 2), "{r:?}");
            assert_eq!(
                (r.chassis_mean_w, r.gpu_sum_w, r.non_gpu_w),
                (None, None, None)
            );
            let words = [
                "1 of 2 nodes have one (none from n001)",
                "n001's meter, refused in every rung, in rung 1: CHASSIS BELOW THE GPU SUM by 750 W",
            ];
            assert!(words.iter().all(|w| r.verdict.contains(w)), "{}", r.verdict);
        }
    }

    #[test]
    fn a_meter_within_the_instruments_disagreement_still_counts() {
        // 15 W under a 1,000 W GPU sum: within max(20 W, 3 %), the two
        // instruments' disagreement, so the node's figure stands.
        let rows = rack_of(&[
            ("n000", &[(1, 985.0, 1000.0)]),
            ("n001", &[(1, 1100.0, 1000.0)]),
        ])
        .unwrap();
        assert_eq!(rows[0].nodes, 2);
        assert_eq!(rows[0].chassis_mean_w, Some(2085.0));
    }

    #[test]
    fn a_meter_in_milliwatts_gives_the_rack_no_figure() {
        // n001's meter reads 1,600 W in mW: 1.6 MW beside 1,450 W of GPUs.
        let rows = rack_of(&[
            ("n000", &[(1, 1500.0, 1400.0)]),
            ("n001", &[(1, 1_600_000.0, 1450.0)]),
        ])
        .unwrap();
        let r = &rows[0];
        assert_eq!((r.nodes, r.chassis_mean_w), (1, None));
        assert!(
            r.verdict.contains("n001's meter, refused in every rung, in rung 1: CHASSIS FAR ABOVE THE GPU SUM: 1598550 W"),
            "{}",
            r.verdict
        );
    }

    #[test]
    fn a_rung_listed_twice_by_one_node_is_an_error_not_a_second_node() {
        // Counted by rows, n000's copied row would stand in for n001.
        let err = rack_of(&[
            ("n000", &[(1, 1500.0, 1400.0), (1, 1500.0, 1400.0)]),
            ("n001", &[(1, 1600.0, 1450.0)]),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("rung 1 of source `bmc` is listed twice"),
            "{err}"
        );
    }
}
