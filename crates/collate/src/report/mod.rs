//! The one value a collation computes, node or rack: [`Report`]. The
//! compute layer builds it ([`node`] for a node run, [`crate::rack`] for a
//! rack); the exporters ([`crate::export`]) turn it into files and never
//! compute a figure.

pub mod marks;
pub mod node;
pub mod node_meters;
pub mod verdicts;
pub mod workload;

use crate::handoff::Inputs;
use crate::rack::meter_sums::RackNodePowerRow;
use crate::rack::tables::{HostRungRow, NodeReport, NodeRungRow, NodeState, RackStart};
use polars::prelude::DataFrame;
use powerlab_analysis::curve::NodeCurve;
use powerlab_analysis::envelope::Envelope;
use powerlab_analysis::grid::GridMetrics;
use powerlab_analysis::nccl::{FabricPowerRow, NcclRow};
use powerlab_analysis::node_power::{NodePowerRung, SourceFacts};
use powerlab_analysis::per_gpu::GpuRungRow;
use powerlab_analysis::sensor::verdict::SensorReport;
use powerlab_analysis::soak::Soak;
use powerlab_analysis::summary::{Cycles, PhaseCompare, RepeatStats, RungSummary};
use powerlab_samples::load::Run;
use std::path::PathBuf;

/// A collation's result: the same rungs, cycles and comparisons for a node
/// and for a rack, and what only one of them has in [`Scope`].
pub struct Report {
    /// The report's title (`<campaign> on <node>`, or `rack run`).
    pub title: String,
    /// The run the rungs come from (a rack: the node that started most).
    pub run: Run,
    /// The node (or rack) power curve on the run's grid.
    pub curve: NodeCurve,
    /// Every duty rung's composed cycle, or why it has none.
    pub cycles: Cycles,
    /// Per-rung summaries.
    pub rungs: Vec<RungSummary>,
    /// Across repeats.
    pub repeats: Vec<RepeatStats>,
    /// In phase vs staggered.
    pub compare: Vec<PhaseCompare>,
    /// Per rung, the highest mean power over each window length, against
    /// the declared supply.
    pub envelope: Envelope,
    /// Per rung, the grid metrics (ramp rates, dynamic range, band share)
    /// against the declared `[grid]`.
    pub grid: GridMetrics,
    /// The verdict table's rows ([`verdicts::run_rows`] of the rungs, the
    /// envelope and the grid), judged once.
    pub verdicts: Vec<verdicts::SpecRow>,
    /// What only a node, or only a rack, has.
    pub scope: Scope,
}

/// The parts of a [`Report`] that belong to a node or to a rack.
pub enum Scope {
    /// One node's run.
    Node(Box<NodeParts>),
    /// A rack of nodes.
    Rack(Box<RackParts>),
}

/// What a node's report has beyond the rungs: its raw files' state, every
/// GPU, the sensor, NCCL, the soak and the node's own meters.
pub struct NodeParts {
    /// Raw rows read.
    pub raw_rows: usize,
    /// Raw files missing, cut short or damaged, in words.
    pub raw_problems: Vec<String>,
    /// The latest raw reading, epoch ns.
    pub raw_end_ns: Option<i64>,
    /// The files this report is computed from (handed to a rack).
    pub inputs: Inputs,
    /// Every GPU in every rung.
    pub per_gpu: Vec<GpuRungRow>,
    /// The sensor model and its verdicts.
    pub sensor: SensorReport,
    /// NCCL bandwidth rows.
    pub nccl: Vec<NcclRow>,
    /// Fabric power next to idle and compute.
    pub fabric: Vec<FabricPowerRow>,
    /// The soak analysis.
    pub soak: Soak,
    /// The node's own power meters.
    pub node_power: NodePower,
    /// What each mitigation rung buys and costs against its plain rung.
    pub mitigation: powerlab_analysis::mitigation::Mitigation,
    /// The workload rungs: the iterations their samples show, and the
    /// figures stated for them.
    pub workload: workload::Workload,
    /// The lifecycle edges measured (a cold start, a kill, a clean exit,
    /// a held context's rise and fall), one per kind measured.
    pub lifecycle: Vec<powerlab_analysis::lifecycle::LifecycleEdge>,
    /// The lifecycle moments the run recorded (a workload process's
    /// spawn, kill or exit; 0: the report says nothing of lifecycle
    /// edges, though the held ones are in `lifecycle`).
    pub lifecycle_moments: usize,
    /// Each GPU's lifecycle event that could not be measured, in words.
    pub lifecycle_refused: Vec<String>,
}

/// The node's own power sources, per rung beside the GPU sum, and the
/// plot's lines.
pub struct NodePower {
    /// Every source's facts (empty: the run had none).
    pub facts: Vec<SourceFacts>,
    /// Per rung and source.
    pub rungs: Vec<NodePowerRung>,
    /// The plot's lines.
    pub plot: NodePowerSeries,
}

/// The node power plot's lines: the GPU sum and each source's readings,
/// against seconds since the run's start.
pub struct NodePowerSeries {
    /// GPU sum (buffered), 1 s means: (s, W).
    pub gpu: Vec<(f64, f64)>,
    /// Each source's readings as of their answers: (name, [(s, W)]).
    pub sources: Vec<(String, Vec<(f64, f64)>)>,
}

/// What a rack's report has beyond the rungs: its nodes, hosts and starts.
pub struct RackParts {
    /// The rack's directory.
    pub path: PathBuf,
    /// The rack curve with every node's column.
    pub curve_table: DataFrame,
    /// Every node and how its run ended.
    pub nodes: Vec<NodeState>,
    /// Every node's figures per rung.
    pub node_rows: Vec<NodeRungRow>,
    /// Every host's ranks summed, per rung.
    pub hosts: Vec<HostRungRow>,
    /// Every rung's start across the rack.
    pub starts: Vec<RackStart>,
    /// The nodes' own power meters, added per rung.
    pub node_power: Vec<RackNodePowerRow>,
    /// What became of each node's report, in the order of the node
    /// directories.
    pub node_reports: Vec<NodeReport>,
}

impl Report {
    /// The node's parts, for a node report.
    pub fn node(&self) -> Option<&NodeParts> {
        match &self.scope {
            Scope::Node(n) => Some(n),
            Scope::Rack(_) => None,
        }
    }

    /// The folded iteration of workload rung `rung_id` of a node report
    /// (None: a rack's report, not a workload rung, no period found, or
    /// not folded): its period, on-fraction, every GPU's cycle (phase 0 at
    /// its iteration starts), the node's cycle and its resolution.
    pub fn folded_iteration(&self, rung_id: u32) -> Option<workload::FoldedIteration<'_>> {
        self.node()?.workload.folded(&self.cycles, rung_id)
    }

    /// The rack's parts, for a rack report.
    pub fn rack(&self) -> Option<&RackParts> {
        match &self.scope {
            Scope::Rack(r) => Some(r),
            Scope::Node(_) => None,
        }
    }
}
