//! The validated campaign model (what the runner and the manifest see).

use serde::{Deserialize, Serialize};

pub use crate::period::PeriodMs;
pub use powerlab_core::kind::{Mode, PhaseKind};
pub use powerlab_core::select::{GpuRef, GpuSelector};
pub use supply::{
    DEFAULT_BAND_HZ, DEFAULT_RETUNE_ITERATION_PCT, Excursion, Grid, GridMode, Ramp, Supply,
};

mod grid_system;
mod supply;

pub use grid_system::{
    DEFAULT_EVENT_WINDOW_S, DEFAULT_PLAYBACK_STEP_MS, DEFAULT_STEADY_WINDOW_S, EVENT_LEAD_S,
    GridSystem,
};

/// Most repeats of a phase (file or `--repeats`); the parser and the planner
/// both hold campaigns to it.
pub const MAX_REPEATS: u32 = 1_000;

/// Sampling settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sampling {
    /// How often the sampler reads the instant power field.
    pub poll_interval_ms: f64,
    /// How often the sampler drains the driver's buffered samples (the ring
    /// holds ~2.4 s on H200; every sample keeps its own timestamp, so a
    /// slower drain loses nothing and costs less CPU).
    pub buffer_interval_ms: f64,
    /// How often the 1 s average field and the energy counter are read
    /// (they update every ~100 ms; reading faster only repeats values).
    pub field_interval_ms: f64,
    /// How often clocks, temperatures and clock-event reasons are read.
    pub status_interval_ms: f64,
    /// Raw files are flushed at least this often.
    pub flush_interval_ms: f64,
    /// Node-curve grid used by the collator.
    pub grid_ms: f64,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            poll_interval_ms: 20.0,
            buffer_interval_ms: 200.0,
            field_interval_ms: 100.0,
            status_interval_ms: 200.0,
            flush_interval_ms: 1000.0,
            grid_ms: 10.0,
        }
    }
}

/// Safety limits, checked continuously during the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    /// Abort above this GPU temperature.
    pub max_gpu_temp_c: f64,
    /// Abort above this HBM temperature.
    pub max_memory_temp_c: f64,
    /// Abort when the node's summed power exceeds this (buffered samples).
    pub max_node_power_w: Option<f64>,
    /// Abort when HW slowdown, HW thermal slowdown or HW power brake asserts.
    pub abort_on_hw_slowdown: bool,
    /// A GPU whose rung start misses its intended time by more than this is
    /// reported as a barrier failure.
    pub barrier_tolerance_ms: f64,
    /// A rung whose rises or falls miss their intended times by more than
    /// this at the 99th percentile (or whose GPUs' edges spread by more) is
    /// flagged, µs.
    #[serde(default = "default_edge_p99_us")]
    pub edge_p99_us: f64,
    /// A rung with any rise or fall further than this from its intended
    /// time is flagged, µs.
    #[serde(default = "default_edge_max_us")]
    pub edge_max_us: f64,
}

fn default_edge_p99_us() -> f64 {
    50.0
}

fn default_edge_max_us() -> f64 {
    100.0
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_gpu_temp_c: 90.0,
            max_memory_temp_c: 95.0,
            max_node_power_w: None,
            abort_on_hw_slowdown: true,
            barrier_tolerance_ms: 5.0,
            edge_p99_us: default_edge_p99_us(),
            edge_max_us: default_edge_max_us(),
        }
    }
}

/// How a staggered rung spreads across the nodes of a rack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RackStagger {
    /// Every GPU of the rack gets its own offset (global GPU index: node
    /// rank × GPUs per node + local index), so the rack's total is smoothest.
    Gpu,
    /// The GPUs of one node share one offset; nodes are spread over the period.
    Node,
}

impl RackStagger {
    /// Name in the campaign file.
    pub fn as_str(self) -> &'static str {
        match self {
            RackStagger::Gpu => "gpu",
            RackStagger::Node => "node",
        }
    }
}

/// Settings for campaigns run across several nodes (`[rack]`); a single
/// node ignores them except for stagger = "node", which puts all its GPUs in phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rack {
    /// How staggered rungs spread across nodes.
    pub stagger: RackStagger,
    /// A node whose realtime clock differs from rank 0's by more than this
    /// fails the rack preflight, ms.
    pub clock_tolerance_ms: f64,
}

impl Default for Rack {
    fn default() -> Self {
        Rack {
            stagger: RackStagger::Gpu,
            clock_tolerance_ms: 1.0,
        }
    }
}

/// How a staggered rung spreads its GPUs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stagger {
    /// GPU i at i/N of the period.
    Even,
    /// GPU i at i × this many degrees.
    StepDeg(f64),
    /// Explicit offset per GPU, degrees of the period.
    OffsetsDeg(Vec<f64>),
    /// Explicit offset per GPU, milliseconds.
    OffsetsMs(Vec<f64>),
}

/// A workload phase's command and how it is run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadSpec {
    /// The user's command: program, then arguments (no shell).
    pub command: Vec<String>,
    /// The job's iteration period as the user knows it, ms (a hint for
    /// the report; the collator finds the period from the samples).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration_ms: Option<f64>,
    /// Variables added to the command's environment.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
    /// Its working directory (the harness's own when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// From SIGTERM to SIGKILL at the phase's end, s (with `stop =
    /// "exit"`: how long after the window's end the command may take to
    /// exit on its own).
    pub stop_grace_s: f64,
    /// How the command is stopped at the window's end (absent in
    /// campaigns that predate it: SIGTERM).
    #[serde(
        default,
        skip_serializing_if = "powerlab_core::job::WorkloadStop::is_default"
    )]
    pub stop: powerlab_core::job::WorkloadStop,
    /// The simulated training job that stands in for the command on the
    /// simulated node.
    pub sim: powerlab_core::training::TrainingSpec,
}

/// NCCL phase settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NcclSpec {
    /// Collectives to sweep.
    pub collectives: Vec<powerlab_core::Collective>,
    /// Smallest message, bytes.
    pub min_bytes: u64,
    /// Largest message, bytes.
    pub max_bytes: u64,
    /// Size multiplier between steps.
    pub step_factor: u64,
    /// Timed iterations per size.
    pub iterations: u32,
    /// Untimed iterations per size before the timed ones.
    pub warmup_iters: u32,
    /// Window of the sweep rung, seconds (the sweep stops at its end and says
    /// which sizes it did not reach).
    pub sweep_s: f64,
    /// All-reduce size of the fabric and bulk-synchronous rungs, bytes.
    pub fabric_bytes: u64,
    /// A collective that has not completed after this long is a hang: the
    /// communicators are aborted and the run fails.
    pub timeout_s: f64,
    /// Compute burst before each all-reduce in the bulk-synchronous rung
    /// (None: no bulk-synchronous rung).
    pub bsp_compute_ms: Option<f64>,
}

impl NcclSpec {
    /// The sweep's message sizes: `min_bytes`, ×`step_factor`, up to `max_bytes`.
    pub fn sizes(&self) -> Vec<u64> {
        let mut v = Vec::new();
        let mut s = self.min_bytes.max(1);
        while s <= self.max_bytes {
            v.push(s);
            s = s.saturating_mul(self.step_factor.max(2));
        }
        v
    }
}

/// Which part of an NCCL phase a rung is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NcclStep {
    /// The collective sweep (bandwidth and latency table).
    Sweep,
    /// Sustained large all-reduce (the fabric's own power).
    Fabric,
    /// Compute burst then all-reduce, repeated (a training step).
    Bsp,
}

impl NcclStep {
    /// Label part.
    pub fn as_str(self) -> &'static str {
        match self {
            NcclStep::Sweep => "sweep",
            NcclStep::Fabric => "fabric",
            NcclStep::Bsp => "bsp",
        }
    }
}

/// One validated phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Phase {
    /// Name (defaults to the kind and position).
    pub name: String,
    /// What the phase runs (idle, sustained, duty, NCCL …).
    pub kind: PhaseKind,
    /// Measured duration of each rung, seconds.
    pub duration_s: f64,
    /// Warm load before the barrier, seconds.
    pub warmup_s: f64,
    /// Idle after each rung, seconds.
    pub cooldown_s: f64,
    /// Repeats of the whole phase.
    pub repeats: u32,
    /// Duty periods (one rung per period); empty unless duty.
    pub periods_ms: Vec<PeriodMs>,
    /// Duty fraction in (0, 1].
    pub duty: f64,
    /// Linear duty ramp at the start of each rung, seconds (excluded from the
    /// measured window).
    pub ramp_s: f64,
    /// Keep the periods exactly as written. By default the planner detunes
    /// a period that is phase-locked to the 20 ms sampling grid by the
    /// smallest amount that makes the samples sweep every phase of the
    /// cycle within the rung (see [`crate::detune`]); a rung run at an exact
    /// period cannot be folded and carries a verdict instead of node figures.
    #[serde(default)]
    pub exact_period: bool,
    /// Modes to run at every period.
    pub modes: Vec<Mode>,
    /// How staggered rungs spread their GPUs.
    pub stagger: Stagger,
    /// NCCL settings for `nccl` phases.
    pub nccl: Option<NcclSpec>,
    /// The mitigations a duty phase runs at every period and mode (one
    /// rung each; a none entry is the plain rung). Empty: the key is
    /// absent, and the phase's rungs are exactly those without it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub smoothing: Vec<powerlab_core::smoothing::SmoothingSpec>,
    /// The command of a `workload` phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadSpec>,
}

/// A validated campaign.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Campaign {
    /// Campaign name (used in the run directory name).
    pub name: String,
    /// Free text.
    pub description: String,
    /// Which GPUs.
    pub gpus: GpuSelector,
    /// Move NCCL phases before the first duty phase (default true).
    pub nccl_first: bool,
    /// Explicit consent for in-phase swings across more than 4 GPUs.
    pub confirm_node_swing: bool,
    /// Run the instrument calibration rungs first (see [`calibration_phases`]).
    pub calibrate: bool,
    /// Ramp-up of swing depth before the first in-phase multi-GPU duty rung
    /// (1, 2, 4, … GPUs swinging, the rest idle; see
    /// [`crate::plan::ramp_up_steps`]). None: the default, on for nodes of
    /// more than [`RAMP_UP_DEFAULT_ABOVE`] GPUs.
    #[serde(default)]
    pub ramp_up: Option<bool>,
    /// Sampling settings.
    pub sampling: Sampling,
    /// Safety limits.
    pub limits: Limits,
    /// Rack settings (several nodes under MPI).
    #[serde(default)]
    pub rack: Rack,
    /// Phases in file order.
    pub phases: Vec<Phase>,
    /// Meters of the node's own power (`[[node_power]]`).
    #[serde(default)]
    pub node_power: Vec<NodePowerSpec>,
    /// The node's supply as declared (`[supply]`): what the excursion
    /// envelope is judged against. None: no `[supply]` table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supply: Option<Supply>,
    /// The utility interconnect's limits as declared (`[grid]`): what the
    /// grid metrics are judged against. None: no `[grid]` table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grid: Option<Grid>,
}

/// Ramp-up is on by default for nodes with more GPUs than this.
pub const RAMP_UP_DEFAULT_ABOVE: usize = 2;

impl Campaign {
    /// Whether ramp-up steps are planned on a node of `gpu_count` GPUs:
    /// `ramp_up` as written, else on above [`RAMP_UP_DEFAULT_ABOVE`] GPUs.
    pub fn ramp_up_for(&self, gpu_count: usize) -> bool {
        self.ramp_up.unwrap_or(gpu_count > RAMP_UP_DEFAULT_ABOVE)
    }

    /// Whether the campaign has an NCCL phase (the preflight then treats a
    /// missing NCCL as blocking).
    pub fn needs_nccl(&self) -> bool {
        self.phases.iter().any(|p| p.kind == PhaseKind::Nccl)
    }
}

/// Phase name of the calibration rungs; the collator derives the sensor
/// model (`sensor.json`) from the rungs of this phase.
pub const CALIBRATION_PHASE: &str = "calibration";

/// The instrument calibration: square waves (duty 0.5, GPUs evenly
/// staggered so the node's total barely moves) at
/// - 613 ms and 4013 ms periods (prime to the 20 ms and 100 ms update clocks):
///   step responses of every power path, folded on the recorded edges, for
///   windows and latencies;
/// - 1/2, 2/3, 4/5, 6/5 and 4/3 of the ~20 ms buffered-sample period and of
///   the ~100 ms field update period: the periods that expose aliasing
///   ("Part-time Power Measurements", arXiv 2312.02741).
pub fn calibration_phases() -> Vec<Phase> {
    let phase = |periods_ms: Vec<f64>, duration_s: f64| Phase {
        name: CALIBRATION_PHASE.into(),
        kind: PhaseKind::Duty,
        duration_s,
        warmup_s: 1.0,
        cooldown_s: 0.5,
        repeats: 1,
        periods_ms: periods_ms.into_iter().map(PeriodMs).collect(),
        duty: 0.5,
        ramp_s: 0.0,
        // The aliasing probes sit on the sampling grid on purpose.
        exact_period: true,
        modes: vec![Mode::Staggered],
        stagger: Stagger::Even,
        nccl: None,
        smoothing: Vec::new(),
        workload: None,
    };
    let ratios: [f64; 5] = [0.5, 2.0 / 3.0, 0.8, 1.2, 4.0 / 3.0];
    let probes: Vec<f64> = [20.0f64, 100.0]
        .iter()
        .flat_map(|u| {
            ratios
                .iter()
                .map(move |r| (u * r * 1000.0).round() / 1000.0)
        })
        .collect();
    // 613 and 4013 ms: no common divisor with 20 or 100 ms, so successive
    // edges land at new phases of the sensors' update clocks. ~49 falls at
    // 613 ms pin the fast paths' windows (a held field shows an
    // intermediate value on only a window/update fraction of its falls),
    // with 300 ms on: long enough for the rise's overshoot to settle.
    vec![
        phase(vec![613.0], 30.0),
        phase(vec![4013.0], 12.0),
        phase(probes, 4.0),
    ]
}

/// A meter of the node's own power (`[[node_power]]`), sampled for the
/// whole run beside the GPU samplers. Credentials never sit here: only the
/// names of the variables or files that hold them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodePowerSpec {
    /// Unique name (`bmc`, `pdu-a`), used in file names and tables.
    pub name: String,
    /// How often to ask, ms.
    pub interval_ms: f64,
    /// Longest wait for one answer, ms (every request carries it).
    pub timeout_ms: f64,
    /// What to ask.
    pub kind: NodePowerKind,
}

/// The kinds of node power meter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NodePowerKind {
    /// A Redfish service (a BMC): the chassis power, discovered from the
    /// service root, and each power supply where present.
    Redfish {
        /// Base address, `https://10.0.0.5` (the service root is `/redfish/v1`).
        url: String,
        /// Chassis id; None: the first chassis with a power reading.
        chassis: Option<String>,
        /// How to authenticate.
        auth: RedfishAuth,
        /// User name (not secret).
        user: Option<String>,
        /// Environment variable that holds the password.
        password_env: Option<String>,
        /// File whose first line is the password.
        password_file: Option<String>,
        /// Accept a self-signed certificate without verifying it.
        insecure_tls: bool,
        /// Trust this PEM certificate (a BMC's self-signed one) instead of
        /// the public roots.
        ca_file: Option<String>,
    },
    /// `ipmitool … dcmi power reading`, in-band or over LAN.
    Ipmi {
        /// The ipmitool program.
        ipmitool: String,
        /// Arguments before `dcmi power reading` (interface, host, user;
        /// the password through `-E`/`IPMI_PASSWORD` or `-f file`).
        args: Vec<String>,
    },
    /// A command that prints the node's watts (the first number on stdout).
    Command {
        /// Program and arguments.
        command: Vec<String>,
    },
    /// A Prometheus text endpoint (a PDU's exporter): the sum of the
    /// series of `metric` that carry every label in `labels`.
    Prometheus {
        /// Address of the metrics page.
        url: String,
        /// Metric name.
        metric: String,
        /// Labels a series must carry (name, value).
        labels: Vec<(String, String)>,
    },
}

/// Redfish authentication.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RedfishAuth {
    /// No credentials (a service that needs none).
    None,
    /// HTTP basic authentication on every request.
    Basic,
    /// A Redfish session (`SessionService/Sessions`, `X-Auth-Token`),
    /// deleted at the end of the run.
    Session,
}

impl NodePowerKind {
    /// The kind's name as written in the campaign.
    pub fn as_str(&self) -> &'static str {
        match self {
            NodePowerKind::Redfish { .. } => "redfish",
            NodePowerKind::Ipmi { .. } => "ipmi",
            NodePowerKind::Command { .. } => "command",
            NodePowerKind::Prometheus { .. } => "prometheus",
        }
    }
}
