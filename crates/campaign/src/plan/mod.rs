//! Expansion of a campaign into the exact schedule of rungs.

mod estimate;
mod inserted;
mod phases;
mod render;
mod schedule;
#[cfg(test)]
mod tests;

pub use estimate::{estimated_rungs, estimated_total_s};
pub use inserted::{
    NO_CONTEXT_SETTLE_NS, RAMP_STEP_MIN_S, RAMP_STEP_PERIODS, RAMP_UP_PHASE, ramp_up_depths,
    ramp_up_steps,
};
pub use render::{fmt_hms, render, smoothing_words};
pub use schedule::{Plan, RackPosition, Rung};

use crate::error::CampaignError;
use crate::model::{Campaign, MAX_REPEATS, calibration_phases};
use powerlab_core::units::{NS_PER_S, ns_to_s};
use schedule::plan_error;

/// Nanoseconds in a day.
const NS_PER_DAY: i64 = 86_400 * NS_PER_S;

/// Longest campaign the planner accepts: one year, ns.
pub const MAX_PLAN_NS: i64 = 366 * NS_PER_DAY;

/// Most rungs a campaign may expand into (planner-inserted rungs aside:
/// the calibration, the ramp-up steps and the idle rung without a context
/// add at most a few dozen).
pub const MAX_RUNGS: usize = 10_000;

/// Most GPUs of one node a plan is made for (`plan --gpus`, a node's
/// count): far above any node built, low enough that a plan's offsets
/// (one per GPU per rung) stay within tens of megabytes.
pub const MAX_GPUS: usize = 1_024;

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
    check_request(c, gpu_count, repeats_override, pos)?;
    let (mut ordered, mut notes) = phases::order_phases(c);
    let calibration = if c.calibrate {
        calibration_phases()
    } else {
        Vec::new()
    };
    ordered.splice(0..0, calibration.iter());
    let node = phases::Node {
        c,
        gpu_count,
        pos,
        repeats_override,
    };
    let mut rungs = Vec::new();
    for phase in ordered {
        node.phase_rungs(phase, &mut rungs, &mut notes)?;
    }
    inserted::insert_ramp_up(c, &mut rungs, &mut notes, gpu_count, pos)?;
    if let Some(note) = inserted::no_context_baseline(&mut rungs) {
        notes.push(note);
    }
    check_labels(c, &rungs)?;
    check_total(c, &rungs)?;
    Ok(Plan {
        campaign: c.name.clone(),
        gpu_count,
        rungs,
        notes,
    })
}

/// Before anything is expanded: a valid rank, repeats within
/// `1..=MAX_REPEATS`, a campaign within [`MAX_PLAN_NS`] and [`MAX_RUNGS`],
/// and `1..=MAX_GPUS` GPUs.
fn check_request(
    c: &Campaign,
    gpu_count: usize,
    repeats_override: Option<u32>,
    pos: RackPosition,
) -> Result<(), CampaignError> {
    if pos.nodes == 0 || pos.rank >= pos.nodes {
        return Err(plan_error(
            c,
            "rack".into(),
            format!("rank {} is not one of {} nodes", pos.rank, pos.nodes),
            None,
        ));
    }
    if let Some(n) = repeats_override.filter(|n| !(1..=MAX_REPEATS).contains(n)) {
        return Err(plan_error(
            c,
            "--repeats".into(),
            format!(
                "{n} repeats: a campaign runs each rung at least once and at most {MAX_REPEATS} times"
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
    Ok(())
}

/// Every report, the summaries and `compare` tell rungs apart by label.
fn check_labels(c: &Campaign, rungs: &[Rung]) -> Result<(), CampaignError> {
    let mut seen = std::collections::HashSet::new();
    match rungs.iter().find(|r| !seen.insert(r.label.as_str())) {
        Some(dup) => Err(plan_error(
            c,
            format!("phases.{}.name", dup.phase),
            format!("two rungs would be labelled `{}`", dup.label),
            Some("phase names that are unique and hold no '/' (see campaigns/README.md)"),
        )),
        None => check_stems(c, rungs),
    }
}

/// A rung's files are named by its label's [`file_stem`]: two labels
/// that differ only where the stem replaces a character (`train/r2`, the
/// second repeat of `train`, and a phase `train-r2`) would write one
/// file, the first run's truncated by the second's.
fn check_stems(c: &Campaign, rungs: &[Rung]) -> Result<(), CampaignError> {
    let mut seen: std::collections::HashMap<String, &str> = std::collections::HashMap::new();
    for r in rungs {
        if let Some(first) = seen.insert(file_stem(&r.label), &r.label) {
            return Err(plan_error(
                c,
                format!("phases.{}.name", r.phase),
                format!(
                    "rungs `{first}` and `{}` would write the same files (`{}.*`)",
                    r.label,
                    file_stem(&r.label)
                ),
                Some(
                    "phase names that no repeat's label meets (a phase named `train-r2` beside a phase `train` repeated twice is refused)",
                ),
            ));
        }
    }
    Ok(())
}

/// The file stem of a rung's label (`train/r2` → `train-r2`): the name of
/// the files the rung writes (a workload rung's `workload/<stem>.*`).
pub fn file_stem(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Checked sum: a plan whose total does not fit the clock is refused,
/// never run as a negative or wrapped duration.
fn check_total(c: &Campaign, rungs: &[Rung]) -> Result<(), CampaignError> {
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
                MAX_PLAN_NS / NS_PER_DAY
            ),
            Some("a total under one year (fewer repeats or shorter phases)"),
        ));
    }
    Ok(())
}
