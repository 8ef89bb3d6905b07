//! The rungs the planner adds to the campaign's own: the ramp-up of swing
//! depth before the first in-phase multi-GPU swing, and the idle rung run
//! before any CUDA context exists.

use super::schedule::{RackPosition, Rung, fmt_num, plan_error, secs};
use crate::error::CampaignError;
use crate::model::{Campaign, Mode, PeriodMs, PhaseKind};
use powerlab_core::units::NS_PER_S;

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
    let period_ms = target
        .nominal_period_ms
        .or(target.period_ms)
        .map_or(0.0, PeriodMs::ms);
    let period_ns = target.period_ms.map_or(0, PeriodMs::ns);
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
            smoothing: None,
            workload: None,
            no_context: false,
        })
        .collect()
}

/// Phase name (and label prefix) of the ramp-up steps.
pub const RAMP_UP_PHASE: &str = "rampup";

/// Inserts the ramp-up steps before the first in-phase multi-GPU duty rung
/// where the campaign wants them (see [`Campaign::ramp_up_for`]), and
/// renumbers the rungs. A rack run plans none (see the note it gets).
pub(super) fn insert_ramp_up(
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
    if let Some(s) = rungs[at].smoothing.filter(|s| !s.is_none()) {
        // Said where the user reads the plan: the steps swing plain.
        notes.push(format!(
            "ramp-up: its steps swing without `{}`'s mitigation ({}): a plain swing of up to {} GPUs, larger than the mitigated rung's may be; check the supply for it, or list a plain entry (`{{}}`) first in `smoothing`, or set ramp_up = false",
            rungs[at].label,
            s.label(),
            depths.last().map_or("0", String::as_str)
        ));
    }
    rungs.splice(at..at, steps);
    for (i, r) in rungs.iter_mut().enumerate() {
        r.id = i as u32;
    }
    Ok(())
}

/// The least wait before the idle rung without a context, ns.
pub const NO_CONTEXT_SETTLE_NS: i64 = 5 * NS_PER_S;

/// The first idle baseline: before any other rung (so before this process
/// creates a CUDA context on any GPU), a copy of the first idle rung that
/// only samples: the GPUs at their own idle, low clocks and all. The idle
/// rungs proper are the second baseline: the context held, the state of
/// every off-phase. Nothing without an idle phase.
pub(super) fn no_context_baseline(rungs: &mut Vec<Rung>) -> Option<String> {
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
