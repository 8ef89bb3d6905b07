//! The rack's tables: each node's state as the collator found it, each
//! node's own figures per rung, and each rung's start across the rack, with
//! how they are read from the node run directories.

use powerlab_core::units::ns_to_us;
use powerlab_rundir::{RunDir, RunStatus};
use powerlab_samples::load::Run;
use serde::Serialize;
use std::collections::BTreeMap;

/// One node of the rack as the collator found it.
#[derive(Debug, Clone, Serialize)]
pub struct NodeState {
    /// Node label (`n002-host`).
    pub node: String,
    /// The host it ran on (several ranks of a rack may share one).
    pub host: String,
    /// GPUs in its manifest.
    pub gpus: usize,
    /// How its run ended (`complete`, `failed: …`, `no end recorded (killed?)`).
    pub status: String,
    /// Rungs it started.
    pub rungs_started: usize,
    /// Its own collation, if it failed.
    pub collate_error: Option<String>,
}

/// One node's figures in one rung (from its own collation).
#[derive(Debug, Clone, Serialize)]
pub struct NodeRungRow {
    /// Node label.
    pub node: String,
    /// Rung id.
    pub rung_id: u32,
    /// Rung label.
    pub label: String,
    /// Mean node power, W.
    pub mean_w: Option<f64>,
    /// Peak, W.
    pub peak_w: Option<f64>,
    /// p99 − p1, W.
    pub spread_w: Option<f64>,
}

/// One host's figures in one rung: the sum of its ranks' node figures.
#[derive(Debug, Clone, Serialize)]
pub struct HostRungRow {
    /// The host.
    pub host: String,
    /// Its ranks (node labels), space-separated.
    pub nodes: String,
    /// Rung id.
    pub rung_id: u32,
    /// Rung label.
    pub label: String,
    /// Sum of its ranks' mean power, W (None if any rank has no figure).
    pub mean_w: Option<f64>,
}

/// Sums the node figures of every host's ranks, per rung. Means add; peaks
/// and spreads of ranks on one host do not (they need the host's curve),
/// so only the mean is summed.
pub fn host_rows(states: &[NodeState], rows: &[NodeRungRow]) -> Vec<HostRungRow> {
    let mut by_host: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for s in states {
        by_host.entry(&s.host).or_default().push(&s.node);
    }
    let mut rungs: BTreeMap<u32, &str> = BTreeMap::new();
    for r in rows {
        rungs.entry(r.rung_id).or_insert(&r.label);
    }
    let mut out = Vec::new();
    for (host, nodes) in &by_host {
        for (&rung_id, &label) in &rungs {
            let means: Vec<Option<f64>> = nodes
                .iter()
                .map(|n| {
                    rows.iter()
                        .find(|r| r.node == *n && r.rung_id == rung_id)
                        .and_then(|r| r.mean_w)
                })
                .collect();
            out.push(HostRungRow {
                host: host.to_string(),
                nodes: nodes.join(" "),
                rung_id,
                label: label.to_string(),
                mean_w: means.iter().copied().sum::<Option<f64>>(),
            });
        }
    }
    out
}

/// Start of one rung across the rack.
#[derive(Debug, Clone, Serialize)]
pub struct RackStart {
    /// Rung id.
    pub rung_id: u32,
    /// The rung's label.
    pub label: String,
    /// Nodes that started it.
    pub nodes: usize,
    /// Whether every node recorded the same epoch.
    pub epochs_agree: bool,
    /// Largest minus smallest start error over every GPU of the rack, µs
    /// (each node's achieved start on its own clock; add the clock offsets
    /// in rack.json for the true skew).
    pub start_skew_us: Option<f64>,
}

/// How a node's run ended, in words.
pub fn status_text(run: &Run) -> String {
    match &run.manifest.status {
        RunStatus::Complete => "complete".into(),
        RunStatus::Running => "no end recorded (the process was killed?)".into(),
        RunStatus::Interrupted { reason } => format!("interrupted: {reason}"),
        RunStatus::Failed { reason } => format!("failed: {reason}"),
    }
}

/// Each rung of `reference` (the node that started most) across the rack:
/// how many nodes started it, whether they recorded one epoch, and the
/// spread of every GPU's start error (`start_spans`: per rung, the lowest
/// and highest start error of any GPU of any node, ns).
pub fn rack_starts(
    reference: &Run,
    runs: &[(RunDir, Run)],
    start_spans: &BTreeMap<u32, (i64, i64)>,
) -> Vec<RackStart> {
    let mut starts = Vec::new();
    for w in &reference.rungs {
        let epochs: Vec<i64> = runs
            .iter()
            .filter_map(|(_, r)| {
                r.rungs
                    .iter()
                    .find(|x| x.info.id == w.info.id)
                    .map(|x| x.epoch_ns)
            })
            .collect();
        let skew = start_spans.get(&w.info.id).map(|(a, b)| ns_to_us(b - a));
        starts.push(RackStart {
            rung_id: w.info.id,
            label: w.info.label.clone(),
            nodes: epochs.len(),
            epochs_agree: epochs.windows(2).all(|p| p[0] == p[1]),
            start_skew_us: skew,
        });
    }
    starts
}

/// What became of one node's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeReport {
    /// Up to date: reused.
    Reused,
    /// Its raw files are gone (archived) and its report is intact: reused
    /// as it was.
    ReusedRawArchived,
    /// Collated again now; the text says why it was stale.
    Recollated(String),
    /// Stale, and its collation failed: the error.
    Failed(String),
}
