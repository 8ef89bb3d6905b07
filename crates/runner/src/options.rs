//! What a run is given and what it gives back: the options the binary
//! fills in (results root, lock, health capture, rack membership) and the
//! result it reads (run directory, status, sampler statistics, rack ends).
//! Below the coordinator, so every stage of the run can take them.

use crate::rack::RackRun;
use crate::sampler::SamplerStats;
use powerlab_rundir::{RunStatus, ToolInfo};
use std::path::PathBuf;
use std::sync::Arc;

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Where run directories go.
    pub results_root: PathBuf,
    /// Preflight was overridden.
    pub allow_unhealthy: bool,
    /// The command line, for the manifest.
    pub command: Vec<String>,
    /// The tool, for the manifest.
    pub tool: ToolInfo,
    /// Longest wait for every GPU to report ready, ns.
    pub prepare_timeout_ns: i64,
    /// Take the node lock at this path (real hardware); None for the simulated node.
    pub lock_path: Option<PathBuf>,
    /// Minimum free space required under the results root, bytes (None: estimate from the plan).
    pub min_free_bytes: Option<u64>,
    /// The idle preflight (health.json content, health-report.md text), written into the run directory.
    pub health: Option<(serde_json::Value, String)>,
    /// This node's part in a rack run (None: a single node).
    pub rack: Option<Arc<RackRun>>,
    /// How the launcher's ranks on this host split its GPUs (for the manifest).
    pub gpu_binding: Option<String>,
    /// The `sensor.json` given to the run (`run --sensor`), already checked
    /// against the node: written into the run directory with the first
    /// manifest, which records its checksum.
    pub sensor: Option<Vec<u8>>,
    /// The live metrics endpoint's state (`--metrics-listen`): the
    /// samplers record their readings into it, the coordinator its events
    /// and progress.
    pub live: Option<Arc<powerlab_live::Live>>,
    /// Whether a workload phase runs its command or the simulated job
    /// stands in (the binary chooses: real GPUs run it; the simulated
    /// node only when asked, in real time).
    pub workload_exec: crate::workload::WorkloadExec,
}

impl RunOptions {
    /// Defaults for a results root.
    pub fn new(results_root: PathBuf, tool: ToolInfo) -> Self {
        RunOptions {
            results_root,
            allow_unhealthy: false,
            command: std::env::args().collect(),
            tool,
            prepare_timeout_ns: 180_000_000_000,
            lock_path: None,
            min_free_bytes: None,
            health: None,
            rack: None,
            gpu_binding: None,
            sensor: None,
            live: None,
            workload_exec: crate::workload::WorkloadExec::Simulated,
        }
    }
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The run directory.
    pub run_dir: PathBuf,
    /// How it ended.
    pub status: RunStatus,
    /// Rungs completed.
    pub rungs_completed: usize,
    /// Per-GPU sampler statistics.
    pub samplers: Vec<SamplerStats>,
    /// How every node of the rack ended, by rank (None: a single node, or
    /// the rack exchange was abandoned).
    pub rack_ends: Option<Vec<powerlab_rack::NodeEnd>>,
}
