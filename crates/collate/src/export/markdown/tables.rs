//! What `report.md` of a node run tabulates: the markdown exporter's view
//! of a node's [`crate::report::Report`].

use powerlab_analysis::nccl::{FabricPowerRow, NcclRow};
use powerlab_analysis::sensor::verdict::SensorReport;
use powerlab_analysis::summary::{PhaseCompare, RepeatStats, RungSummary};

/// Everything the report tabulates.
pub struct Tables<'a> {
    /// Per-rung summaries.
    pub rungs: &'a [RungSummary],
    /// Across repeats.
    pub repeats: &'a [RepeatStats],
    /// In phase vs staggered.
    pub compare: &'a [PhaseCompare],
    /// The excursion envelope of every rung.
    pub envelope: &'a powerlab_analysis::envelope::Envelope,
    /// The grid metrics of every rung.
    pub grid: &'a powerlab_analysis::grid::GridMetrics,
    /// Every mitigation rung against its plain rung.
    pub mitigation: &'a powerlab_analysis::mitigation::Mitigation,
    /// NCCL bandwidth rows.
    pub nccl: &'a [NcclRow],
    /// Fabric power next to idle and compute.
    pub fabric: &'a [FabricPowerRow],
    /// Sensor model, per-rung and per-period verdicts.
    pub sensor: &'a SensorReport,
    /// Raw files missing or cut short (`integrity::check_files`).
    pub raw_problems: &'a [String],
    /// The latest raw reading, epoch ns (where a run that never recorded
    /// its end stopped).
    pub raw_end_ns: Option<i64>,
    /// Every GPU in every rung.
    pub per_gpu: &'a [powerlab_analysis::per_gpu::GpuRungRow],
    /// The soak analysis: every GPU and the node of every soak rung.
    pub soak: &'a [powerlab_analysis::soak::SoakRow],
    /// The workload rungs' figures.
    pub workload: &'a [crate::report::workload::WorkloadRow],
    /// The lifecycle edges and the events not measured, where the run
    /// recorded a process's lifecycle (None: the report says nothing of
    /// them).
    pub lifecycle: Option<(
        &'a [powerlab_analysis::lifecycle::LifecycleEdge],
        &'a [String],
    )>,
    /// The node's own power sources, and per rung beside the GPU sum.
    pub node_power: (
        &'a [powerlab_analysis::node_power::SourceFacts],
        &'a [powerlab_analysis::node_power::NodePowerRung],
    ),
}
