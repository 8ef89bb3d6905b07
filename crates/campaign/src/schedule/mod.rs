//! A training-job schedule (`powerlab predict --schedule FILE`): the job a
//! prediction builds from a run's measured responses. It declares the
//! GPU count and how they are grouped in nodes, the iteration period and
//! its compute fraction, what the GPUs draw while they communicate, how
//! far apart the nodes start each step, stragglers, the mitigation, the
//! span and resolution of the waveform, and the site's supply and grid
//! limits (facility scale: not the node's `[supply]` of the campaign).
//!
//! Everything here is validated ([`parse_schedule_str`],
//! [`load_schedule`]): units in the key names, every number in range,
//! unknown keys refused, errors at the key's line naming the field path
//! (`job.compute_fraction`) and what is allowed. `raw` is the file as
//! written; `parse` checks it, one function a table, reusing the
//! campaign's `[supply]` (with facility ranges) and `[grid]` checks.

mod flags;
mod keys;
mod lifecycle;
mod parse;
mod raw;

use crate::model::{Grid, Supply};
use serde::{Deserialize, Serialize};

pub use flags::{Override, Setting};
pub use lifecycle::EDGE_MARGIN_S;
pub use parse::{load_schedule, parse_schedule_str, parse_schedule_with};

/// Most GPUs a schedule may declare.
pub const MAX_JOB_GPUS: u64 = 10_000_000;
/// The iteration period's range, ms.
pub const ITERATION_MS_RANGE: (f64, f64) = (1.0, 600_000.0);
/// The waveform's longest span, s (one day).
pub const MAX_SPAN_S: f64 = 86_400.0;
/// The waveform's resolution range, ms.
pub const RESOLUTION_MS_RANGE: (f64, f64) = (0.1, 10_000.0);
/// Most points a waveform may hold (span / resolution): 20 million (a
/// day at 5 ms; the figures and the spectrum hold a few copies of it).
pub const MAX_POINTS: u64 = 20_000_000;
/// Most power a facility `[supply]` figure may state, W: 10 GW.
pub const FACILITY_SUPPLY_W_MAX: f64 = 10.0e9;
/// Shortest and longest excursion a facility `[supply]` may declare, ms:
/// 1 ms to one hour (a node's stops at 10 s; a site's limits reach
/// minutes).
pub const FACILITY_EXCURSION_MS_RANGE: (f64, f64) = (1.0, 3_600_000.0);
/// Most GPUs per node a schedule may declare.
pub const MAX_GPUS_PER_NODE: u64 = 1024;
/// Most W per GPU a `[communication]` may declare (0 excluded).
pub const MAX_COMM_W_PER_GPU: f64 = 5_000.0;

/// A validated schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    /// `[job]`.
    pub job: Job,
    /// `[communication]`: what a GPU draws between compute phases.
    pub communication: Communication,
    /// `[spread]`: how far apart the nodes start each iteration.
    pub spread: Spread,
    /// `[stragglers]` (None: no stragglers).
    pub stragglers: Option<Stragglers>,
    /// `[mitigation]`.
    pub mitigation: MitigationChoice,
    /// `[output]`.
    pub output: Output,
    /// `[supply]`: the facility's supply (W at facility scale). None: the
    /// envelope is stated without a verdict.
    pub supply: Option<Supply>,
    /// `[grid]`: the interconnect's limits (ramp limits per GPU or per site
    /// with its GPU count). None: the run's campaign `[grid]` is used if it
    /// declares one.
    pub grid: Option<Grid>,
    /// `[lifecycle]`: the job's start, checkpoints, crashes, restarts and
    /// end, streamed over their own span (None: steady iteration only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Lifecycle>,
}

/// `[job]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// A name for the report's title.
    pub name: String,
    /// GPUs in the job, 1..=[`MAX_JOB_GPUS`].
    pub gpus: u64,
    /// GPUs per node: the GPUs of a node start each iteration together.
    /// None: the measured run's GPU count. At most `gpus`.
    pub gpus_per_node: Option<u32>,
    /// The iteration period, ms.
    pub iteration_ms: f64,
    /// The compute phase's share of the iteration, (0, 1].
    pub compute_fraction: f64,
    /// What a GPU draws through the job's compute phase, W, as the user
    /// measured it (their job's settled level, not the virus's): the
    /// square waves' on-phase is scaled to it. None: the measured on level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_w_per_gpu: Option<f64>,
}

/// `[communication]`: what each GPU draws between compute phases.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "source")]
pub enum Communication {
    /// The measured off-phase of the duty rungs (the square wave's own
    /// off level and fall): no separate communication power.
    Off,
    /// The run's NCCL fabric rung: its node mean per GPU. The run must
    /// have one.
    Fabric,
    /// A declared draw per GPU, W.
    Given {
        /// W per GPU.
        w_per_gpu: f64,
    },
}

/// `[spread]`: each node's start offset within an iteration, drawn anew
/// every iteration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Spread {
    /// Every node starts together.
    None,
    /// Uniform over the largest start skew the run measured.
    Measured,
    /// Normal with this standard deviation, ms (0 < sigma ≤ iteration).
    Normal {
        /// ms.
        sigma_ms: f64,
    },
    /// Uniform over this width, ms (0 < width ≤ iteration).
    Uniform {
        /// ms.
        width_ms: f64,
    },
}

/// `[stragglers]`: each iteration, each node is late with probability
/// `share` and starts `delay_ms` after the others.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stragglers {
    /// Probability per node per iteration, (0, 1].
    pub share: f64,
    /// The delay, ms (0 < delay ≤ iteration).
    pub delay_ms: f64,
}

/// `[mitigation]`: which measured responses the GPUs follow, and a
/// stagger of the nodes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MitigationChoice {
    /// A mitigation rung's profile label as the run names it (`floor60`,
    /// `up2k-down2k-h50ms`), or None for the plain wave.
    pub profile: Option<String>,
    /// Nodes split into this many groups started evenly across the
    /// iteration (1: no stagger). At most the node count.
    pub stagger_groups: u32,
}

/// `[output]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Output {
    /// The waveform's span, s.
    pub span_s: f64,
    /// Its resolution (each point the mean over this long), ms.
    pub resolution_ms: f64,
    /// Seed of the start offsets and stragglers.
    pub seed: u64,
}

/// The lifecycle study's longest span, s (one day).
pub const MAX_LIFECYCLE_SPAN_S: f64 = 86_400.0;
/// The lifecycle study's resolution range, ms (it is streamed: a day at
/// 1 ms is 86.4 million points, never held).
pub const LIFECYCLE_RESOLUTION_MS_RANGE: (f64, f64) = (1.0, 1_000.0);
/// The shortest time between two lifecycle events, s: each edge settles
/// before the next begins.
pub const MIN_EVENT_GAP_S: f64 = 10.0;

/// `[lifecycle]`: the steps between a job's states, placed in a streamed
/// waveform of the whole job (every GPU idle before the start and after
/// the end).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lifecycle {
    /// The study's span, s.
    pub span_s: f64,
    /// Its resolution (each point the mean over this long), ms.
    pub resolution_ms: f64,
    /// When the job starts, s from the study's start.
    pub start_at_s: f64,
    /// How a GPU's draw rises when the job (re)starts.
    pub start: StartEdge,
    /// How far apart the nodes start, ms (uniform over this width).
    pub start_spread_ms: f64,
    /// Checkpoints (None: none).
    pub checkpoint: Option<Checkpoint>,
    /// Crashes at these times, s (each at most once; a time when the job
    /// is not running is refused).
    pub crash_at_s: Vec<f64>,
    /// Further crashes drawn at this rate per hour of running (seeded by
    /// `output.seed`).
    pub crash_per_hour: f64,
    /// From a crash to the job's restart, s.
    pub restart_after_s: f64,
    /// When the job ends cleanly, s (None: it runs to the span's end).
    pub end_at_s: Option<f64>,
    /// What a GPU draws with no process on it, W (None: the run's measured
    /// level after a kill or exit).
    pub idle_w_per_gpu: Option<f64>,
}

/// How a GPU's draw rises when the job (re)starts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum StartEdge {
    /// The run's measured cold start (a new process: CUDA initialisation,
    /// then load).
    Measured,
    /// The run's duty rungs' rising edge (a process that held its
    /// context): faster than any real job's start, a bound.
    Held,
    /// A declared linear ramp of every GPU from idle to the running job,
    /// s (a job's own warm-up, or a ramp a site imposes).
    Ramp {
        /// s.
        ramp_s: f64,
    },
}

/// A checkpoint: every GPU leaves the iteration for `duration_s` every
/// `every_s` of running (counted from each start).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The cadence, s.
    pub every_s: f64,
    /// How long each lasts, s.
    pub duration_s: f64,
    /// What a GPU draws through it, W (None: the run's measured level of a
    /// GPU that holds its context and computes nothing).
    pub w_per_gpu: Option<f64>,
}
