//! The schedule's types (rungs, the plan, a node's place in the rack) and
//! the small helpers every part of the planner builds them with.

use crate::error::CampaignError;
use crate::model::{Campaign, Mode, NcclSpec, NcclStep, PeriodMs, PhaseKind};
use powerlab_core::units::secs_to_ns;
use serde::{Deserialize, Serialize};

/// One rung: a measured window of one phase, one repeat, one period, one mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rung {
    /// Position in the run (0-based).
    pub id: u32,
    /// Phase name.
    pub phase: String,
    /// Phase kind.
    pub kind: PhaseKind,
    /// Human label, unique within the run (`sweep/p500ms/staggered/r2`).
    pub label: String,
    /// In phase or staggered.
    pub mode: Mode,
    /// Duty period the device runs, ms (None for constant load): the
    /// requested period, detuned from the sampling grid unless the phase
    /// keeps exact periods (see [`crate::detune`]).
    pub period_ms: Option<PeriodMs>,
    /// Duty period as the campaign requested it, ms (the label and the
    /// across-repeat grouping use this one).
    pub nominal_period_ms: Option<PeriodMs>,
    /// Duty fraction (1.0 for constant load, 0.0 for idle).
    pub duty: f64,
    /// Repeat number, 1-based.
    pub repeat: u32,
    /// Repeats of this phase.
    pub repeats: u32,
    /// Warm load before the barrier, ns.
    pub warmup_ns: i64,
    /// Duty ramp at the window start, ns (excluded from summaries).
    pub ramp_ns: i64,
    /// After the ramp, time until the rung's own pattern holds, ns
    /// (excluded from summaries; see [`crate::detune::settle_ns`]).
    pub settle_ns: i64,
    /// Window length, ns (ramp included).
    pub duration_ns: i64,
    /// Idle after the window, ns.
    pub cooldown_ns: i64,
    /// Intended offset of each GPU's wave origin after the window start, ns.
    pub offsets_ns: Vec<i64>,
    /// NCCL settings, for `nccl` rungs.
    pub nccl: Option<NcclSpec>,
    /// Which part of the NCCL phase, for `nccl` rungs.
    pub nccl_step: Option<NcclStep>,
    /// An idle rung before this process creates any CUDA context: no GPU
    /// is touched (no warm-up load, no context), they are only sampled.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_context: bool,
    /// Positions (run indices) of the GPUs that run the load; every other
    /// GPU idles through the rung, warm-up included. None: every GPU (all
    /// rungs but the ramp-up steps). Absent in plans made before ramp-up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swinging: Option<Vec<usize>>,
    /// The mitigation a duty rung runs (a floor, ramps, a hysteresis),
    /// in watts per GPU; None for every other rung and a plain duty rung.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smoothing: Option<powerlab_core::smoothing::SmoothingSpec>,
    /// A workload rung's command and simulated job; None for every other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<crate::model::WorkloadSpec>,
}

impl Rung {
    /// Nominal time this rung occupies (warmup + window + cooldown), ns.
    pub fn nominal_ns(&self) -> i64 {
        self.warmup_ns + self.duration_ns + self.cooldown_ns
    }

    /// Whether GPU `i` runs the rung's load (false: it idles through it).
    pub fn loads_gpu(&self, i: usize) -> bool {
        self.swinging.as_ref().is_none_or(|s| s.contains(&i))
    }

    /// Whether this rung swings the GPUs of the node together: an in-phase
    /// square wave (0 < duty < 1) on more than one GPU. The first such rung
    /// is the one the ramp-up precedes.
    pub(super) fn swings_in_phase(&self, gpu_count: usize) -> bool {
        self.kind == PhaseKind::Duty
            && self.mode == Mode::InPhase
            && self.duty > 0.0
            && self.duty < 1.0
            && self.period_ms.is_some()
            && gpu_count > 1
    }
}

/// The expanded schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Campaign name.
    pub campaign: String,
    /// Number of GPUs the plan was expanded for.
    pub gpu_count: usize,
    /// Rungs in run order.
    pub rungs: Vec<Rung>,
    /// What the planner changed or wants the user to know (reordering, …).
    pub notes: Vec<String>,
}

impl Plan {
    /// Nominal total duration (barrier waits excluded), ns.
    pub fn total_ns(&self) -> i64 {
        self.rungs.iter().map(Rung::nominal_ns).sum()
    }

    /// Whether the plan contains NCCL rungs.
    pub fn needs_nccl(&self) -> bool {
        self.rungs.iter().any(|r| r.kind == PhaseKind::Nccl)
    }
}

/// Seconds as written in the campaign → ns.
pub(super) fn secs(s: f64) -> i64 {
    secs_to_ns(s)
}

/// An error about the campaign as a whole (no line: the plan is made
/// from a validated campaign).
pub(super) fn plan_error(
    campaign: &Campaign,
    field: String,
    message: String,
    allowed: Option<&str>,
) -> CampaignError {
    CampaignError {
        file: campaign.name.clone(),
        line: 0,
        column: 0,
        field: Some(field),
        message,
        allowed: allowed.map(str::to_string),
    }
}

/// Where this node sits in a rack: its rank and the number of nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RackPosition {
    /// This node's rank (0-based).
    pub rank: usize,
    /// Nodes in the rack.
    pub nodes: usize,
}

impl RackPosition {
    /// A single node.
    pub const SOLO: RackPosition = RackPosition { rank: 0, nodes: 1 };
}

/// A number as labels show it: whole numbers without a fraction.
pub(super) fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}
