//! Expansion of a campaign into the exact schedule of rungs.

use crate::error::CampaignError;
use crate::model::*;
use powerlab_core::units::{NS_PER_S, ms_to_ns, ms_to_ns_f64, ns_to_ms, ns_to_s, secs_to_ns};
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
    pub period_ms: Option<f64>,
    /// Duty period as the campaign requested it, ms (the label and the
    /// across-repeat grouping use this one).
    pub nominal_period_ms: Option<f64>,
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
    fn swings_in_phase(&self, gpu_count: usize) -> bool {
        self.kind == PhaseKind::Duty
            && self.mode == Mode::InPhase
            && self.duty > 0.0
            && self.duty < 1.0
            && self.period_ms.is_some()
            && gpu_count > 1
    }
}

/// A ramp-up step's window (after the rung's own duty ramp) is at least
/// this long, s …
pub const RAMP_STEP_MIN_S: f64 = 5.0;
/// … and at least this many periods of the wave; never longer than the
/// window of the rung it precedes.
pub const RAMP_STEP_PERIODS: i64 = 3;

/// How many GPUs swing in each ramp-up step on a node of `n` GPUs: 1, 2,
/// 4, … below `n` (the rung itself, with all `n`, follows).
pub fn ramp_up_depths(n: usize) -> Vec<usize> {
    std::iter::successors(Some(1usize), |k| k.checked_mul(2))
        .take_while(|k| *k < n)
        .collect()
}

/// The ramp-up steps before `target` (the first in-phase multi-GPU duty
/// rung) on `gpu_count` GPUs: for each depth of [`ramp_up_depths`], the
/// target's wave (period, duty, duty ramp), warm-up and cool-down, run in
/// phase by the first `depth` GPUs while the others idle, for a window of
/// max(5 s, 3 periods), capped at the target's own window. Ids are left to
/// the caller.
pub fn ramp_up_steps(target: &Rung, gpu_count: usize) -> Vec<Rung> {
    let period_ms = target.nominal_period_ms.or(target.period_ms).unwrap_or(0.0);
    let period_ns = ms_to_ns(target.period_ms.unwrap_or(0.0));
    let measured = (target.duration_ns - target.ramp_ns).max(0);
    let body = secs(RAMP_STEP_MIN_S)
        .max(RAMP_STEP_PERIODS.saturating_mul(period_ns))
        .min(measured);
    ramp_up_depths(gpu_count)
        .into_iter()
        .map(|k| Rung {
            id: target.id,
            phase: RAMP_UP_PHASE.into(),
            kind: PhaseKind::RampUp,
            label: format!("{RAMP_UP_PHASE}/{k}of{gpu_count}/p{}ms", fmt_num(period_ms)),
            mode: Mode::InPhase,
            period_ms: target.period_ms,
            nominal_period_ms: target.nominal_period_ms,
            duty: target.duty,
            repeat: 1,
            repeats: 1,
            warmup_ns: target.warmup_ns,
            ramp_ns: target.ramp_ns,
            settle_ns: 0,
            duration_ns: target.ramp_ns + body,
            cooldown_ns: target.cooldown_ns,
            offsets_ns: vec![0; gpu_count],
            nccl: None,
            nccl_step: None,
            swinging: Some((0..k).collect()),
            no_context: false,
        })
        .collect()
}

/// Phase name (and label prefix) of the ramp-up steps.
pub const RAMP_UP_PHASE: &str = "rampup";

/// Inserts the ramp-up steps before the first in-phase multi-GPU duty rung
/// where the campaign wants them (see [`Campaign::ramp_up_for`]), and
/// renumbers the rungs. A rack run plans none (see the note it gets).
fn insert_ramp_up(
    c: &Campaign,
    rungs: &mut Vec<Rung>,
    notes: &mut Vec<String>,
    gpu_count: usize,
    pos: RackPosition,
) -> Result<(), CampaignError> {
    if !c.ramp_up_for(gpu_count) {
        return Ok(());
    }
    let Some(at) = rungs.iter().position(|r| r.swings_in_phase(gpu_count)) else {
        return Ok(());
    };
    if pos.nodes > 1 {
        if c.ramp_up == Some(true) {
            return Err(plan_error(
                c,
                "campaign.ramp_up".into(),
                format!(
                    "ramp-up is planned for one node only, and this is a rack of {} nodes",
                    pos.nodes
                ),
                Some("ramp_up = false (or run the campaign on one node)"),
            ));
        }
        notes.push(format!(
            "no ramp-up of swing depth in a rack run: `{}` is the first in-phase swing, with every GPU of the rack",
            rungs[at].label
        ));
        return Ok(());
    }
    let steps = ramp_up_steps(&rungs[at], gpu_count);
    // The same consent as any in-phase swing (a step swings fewer GPUs than
    // the rung it precedes, which was held to it already).
    if let Some(big) = steps
        .iter()
        .find(|s| s.swinging.as_ref().map_or(gpu_count, Vec::len) > 4 && !c.confirm_node_swing)
    {
        return Err(plan_error(
            c,
            "campaign.ramp_up".into(),
            format!(
                "ramp-up step `{}` swings more than 4 GPUs in phase",
                big.label
            ),
            Some("confirm_node_swing = true in [campaign], after checking the supply can take it"),
        ));
    }
    let depths: Vec<String> = steps
        .iter()
        .map(|s| s.swinging.as_ref().map_or(0, Vec::len).to_string())
        .collect();
    notes.push(format!(
        "ramp-up: {} of {gpu_count} GPUs swing in phase (the others idle) before `{}`, each step checked against the limits; ramp_up = false in [campaign] leaves it out",
        depths.join(", "),
        rungs[at].label
    ));
    rungs.splice(at..at, steps);
    for (i, r) in rungs.iter_mut().enumerate() {
        r.id = i as u32;
    }
    Ok(())
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

/// Longest campaign the planner accepts: one year, ns.
pub const MAX_PLAN_NS: i64 = 366 * 86_400_000_000_000;

/// How many rungs phase `p` expands into, counted without expanding it:
/// its repeats (or `repeats_override`) × periods × modes × NCCL steps.
fn rungs_of_phase(p: &Phase, repeats_override: Option<u32>) -> u64 {
    let repeats = match (p.kind, repeats_override) {
        (PhaseKind::Idle | PhaseKind::Sustained | PhaseKind::Duty, Some(n)) => n,
        _ => p.repeats,
    };
    let periods = if p.kind == PhaseKind::Duty {
        p.periods_ms.len().max(1)
    } else {
        1
    };
    let steps = match &p.nccl {
        Some(n) if p.kind == PhaseKind::Nccl => 2 + usize::from(n.bsp_compute_ms.is_some()),
        _ => 1,
    };
    u64::from(repeats) * (periods * p.modes.len().max(1) * steps) as u64
}

/// The campaign's nominal length, s, counted without expanding it: every
/// phase's warm-up, window and cool-down times its rungs
/// ([`rungs_of_phase`]).
pub fn estimated_total_s(c: &Campaign, repeats_override: Option<u32>) -> f64 {
    c.phases
        .iter()
        .map(|p| {
            rungs_of_phase(p, repeats_override) as f64 * (p.warmup_s + p.duration_s + p.cooldown_s)
        })
        .sum()
}

/// Most rungs a campaign may expand into (planner-inserted rungs aside:
/// the calibration, the ramp-up steps and the idle rung without a context
/// add at most a few dozen).
pub const MAX_RUNGS: usize = 10_000;

/// Most GPUs of one node a plan is made for (`plan --gpus`, a node's
/// count): far above any node built, low enough that a plan's offsets
/// (one per GPU per rung) stay within tens of megabytes.
pub const MAX_GPUS: usize = 1_024;

/// How many rungs the campaign's phases expand into, counted without
/// expanding them: every phase's repeats (or `repeats_override`) × periods
/// × modes × NCCL steps. The planner's own rungs (calibration, ramp-up,
/// the idle rung without a context) are not counted.
pub fn estimated_rungs(c: &Campaign, repeats_override: Option<u32>) -> u64 {
    c.phases
        .iter()
        .map(|p| rungs_of_phase(p, repeats_override))
        .sum()
}

fn secs(s: f64) -> i64 {
    secs_to_ns(s)
}

fn plan_error(
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

/// Orders the phases: NCCL before the first duty phase (unless
/// `nccl_first = false`), soak last. Returns the order and notes.
fn order_phases(c: &Campaign) -> (Vec<&Phase>, Vec<String>) {
    let mut notes = Vec::new();
    let mut ordered: Vec<&Phase> = c
        .phases
        .iter()
        .filter(|p| p.kind != PhaseKind::Soak)
        .collect();
    if c.nccl_first
        && let Some(first_duty) = ordered.iter().position(|p| p.kind == PhaseKind::Duty)
    {
        let late_nccl: Vec<&Phase> = ordered[first_duty..]
            .iter()
            .filter(|p| p.kind == PhaseKind::Nccl)
            .copied()
            .collect();
        if !late_nccl.is_empty() {
            ordered.retain(|p| !late_nccl.iter().any(|q| std::ptr::eq(*p, *q)));
            for (i, p) in late_nccl.iter().enumerate() {
                ordered.insert(first_duty + i, p);
                notes.push(format!("phase `{}` (nccl) moved before the first duty phase: the fabric is measured first (set nccl_first = false to keep file order)", p.name));
            }
        }
    }
    let soaks: Vec<&Phase> = c
        .phases
        .iter()
        .filter(|p| p.kind == PhaseKind::Soak)
        .collect();
    if let Some(last_non_soak) = c.phases.iter().rposition(|p| p.kind != PhaseKind::Soak)
        && c.phases
            .iter()
            .position(|p| p.kind == PhaseKind::Soak)
            .is_some_and(|s| s < last_non_soak)
    {
        notes.push("soak phases moved to the end: the soak runs last".to_string());
    }
    ordered.extend(soaks);
    (ordered, notes)
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

/// Expands a campaign for `gpu_count` GPUs of a single node.
///
/// # Errors
///
/// Returns a [`CampaignError`] in the same cases as [`expand_on_rack`]
/// (apart from the rack position, which is always valid here).
pub fn expand(
    c: &Campaign,
    gpu_count: usize,
    repeats_override: Option<u32>,
) -> Result<Plan, CampaignError> {
    expand_on_rack(c, gpu_count, repeats_override, RackPosition::SOLO)
}

/// Expands a campaign for `gpu_count` GPUs of the node at `pos` in a rack. `repeats_override` (the CLI's
/// `--repeats`) replaces the repeats of every idle, sustained and duty phase;
/// NCCL sweeps and the soak run once regardless.
///
/// # Errors
///
/// Returns a [`CampaignError`] if `pos` is not a valid rank of a non-empty
/// rack, if `repeats_override` is outside `1..=MAX_REPEATS` (1000), if
/// the campaign would expand into more than [`MAX_RUNGS`] rungs, if
/// `gpu_count` is 0 or above [`MAX_GPUS`], if two rungs would share a
/// label, if the plan would run longer than [`MAX_PLAN_NS`]
/// (366 days), if
/// an explicit offset list does not have one entry per GPU (or per node,
/// with `stagger = "node"`), or if an in-phase duty rung would swing more
/// than 4 GPUs at once without `confirm_node_swing = true`, or if the
/// campaign asks for `ramp_up = true` in a rack of several nodes.
///
/// Unless the campaign says `ramp_up = false` (on by default above 2 GPUs),
/// a single node's plan gets the ramp-up steps of [`ramp_up_steps`] before
/// its first in-phase multi-GPU duty rung.
pub fn expand_on_rack(
    c: &Campaign,
    gpu_count: usize,
    repeats_override: Option<u32>,
    pos: RackPosition,
) -> Result<Plan, CampaignError> {
    if pos.nodes == 0 || pos.rank >= pos.nodes {
        return Err(plan_error(
            c,
            "rack".into(),
            format!("rank {} is not one of {} nodes", pos.rank, pos.nodes),
            None,
        ));
    }
    if let Some(n) = repeats_override.filter(|n| !(1..=crate::model::MAX_REPEATS).contains(n)) {
        return Err(plan_error(
            c,
            "--repeats".into(),
            format!(
                "{n} repeats: a campaign runs each rung at least once and at most {} times",
                crate::model::MAX_REPEATS
            ),
            Some("1..=1000"),
        ));
    }
    let total_s = estimated_total_s(c, repeats_override);
    if total_s > ns_to_s(MAX_PLAN_NS) {
        return Err(plan_error(
            c,
            "phase".into(),
            format!("the campaign would run {:.0} days", total_s / 86_400.0),
            Some("a total under 366 days (fewer repeats or shorter phases)"),
        ));
    }
    let rungs = estimated_rungs(c, repeats_override);
    if rungs > MAX_RUNGS as u64 {
        return Err(plan_error(
            c,
            "phase".into(),
            format!("the campaign would expand into {rungs} rungs, more than {MAX_RUNGS}"),
            Some("at most 10000 rungs (fewer repeats, periods or modes)"),
        ));
    }
    if gpu_count > MAX_GPUS {
        return Err(plan_error(
            c,
            "campaign.gpus".into(),
            format!("{gpu_count} GPUs on one node: more than {MAX_GPUS}"),
            Some("1 to 1024 GPUs per node"),
        ));
    }
    if gpu_count == 0 {
        return Err(plan_error(
            c,
            "campaign.gpus".into(),
            "no GPUs selected".into(),
            None,
        ));
    }
    let (mut ordered, notes) = order_phases(c);
    let calibration = if c.calibrate {
        calibration_phases()
    } else {
        Vec::new()
    };
    ordered.splice(0..0, calibration.iter());
    let mut rungs = Vec::new();
    let mut notes = notes;
    for phase in ordered {
        let repeats = match (phase.kind, repeats_override) {
            _ if phase.name == CALIBRATION_PHASE => 1,
            (PhaseKind::Idle | PhaseKind::Sustained | PhaseKind::Duty, Some(n)) => n,
            _ => phase.repeats,
        };
        let periods: Vec<Option<f64>> = if phase.kind == PhaseKind::Duty {
            phase.periods_ms.iter().map(|p| Some(*p)).collect()
        } else {
            vec![None]
        };
        // Achieved period and settling time of each requested period.
        let duration_ns = secs(phase.duration_s);
        let ramp_ns = secs(phase.ramp_s);
        let timing = |nominal: Option<f64>| -> (Option<f64>, i64) {
            let Some(p) = nominal.filter(|_| phase.kind == PhaseKind::Duty && phase.duty < 1.0)
            else {
                return (nominal, 0);
            };
            let settle = crate::detune::settle_ns(ms_to_ns(p), duration_ns - ramp_ns);
            let window_ms = ns_to_ms(duration_ns - ramp_ns - settle);
            let achieved = if phase.exact_period {
                p
            } else {
                crate::detune::detuned_period_ms(p, window_ms)
            };
            (
                Some(achieved),
                crate::detune::whole_cycles_settle_ns(
                    settle,
                    duration_ns - ramp_ns,
                    ms_to_ns(achieved),
                ),
            )
        };
        // Once per period: the search for a detuned period is the costly part.
        let timings: Vec<(Option<f64>, i64)> = periods.iter().map(|p| timing(*p)).collect();
        let detuned: Vec<String> = periods
            .iter()
            .zip(&timings)
            .filter_map(|(p, t)| p.map(|p| (p, t.0.unwrap_or(p))))
            .filter(|(p, a)| a != p)
            .map(|(p, a)| format!("{} → {} ms", fmt_num(p), fmt_num(a)))
            .collect();
        if !detuned.is_empty() {
            notes.push(format!(
                "phase `{}`: periods detuned from the {} ms sampling grid so that the samples sweep every phase of the cycle: {} (exact_period = true keeps them; such a rung is folded only where its samples happen to cover the cycle, else it reports a verdict instead of node figures)",
                phase.name,
                crate::detune::SAMPLE_GRID_MS,
                detuned.join(", ")
            ));
        }
        // An NCCL phase is a sweep, a fabric rung and optionally a
        // bulk-synchronous rung.
        let steps: Vec<Option<NcclStep>> = match &phase.nccl {
            Some(n) if phase.kind == PhaseKind::Nccl => {
                let mut v = vec![Some(NcclStep::Sweep), Some(NcclStep::Fabric)];
                if n.bsp_compute_ms.is_some() {
                    v.push(Some(NcclStep::Bsp));
                }
                v
            }
            _ => vec![None],
        };
        for repeat in 1..=repeats {
            for step in &steps {
                for (period, &(achieved, settle_ns)) in periods.iter().zip(&timings) {
                    for mode in &phase.modes {
                        let offsets_ns = offsets(c, phase, *mode, achieved, gpu_count, pos)?;
                        let swinging = gpu_count * pos.nodes;
                        if phase.kind == PhaseKind::Duty
                            && *mode == Mode::InPhase
                            && swinging > 4
                            && phase.duty < 1.0
                            && !c.confirm_node_swing
                        {
                            let whole = if pos.nodes > 1 { "rack" } else { "node" };
                            return Err(plan_error(
                                c,
                                format!("phases.{}", phase.name),
                                format!(
                                    "an in-phase duty rung across {swinging} GPUs swings the whole {whole} (kilowatts in milliseconds)"
                                ),
                                Some(
                                    "confirm_node_swing = true in [campaign], after checking the supply can take it",
                                ),
                            ));
                        }
                        let mut label = phase.name.clone();
                        if let Some(p) = period {
                            label.push_str(&format!("/p{}ms", fmt_num(*p)));
                        }
                        if phase.kind == PhaseKind::Duty {
                            label.push_str(&format!("/{}", mode.as_str()));
                        }
                        if let Some(s) = step {
                            label.push_str(&format!("/{}", s.as_str()));
                        }
                        if repeats > 1 {
                            label.push_str(&format!("/r{repeat}"));
                        }
                        let duty = match phase.kind {
                            PhaseKind::Idle => 0.0,
                            PhaseKind::Duty => phase.duty,
                            _ => 1.0,
                        };
                        rungs.push(Rung {
                            id: rungs.len() as u32,
                            phase: phase.name.clone(),
                            kind: phase.kind,
                            label,
                            mode: *mode,
                            period_ms: achieved,
                            nominal_period_ms: *period,
                            duty,
                            repeat,
                            repeats,
                            warmup_ns: secs(phase.warmup_s),
                            ramp_ns,
                            settle_ns,
                            duration_ns: match (step, &phase.nccl) {
                                (Some(NcclStep::Sweep), Some(n)) => secs(n.sweep_s),
                                _ => duration_ns,
                            },
                            cooldown_ns: secs(phase.cooldown_s),
                            offsets_ns,
                            nccl: phase.nccl.clone(),
                            nccl_step: *step,
                            no_context: false,
                            swinging: None,
                        });
                    }
                }
            }
        }
    }
    insert_ramp_up(c, &mut rungs, &mut notes, gpu_count, pos)?;
    if let Some(note) = no_context_baseline(&mut rungs) {
        notes.push(note);
    }
    // Every report, the summaries and `compare` tell rungs apart by label.
    let mut seen = std::collections::HashSet::new();
    if let Some(dup) = rungs.iter().find(|r| !seen.insert(r.label.as_str())) {
        return Err(plan_error(
            c,
            format!("phases.{}.name", dup.phase),
            format!("two rungs would be labelled `{}`", dup.label),
            Some("phase names that are unique and hold no '/' (see campaigns/README.md)"),
        ));
    }
    // Checked sum: a plan whose total does not fit the clock is refused,
    // never run as a negative or wrapped duration.
    let total = rungs.iter().try_fold(0i64, |acc, r| {
        acc.checked_add(r.nominal_ns())
            .filter(|t| *t <= MAX_PLAN_NS)
    });
    if total.is_none() {
        return Err(plan_error(
            c,
            "phase".into(),
            format!(
                "the campaign would run longer than {} days",
                MAX_PLAN_NS / 86_400_000_000_000
            ),
            Some("a total under one year (fewer repeats or shorter phases)"),
        ));
    }
    Ok(Plan {
        campaign: c.name.clone(),
        gpu_count,
        rungs,
        notes,
    })
}

/// The first idle baseline: before any other rung (so before this process
/// creates a CUDA context on any GPU), a copy of the first idle rung that
/// only samples: the GPUs at their own idle, low clocks and all. The idle
/// rungs proper are the second baseline: the context held, the state of
/// every off-phase. Nothing without an idle phase.
/// The least wait before the idle rung without a context, ns.
pub const NO_CONTEXT_SETTLE_NS: i64 = 5_000_000_000;

fn no_context_baseline(rungs: &mut Vec<Rung>) -> Option<String> {
    let first = rungs.iter().find(|r| r.kind == PhaseKind::Idle)?;
    let mut bare = first.clone();
    bare.label = format!("{}/no-context", first.phase);
    bare.repeat = 1;
    bare.repeats = 1;
    bare.no_context = true;
    // The preflight's own contexts were released just before: time to settle.
    bare.warmup_ns = bare.warmup_ns.max(NO_CONTEXT_SETTLE_NS);
    let note = format!(
        "idle phase `{}`: a first rung `{}` samples the GPUs while this process holds no CUDA context (no load, no context; it waits {} s first, for the GPUs to settle after the preflight's contexts are released); its other idle rungs hold the context, as every off-phase does",
        first.phase,
        bare.label,
        bare.warmup_ns / NS_PER_S
    );
    rungs.insert(0, bare);
    for (i, r) in rungs.iter_mut().enumerate() {
        r.id = i as u32;
    }
    Some(note)
}

/// Offsets of this node's GPUs. Across a rack, `stagger = "gpu"` numbers
/// every GPU globally (rank × GPUs per node + local index) and explicit lists
/// give one value per GPU of the rack; `stagger = "node"` gives all GPUs of a
/// node the node's offset and explicit lists give one value per node.
fn offsets(
    c: &Campaign,
    phase: &Phase,
    mode: Mode,
    period_ms: Option<f64>,
    n: usize,
    pos: RackPosition,
) -> Result<Vec<i64>, CampaignError> {
    let Some(period_ms) = period_ms else {
        return Ok(vec![0; n]);
    };
    if mode == Mode::InPhase {
        return Ok(vec![0; n]);
    }
    let period_ns = ms_to_ns_f64(period_ms);
    let frac_to_ns = |f: f64| ((f.rem_euclid(1.0)) * period_ns).round() as i64;
    // (slot of each local GPU, number of slots in the rack).
    let (slots, count): (Vec<usize>, usize) = match c.rack.stagger {
        RackStagger::Gpu => ((0..n).map(|i| pos.rank * n + i).collect(), pos.nodes * n),
        RackStagger::Node => (vec![pos.rank; n], pos.nodes),
    };
    let (one, many) = if c.rack.stagger == RackStagger::Node {
        ("node of the rack", "nodes of the rack")
    } else if pos.nodes > 1 {
        ("GPU of the rack", "GPUs of the rack")
    } else {
        ("selected GPU", "selected GPUs")
    };
    let v: Vec<i64> = match &phase.stagger {
        Stagger::Even => slots
            .iter()
            .map(|&k| frac_to_ns(k as f64 / count as f64))
            .collect(),
        Stagger::StepDeg(d) => slots
            .iter()
            .map(|&k| frac_to_ns(k as f64 * d / 360.0))
            .collect(),
        Stagger::OffsetsDeg(list) | Stagger::OffsetsMs(list) if list.len() != count => {
            return Err(plan_error(
                c,
                format!("phases.{}.offsets", phase.name),
                format!("{} offsets are given for {count} {many}", list.len()),
                Some(&format!("one offset per {one}")),
            ));
        }
        Stagger::OffsetsDeg(list) => slots.iter().map(|&k| frac_to_ns(list[k] / 360.0)).collect(),
        Stagger::OffsetsMs(list) => slots.iter().map(|&k| ms_to_ns(list[k])).collect(),
    };
    Ok(v)
}

fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// Renders the plan as a table for `powerlab plan`.
pub fn render(plan: &Plan) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "campaign `{}` on {} GPU(s): {} rungs",
        plan.campaign,
        plan.gpu_count,
        plan.rungs.len()
    );
    for n in &plan.notes {
        let _ = writeln!(s, "note: {n}");
    }
    let _ = writeln!(
        s,
        "{:>4}  {:<40} {:<9} {:>10} {:>5} {:>8} {:>8} {:>8} {:>8} {:>9}  offsets (ms)",
        "id",
        "rung",
        "kind",
        "period",
        "duty",
        "warmup",
        "window",
        "settle",
        "cooldown",
        "starts at"
    );
    let mut t = 0i64;
    for r in &plan.rungs {
        // A GPU the rung leaves idle (a ramp-up step's) shows `idle`.
        let offs: Vec<String> = r
            .offsets_ns
            .iter()
            .enumerate()
            .map(|(i, o)| {
                if r.loads_gpu(i) {
                    format!("{:.3}", ns_to_ms(*o))
                } else {
                    "idle".into()
                }
            })
            .collect();
        let _ = writeln!(
            s,
            "{:>4}  {:<40} {:<9} {:>10} {:>5.2} {:>7.1}s {:>7.1}s {:>7.2}s {:>7.1}s {:>9}  [{}]",
            r.id,
            r.label,
            r.kind.as_str(),
            r.period_ms
                .map(|p| format!("{}ms", fmt_num(p)))
                .unwrap_or_else(|| "-".into()),
            r.duty,
            ns_to_s(r.warmup_ns),
            ns_to_s(r.duration_ns),
            ns_to_s(r.ramp_ns + r.settle_ns),
            ns_to_s(r.cooldown_ns),
            fmt_hms(t + r.warmup_ns),
            offs.join(", ")
        );
        t += r.nominal_ns();
    }
    let _ = writeln!(
        s,
        "period: what the GPUs run (detuned from the sampling grid where needed); settle: ramp plus the time for the rung's own pattern to hold (and to leave a whole number of cycles), left out of every figure"
    );
    if plan.rungs.iter().any(|r| r.kind == PhaseKind::RampUp) {
        let _ = writeln!(
            s,
            "ramp_up: a step of the ramp-up of swing depth (rampup/KofN: K of the N GPUs swing in phase, the GPUs shown idle run no load, warm-up included); a limit or interlock tripped in a step stops the run before the next"
        );
    }
    let _ = writeln!(
        s,
        "total: {} ({} s) plus barrier waits",
        fmt_hms(plan.total_ns()),
        plan.total_ns() / NS_PER_S
    );
    s
}

/// Formats nanoseconds as h:mm:ss.
pub fn fmt_hms(ns: i64) -> String {
    let s = ns / NS_PER_S;
    format!("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn staggered(rack: &str, offsets: &str) -> Campaign {
        let text = format!(
            "[campaign]\nname = \"r\"\nconfirm_node_swing = true\n{rack}\n[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiod_ms = 800\nduration_s = 2\nmode = \"staggered\"\n{offsets}\n"
        );
        crate::parse_str("r.toml", &text).unwrap()
    }

    fn offsets_ms(c: &Campaign, gpus: usize, rank: usize, nodes: usize) -> Vec<f64> {
        let p = expand_on_rack(c, gpus, None, RackPosition { rank, nodes }).unwrap();
        p.rungs[0]
            .offsets_ns
            .iter()
            .map(|o| *o as f64 / 1e6)
            .collect()
    }

    /// A staggered and an in-phase rung at 500 ms, then an in-phase one at
    /// 100 ms; `header` goes into `[campaign]`.
    fn swings(header: &str) -> Campaign {
        let text = format!(
            "[campaign]\nname = \"r\"\nconfirm_node_swing = true\n{header}\n[[phase]]\nkind = \"idle\"\nduration_s = 2\n[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiods_ms = [500, 100]\nduration_s = 20\nmodes = [\"staggered\", \"in_phase\"]\n"
        );
        crate::parse_str("r.toml", &text).unwrap()
    }

    fn labels(p: &Plan) -> Vec<&str> {
        p.rungs.iter().map(|r| r.label.as_str()).collect()
    }

    #[test]
    fn ramp_up_steps_1_2_4_precede_the_first_in_phase_swing_on_8_gpus() {
        let p = expand(&swings(""), 8, None).unwrap();
        assert_eq!(
            labels(&p),
            vec![
                "idle-0/no-context",
                "idle-0",
                "d/p500ms/staggered",
                "rampup/1of8/p500ms",
                "rampup/2of8/p500ms",
                "rampup/4of8/p500ms",
                "d/p500ms/in_phase",
                "d/p100ms/staggered",
                "d/p100ms/in_phase",
            ]
        );
        let target = &p.rungs[6];
        for (step, k) in p.rungs[3..6].iter().zip([1usize, 2, 4]) {
            assert_eq!(step.kind, PhaseKind::RampUp);
            assert_eq!(step.mode, Mode::InPhase);
            assert_eq!(step.swinging, Some((0..k).collect::<Vec<_>>()));
            assert!((0..8).all(|i| step.loads_gpu(i) == (i < k)));
            assert_eq!(step.period_ms, target.period_ms);
            assert_eq!(step.duty, target.duty);
            assert_eq!(step.warmup_ns, target.warmup_ns);
            // max(5 s, 3 × 500 ms) = 5 s, shorter than the rung's 20 s.
            assert_eq!(step.duration_ns, 5_000_000_000);
        }
        // Ids follow the run order; no other rung is marked.
        assert!(p.rungs.iter().enumerate().all(|(i, r)| r.id == i as u32));
        assert!(
            p.rungs
                .iter()
                .filter(|r| r.kind != PhaseKind::RampUp)
                .all(|r| r.swinging.is_none() && r.loads_gpu(7))
        );
        assert!(
            p.notes
                .iter()
                .any(|n| n.starts_with("ramp-up: 1, 2, 4 of 8"))
        );
        let table = render(&p);
        assert!(
            table.contains("[0.000, 0.000, idle, idle, idle, idle, idle, idle]"),
            "{table}"
        );
    }

    #[test]
    fn ramp_up_follows_the_gpu_count_and_the_campaign_key() {
        let steps = |c: &Campaign, n: usize| -> Vec<String> {
            expand(c, n, None)
                .unwrap()
                .rungs
                .iter()
                .filter(|r| r.kind == PhaseKind::RampUp)
                .map(|r| r.label.clone())
                .collect()
        };
        let default = swings("");
        assert_eq!(
            steps(&default, 3),
            vec!["rampup/1of3/p500ms", "rampup/2of3/p500ms"]
        );
        assert!(steps(&default, 2).is_empty());
        assert!(steps(&default, 1).is_empty());
        assert_eq!(steps(&default, 16).len(), 4);
        let off = swings("ramp_up = false");
        assert!(steps(&off, 8).is_empty());
        assert_eq!(
            expand(&off, 8, None).unwrap().rungs.len(),
            expand(&default, 8, None).unwrap().rungs.len() - 3
        );
        let on = swings("ramp_up = true");
        assert_eq!(steps(&on, 2), vec!["rampup/1of2/p500ms"]);
        assert!(steps(&on, 1).is_empty());
        // Long periods: three of them, but never longer than the rung's window.
        let long = crate::parse_str(
            "r.toml",
            "[campaign]\nname = \"r\"\nconfirm_node_swing = true\n[[phase]]\nkind = \"duty\"\nperiod_ms = 4000\nduration_s = 10\nexact_period = true\n",
        )
        .unwrap();
        let p = expand(&long, 4, None).unwrap();
        assert_eq!(p.rungs[0].duration_ns, 10_000_000_000);
        let long = crate::parse_str(
            "r.toml",
            "[campaign]\nname = \"r\"\nconfirm_node_swing = true\n[[phase]]\nkind = \"duty\"\nperiod_ms = 4000\nduration_s = 60\nexact_period = true\n",
        )
        .unwrap();
        assert_eq!(
            expand(&long, 4, None).unwrap().rungs[0].duration_ns,
            12_000_000_000
        );
    }

    #[test]
    fn no_ramp_up_without_an_in_phase_swing_nor_across_a_rack() {
        let staggered_only = staggered("", "");
        let p = expand(&staggered_only, 8, None).unwrap();
        assert!(p.rungs.iter().all(|r| r.kind != PhaseKind::RampUp));
        let rack =
            expand_on_rack(&swings(""), 4, None, RackPosition { rank: 1, nodes: 2 }).unwrap();
        assert!(rack.rungs.iter().all(|r| r.kind != PhaseKind::RampUp));
        assert!(
            rack.notes
                .iter()
                .any(|n| n.starts_with("no ramp-up of swing depth in a rack run")),
            "{:?}",
            rack.notes
        );
        let e = expand_on_rack(
            &swings("ramp_up = true"),
            4,
            None,
            RackPosition { rank: 0, nodes: 2 },
        )
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("campaign.ramp_up"));
    }

    #[test]
    fn gpu_stagger_numbers_every_gpu_of_the_rack() {
        let c = staggered("", "");
        assert_eq!(offsets_ms(&c, 2, 0, 1), vec![0.0, 400.0]);
        // 4 nodes × 2 GPUs: node 2 holds global GPUs 4 and 5 of 8.
        assert_eq!(offsets_ms(&c, 2, 2, 4), vec![400.0, 500.0]);
        let step = staggered("", "stagger_step_deg = 45");
        assert_eq!(offsets_ms(&step, 2, 1, 2), vec![200.0, 300.0]);
    }

    #[test]
    fn node_stagger_keeps_a_node_in_phase_and_spreads_the_nodes() {
        let c = staggered("[rack]\nstagger = \"node\"", "");
        assert_eq!(offsets_ms(&c, 3, 0, 4), vec![0.0; 3]);
        assert_eq!(offsets_ms(&c, 3, 3, 4), vec![600.0; 3]);
        let listed = staggered("[rack]\nstagger = \"node\"", "offsets_ms = [0, 10, 20]");
        assert_eq!(offsets_ms(&listed, 2, 2, 3), vec![20.0, 20.0]);
        let e = expand_on_rack(&listed, 2, None, RackPosition { rank: 0, nodes: 4 }).unwrap_err();
        assert!(
            e.message
                .contains("3 offsets are given for 4 nodes of the rack"),
            "{e}"
        );
    }

    #[test]
    fn an_in_phase_rack_swing_needs_consent_and_a_rank_must_exist() {
        let text = "[campaign]\nname = \"r\"\n[[phase]]\nkind = \"duty\"\nperiod_ms = 100\nduration_s = 2\n";
        let c = crate::parse_str("r.toml", text).unwrap();
        assert!(expand_on_rack(&c, 2, None, RackPosition { rank: 0, nodes: 1 }).is_ok());
        let e = expand_on_rack(&c, 2, None, RackPosition { rank: 0, nodes: 4 }).unwrap_err();
        assert!(e.message.contains("8 GPUs swings the whole rack"), "{e}");
        assert!(expand_on_rack(&c, 2, None, RackPosition { rank: 4, nodes: 4 }).is_err());
    }
}
