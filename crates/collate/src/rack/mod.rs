//! Rack collation: a rack run directory holds one node run directory per
//! node under `nodes/` (each collatable alone). The rack works from its
//! nodes' reports, never from their raw files: each node's collation (run
//! by its own rank right after a rack run, or here for a node whose report
//! is stale, [`nodes`]) hands over its curve and composed cycles
//! ([`crate::handoff`]). The rack curve adds the node curves as they are
//! read ([`curve`]), with the node rule one level up: a point where any node
//! has no value has no rack value (a dead node is a gap, never a power
//! drop). A duty rung's rack figures add the nodes' composed cycles at the
//! rung's shared epoch. Edge figures reduce every node's edge log
//! ([`edges`]). Rung windows come from the nodes' event logs, which must
//! agree on every rung's start epoch. Memory is one node's collation plus
//! the rack curve, whatever the node count. Outputs go to the rack's
//! `report/`: CSV and Parquet (the same files load in polars, DuckDB or
//! Spark), a per-node table and `report.md`.

pub mod compute;
pub mod curve;
pub mod cycles;
pub mod edges;
pub mod meter_sums;
pub mod nodes;
pub mod tables;

pub use nodes::{NodeCollator, NodeReport};
pub use tables::{HostRungRow, NodeRungRow, NodeState, RackStart};

use crate::report::Scope;
use powerlab_analysis::summary::{PhaseCompare, RungSummary};
use powerlab_samples::error::CollateError;
use std::path::{Path, PathBuf};

/// Whether `dir` is a rack run directory.
pub fn is_rack_dir(dir: &Path) -> bool {
    powerlab_rundir::RunFile::Rack.path_in(dir).is_file()
        || dir.join(powerlab_rundir::RunFile::Nodes.name()).is_dir()
            && !dir.join(powerlab_rundir::RunFile::Manifest.name()).exists()
}

/// What rack collation produced.
#[derive(Debug, Clone)]
pub struct RackOutput {
    /// `report/` of the rack.
    pub report_dir: PathBuf,
    /// Nodes found.
    pub nodes: Vec<NodeState>,
    /// Rack-level rung summaries.
    pub rungs: Vec<RungSummary>,
    /// Rack-level in-phase vs staggered.
    pub compare: Vec<PhaseCompare>,
    /// The verdict table's rows (the rack report's first table).
    pub verdicts: Vec<crate::report::verdicts::SpecRow>,
    /// Per-rung starts across nodes.
    pub starts: Vec<RackStart>,
    /// What became of each node's report, in the order of the node
    /// directories (the first entries of `nodes`).
    pub node_reports: Vec<NodeReport>,
    /// Nodes without a report (their collation failed, or `rack.json`
    /// lists them and `nodes/` lacks them): the rack is incomplete.
    pub gaps: Vec<String>,
    /// Files written.
    pub files: Vec<PathBuf>,
}

fn node_dirs(rack: &Path) -> Result<Vec<PathBuf>, CollateError> {
    let nodes = rack.join(powerlab_rundir::RunFile::Nodes.name());
    let mut v: Vec<PathBuf> = std::fs::read_dir(&nodes)
        .map_err(|e| CollateError::io(&nodes, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join(powerlab_rundir::RunFile::Manifest.name()).is_file())
        .collect();
    v.sort();
    if v.is_empty() {
        return Err(CollateError::BadRaw {
            path: nodes,
            message: "no node run directories (nodes/*/manifest.json) in this rack run".into(),
        });
    }
    Ok(v)
}

/// How a rack collation treats its nodes' reports.
#[derive(Clone, Copy)]
pub struct RackOptions<'a> {
    /// Collate every node again, fresh or not.
    pub force: bool,
    /// Stale nodes collated at once (each as much memory as one node's
    /// collation).
    pub jobs: usize,
    /// How a stale node is collated.
    pub collate_node: &'a NodeCollator,
}

impl Default for RackOptions<'_> {
    fn default() -> Self {
        Self {
            force: false,
            jobs: 1,
            collate_node: &nodes::collate_here,
        }
    }
}

/// Collates a rack run directory: brings every node's report up to date
/// (reusing fresh ones, see [`RackOptions`]), then builds the rack's report
/// from them.
///
/// # Errors
///
/// Returns [`CollateError::Io`] when `nodes/` cannot be listed, and
/// [`CollateError::BadRaw`] when it holds no node run directory, the nodes
/// started some rung at different epochs (they are not one rack run), or a
/// node's curve is not on the rack's grid. Loading any node's run, reading
/// its report or edge log, building the rack's summaries and writing the
/// report fail as their own steps do ([`CollateError::RunDir`],
/// [`CollateError::BadRaw`], [`CollateError::Io`], [`CollateError::Polars`]
/// or [`CollateError::Plot`]). Returns [`CollateError::Busy`] while another
/// collation of the rack runs. A node whose own collation fails, or that
/// `rack.json` lists but `nodes/` lacks, is not an error: it is reported in
/// the node table, the report says the rack is incomplete, and it is a gap
/// in the rack curve ([`RackOutput::gaps`]). The new report replaces the
/// old one only when complete.
pub fn collate_rack(rack: &Path, opts: RackOptions<'_>) -> Result<RackOutput, CollateError> {
    let _lock = powerlab_rundir::lock::try_hold(
        &rack.join(powerlab_rundir::RunFile::CollateLock.name()),
        "collating this rack",
    )
    .map_err(|e| CollateError::Busy {
        path: rack.to_path_buf(),
        message: format!("another collation of this rack is running: {e}; wait for it to end"),
    })?;
    let report_dir = rack.join(powerlab_rundir::RunFile::Report.name());
    let (out, files) = crate::collation::staged(rack, &report_dir, |staging| {
        rack_into(rack, opts, staging).map(|o| {
            let files = o.files.clone();
            (o, files)
        })
    })?;
    Ok(RackOutput {
        report_dir,
        files,
        ..out
    })
}

/// The nodes `rack.json` lists (none without one).
fn listed_nodes(rack: &Path) -> Vec<String> {
    std::fs::read(powerlab_rundir::RunFile::Rack.path_in(rack))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| {
            v.get("nodes").and_then(|n| n.as_array()).map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
        })
        .unwrap_or_default()
}

/// The rack report, written into `out_dir` (which exists, with `plots/`).
fn rack_into(
    rack: &Path,
    opts: RackOptions<'_>,
    out_dir: &Path,
) -> Result<RackOutput, CollateError> {
    let report = compute::compute(rack, opts)?;
    let files = crate::export::export_all(&report, out_dir)?;
    let Scope::Rack(parts) = report.scope else {
        unreachable!("a rack computes a rack report")
    };
    let gaps = parts
        .nodes
        .iter()
        .filter(|s| s.collate_error.is_some())
        .map(|s| s.node.clone())
        .collect();
    Ok(RackOutput {
        report_dir: out_dir.to_path_buf(),
        nodes: parts.nodes,
        rungs: report.rungs,
        compare: report.compare,
        verdicts: report.verdicts,
        starts: parts.starts,
        node_reports: parts.node_reports,
        gaps,
        files,
    })
}
