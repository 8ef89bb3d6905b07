//! The campaign's size counted without expanding it: its rungs and its
//! nominal length, for the parser's and the planner's early refusals.

use crate::model::{Campaign, Phase, PhaseKind};

/// How many rungs phase `p` expands into, counted without expanding it:
/// its repeats (or `repeats_override`) × periods × mitigations × modes ×
/// NCCL steps.
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
    let mitigations = p.smoothing.len().max(1);
    u64::from(repeats) * (periods * mitigations * p.modes.len().max(1) * steps) as u64
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

/// How many rungs the campaign's phases expand into, counted without
/// expanding them: every phase's repeats (or `repeats_override`) × periods
/// × mitigations × modes × NCCL steps. The planner's own rungs (calibration, ramp-up,
/// the idle rung without a context) are not counted.
pub fn estimated_rungs(c: &Campaign, repeats_override: Option<u32>) -> u64 {
    c.phases
        .iter()
        .map(|p| rungs_of_phase(p, repeats_override))
        .sum()
}
