//! TOML → validated [`Campaign`], with every error located in the file.
//!
//! `raw` is the file as written (toml refuses unknown keys there);
//! `sections` checks the tables around the phases, one function each;
//! `phase` checks each `[[phase]]` against the kinds, keys and ranges
//! declared once in `table`, with the duty and NCCL parts in `duty` and
//! `nccl` and what the parts share in `phase_ctx`.

mod duty;
mod grid;
mod grid_system;
mod nccl;
mod phase;
mod phase_ctx;
mod raw;
mod sections;
mod smoothing;
mod table;
mod workload;

use crate::ctx::Ctx;
use crate::error::{CampaignError, line_col};
use crate::model::{Campaign, GpuSelector, Phase};
use phase::validate_phase;
use phase_ctx::PhaseDefaults;
use powerlab_core::units::ns_to_s;
use raw::{RawFile, RawPhase};
use std::ops::Range;
use toml::Spanned;

pub(crate) use grid::grid;
pub(crate) use raw::{RawGrid, RawSupply};
pub(crate) use sections::{SupplyRanges, supply};

pub use crate::model::MAX_REPEATS;
pub use table::{
    MAX_DURATION_S, MAX_PERIODS, MAX_WARMUP_S, MIN_DURATION_S, MIN_DUTY, MIN_PULSE_MS,
    TEMP_LIMIT_RANGE_C,
};

/// Reads and validates a campaign file.
///
/// # Errors
///
/// Returns a [`CampaignError`] (at line 0, column 0) if the file cannot be
/// read, and otherwise every error of [`parse_str`]: TOML that does not
/// parse or a campaign that fails validation, located by line and column.
pub fn load_file(path: &std::path::Path) -> Result<Campaign, CampaignError> {
    let display = path.display().to_string();
    let source = std::fs::read_to_string(path).map_err(|e| CampaignError {
        file: display.clone(),
        line: 0,
        column: 0,
        field: None,
        message: format!("cannot read the campaign file: {e}"),
        allowed: None,
    })?;
    parse_str(&display, &source)
}

/// Parses and validates campaign text; `file` names it in errors.
///
/// # Errors
///
/// Returns a [`CampaignError`] naming the line, column and, where known,
/// the field if the text is not valid TOML, has a missing or unknown key
/// or a value of the wrong type, or fails validation: a value out of its
/// range (with the allowed range), an unknown phase kind, mode, collective
/// or stagger, a key not allowed in its phase's kind, duplicate phase
/// names, periods, modes, collectives or GPUs, a campaign or phase name
/// outside [`crate::names::NAME_ALLOWED`] or reserved for the planner's
/// rungs, a duty that leaves no on or off part ([`MIN_DUTY`],
/// [`MIN_PULSE_MS`]), an offset list that does not fit the GPUs listed,
/// more than [`MAX_PERIODS`] periods in a phase, more than
/// [`crate::plan::MAX_RUNGS`] rungs or more than
/// [`crate::plan::MAX_GPUS`] listed GPUs, inconsistent timing such as a
/// ramp not shorter than the rung, or a campaign that would run longer
/// than 366 days in all.
pub fn parse_str(file: &str, source: &str) -> Result<Campaign, CampaignError> {
    let ctx = Ctx { file, source };
    let raw: RawFile = toml::from_str(source).map_err(|e| toml_error(&ctx, &e))?;
    validate(&ctx, raw)
}

/// A toml error (syntax, type, unknown or missing key) located at its
/// line, naming the key written on that line.
pub(crate) fn toml_error(ctx: &Ctx<'_>, e: &toml::de::Error) -> CampaignError {
    let start = e.span().map(|s| s.start).unwrap_or(0);
    let (line, column) = line_col(ctx.source, start);
    // Name the key on that line, if the error sits on a `key = value` line.
    let line_text = ctx.source.lines().nth(line.saturating_sub(1)).unwrap_or("");
    let field = line_text
        .split_once('=')
        .map(|(k, _)| k.trim().to_string())
        .filter(|k| !k.is_empty() && !k.starts_with('['));
    let mut message = e.message().trim().to_string();
    if message.starts_with("missing field") {
        message.push_str(" (a required key is absent in this table)");
    }
    let allowed = message
        .contains("unknown field")
        .then(|| "the keys listed in the message; see campaigns/README.md".to_string());
    CampaignError {
        file: ctx.file.to_string(),
        line,
        column,
        field,
        message,
        allowed,
    }
}

fn validate(ctx: &Ctx<'_>, raw: RawFile) -> Result<Campaign, CampaignError> {
    let header_span = raw.campaign.span();
    let header = raw.campaign.into_inner();
    let name = sections::campaign_name(ctx, &header.name)?;
    let gpus = match &header.gpus {
        None => GpuSelector::All,
        Some(v) => sections::gpus(ctx, v)?,
    };
    let sampling = sections::sampling(ctx, raw.sampling)?;
    let limits = sections::limits(ctx, raw.limits)?;
    let rack = sections::rack(ctx, raw.rack)?;
    let supply = raw
        .supply
        .map(|s| sections::supply(ctx, s, sections::SupplyRanges::NODE))
        .transpose()?;
    let grid = raw.grid.map(|g| grid::grid(ctx, g)).transpose()?;
    let (repeats, warmup_s, cooldown_s) = sections::defaults(ctx, raw.defaults)?;
    if raw.phase.is_empty() && header.calibrate != Some(true) {
        return Err(ctx.err(
            header_span,
            "phase",
            "the campaign declares no phases",
            Some("one or more [[phase]] tables, or calibrate = true in [campaign]"),
        ));
    }
    let defaults = PhaseDefaults {
        repeats,
        warmup_s,
        cooldown_s,
        listed_gpus: match &gpus {
            GpuSelector::List(l) => Some(l.len()),
            GpuSelector::All => None,
        },
        rack_stagger: rack.stagger,
    };
    let phases = phases(ctx, raw.phase, &defaults)?;
    let campaign = Campaign {
        name,
        description: header.description.unwrap_or_default(),
        gpus,
        nccl_first: header.nccl_first.unwrap_or(true),
        confirm_node_swing: header.confirm_node_swing.unwrap_or(false),
        calibrate: header.calibrate.unwrap_or(false),
        ramp_up: header.ramp_up,
        sampling,
        limits,
        rack,
        phases,
        node_power: crate::node_power::validate_all(ctx, raw.node_power)?,
        supply,
        grid,
    };
    check_size(ctx, &campaign, header_span)?;
    Ok(campaign)
}

/// Every phase, in file order, with a unique name.
fn phases(
    ctx: &Ctx<'_>,
    raw: Vec<Spanned<RawPhase>>,
    defaults: &PhaseDefaults,
) -> Result<Vec<Phase>, CampaignError> {
    let mut phases: Vec<Phase> = Vec::new();
    for (i, p) in raw.into_iter().enumerate() {
        // Where the name is written, else the phase's table.
        let name_span = p
            .get_ref()
            .name
            .as_ref()
            .map_or_else(|| p.span(), |n| n.span());
        let phase = validate_phase(ctx, i, p, defaults)?;
        if phases.iter().any(|q| q.name == phase.name) {
            return Err(ctx.err(
                name_span,
                format!("phase[{i}].name"),
                format!("two phases are named `{}`", phase.name),
                Some("unique phase names"),
            ));
        }
        phases.push(phase);
    }
    Ok(phases)
}

/// Before any schedule is expanded: a campaign of more than
/// [`crate::plan::MAX_RUNGS`] rungs, or one that cannot end within a year,
/// is refused here, at once, whatever the GPU count.
fn check_size(
    ctx: &Ctx<'_>,
    campaign: &Campaign,
    header_span: Range<usize>,
) -> Result<(), CampaignError> {
    let rungs = crate::plan::estimated_rungs(campaign, None);
    if rungs > crate::plan::MAX_RUNGS as u64 {
        return Err(ctx.err(
            header_span,
            "phase",
            format!(
                "the campaign expands into {rungs} rungs (every phase × its repeats, periods, mitigations, modes and NCCL steps), more than {}",
                crate::plan::MAX_RUNGS
            ),
            Some(&format!(
                "at most {} rungs (fewer repeats, periods or modes)",
                crate::plan::MAX_RUNGS
            )),
        ));
    }
    let total_s = crate::plan::estimated_total_s(campaign, None);
    if total_s > ns_to_s(crate::plan::MAX_PLAN_NS) {
        return Err(ctx.err(
            header_span,
            "phase",
            format!(
                "the campaign would run {:.0} days (every phase × its repeats, periods and modes)",
                total_s / 86_400.0
            ),
            Some("a total under 366 days (fewer repeats or shorter phases)"),
        ));
    }
    Ok(())
}
