//! TOML → validated [`Schedule`], with every error located in the file:
//! one function a table, then the rules across tables (a spread, a
//! straggler's delay, the output's span and resolution against the
//! iteration; the stagger groups against the node count).

use super::flags::{Override, Trailer};
use super::keys::{need, refuse};
use super::raw::{RawCommunication, RawJob, RawMitigation, RawSchedule, RawSpread, RawStragglers};
use super::{
    Communication, FACILITY_EXCURSION_MS_RANGE, FACILITY_SUPPLY_W_MAX, ITERATION_MS_RANGE, Job,
    MAX_COMM_W_PER_GPU, MAX_GPUS_PER_NODE, MAX_JOB_GPUS, MitigationChoice, Schedule, Spread,
    Stragglers,
};
use crate::ctx::Ctx;
use crate::error::CampaignError;
use crate::parse::SupplyRanges;
use std::ops::Range;
use std::path::Path;
use toml::Spanned;

mod output;
use output::output;

/// `[job]`'s name when not written.
const DEFAULT_NAME: &str = "job";
/// A facility's `[supply]`: watts up to [`FACILITY_SUPPLY_W_MAX`],
/// excursions within [`FACILITY_EXCURSION_MS_RANGE`].
const FACILITY: SupplyRanges = SupplyRanges {
    w: (0.0, FACILITY_SUPPLY_W_MAX),
    duration_ms: FACILITY_EXCURSION_MS_RANGE,
};
/// What a spread of 0 is written as.
const NO_SPREAD: &str =
    "for no spread write kind = \"none\", or --spread-sigma-ms 0 on the command line";
/// What an unknown key's error points to.
const KEYS_HINT: &str = "the keys listed in the message; see schedules/llm-100k.toml";

/// Reads and validates a schedule file.
///
/// # Errors
///
/// Returns a [`CampaignError`] (at line 0, column 0) if the file cannot be
/// read, and otherwise every error of [`parse_schedule_str`].
pub fn load_schedule(path: &Path) -> Result<Schedule, CampaignError> {
    let display = path.display().to_string();
    let source = std::fs::read_to_string(path).map_err(|e| CampaignError {
        file: display.clone(),
        line: 0,
        column: 0,
        field: None,
        message: format!("cannot read the schedule file: {e}"),
        allowed: None,
    })?;
    parse_schedule_str(&display, &source)
}

/// Parses and validates schedule text; `file` names it in errors.
///
/// # Errors
///
/// Returns a [`CampaignError`] naming the line, column and field path
/// (`job.compute_fraction`) if the text is not valid TOML, has an unknown
/// key or table or a value of the wrong type, lacks `[job]` or one of its
/// required keys (`gpus`, `iteration_ms`, `compute_fraction`), or fails
/// validation: a value out of its range (with the allowed range), an
/// unknown communication source or spread kind, a key its source or kind
/// does not take or lacks (`w_per_gpu`, `sigma_ms`, `width_ms`), a spread
/// or straggler delay longer than the iteration, more GPUs per node than
/// the job has, more stagger groups than nodes, a span shorter than two
/// iterations, a resolution coarser than a quarter iteration, more than
/// [`MAX_POINTS`](super::MAX_POINTS) points, a profile that is not a path-safe label, or a
/// `[supply]` or `[grid]` the campaign's checks refuse (a `[supply]` at
/// facility scale: watts up to [`FACILITY_SUPPLY_W_MAX`], excursions
/// within [`FACILITY_EXCURSION_MS_RANGE`]).
pub fn parse_schedule_str(file: &str, source: &str) -> Result<Schedule, CampaignError> {
    parse_schedule_with(file, source, &[])
}

/// Parses schedule text, replaces the keys `overrides` set (the command
/// line's flags), and validates the result; `file` names the text in
/// errors.
///
/// # Errors
///
/// Every error of [`parse_schedule_str`]. One at a key of the file is
/// located at that key's line and column in `source` as written; one at a
/// value a flag gave names the flag and its value in place of the file
/// (line and column 0: `the command line's --compute-fraction 1.5`); one
/// at a table only the flags made names the command line's flags.
pub fn parse_schedule_with(
    file: &str,
    source: &str,
    overrides: &[Override],
) -> Result<Schedule, CampaignError> {
    let ctx = Ctx { file, source };
    let raw: RawSchedule = toml::from_str(source).map_err(|e| toml_error(&ctx, &e))?;
    if overrides.is_empty() {
        return validate(&ctx, raw);
    }
    let trailer = Trailer::new(source, overrides);
    let raw = trailer.apply(raw, overrides);
    let ctx = Ctx {
        file,
        source: &trailer.text,
    };
    validate(&ctx, raw).map_err(|e| trailer.relocate(e))
}

/// The campaign's toml error, its key prefixed with the table it sits in
/// (`spread.width_mss`) and its hint pointing to the example schedule.
fn toml_error(ctx: &Ctx<'_>, e: &toml::de::Error) -> CampaignError {
    let mut err = crate::parse::toml_error(ctx, e);
    if let Some(key) = &err.field
        && !key.contains('.')
        && let Some(table) = table_above(ctx.source, err.line)
    {
        err.field = Some(format!("{table}.{key}"));
    }
    if err.allowed.is_some() {
        err.allowed = Some(KEYS_HINT.to_string());
    }
    err
}

/// The name of the `[table]` whose header is the nearest at or above
/// `line` (1-based), if any. A line of a multi-line array (`[20, 1e6],`)
/// is not a header: a header holds a bare name and nothing after it but a
/// comment.
fn table_above(source: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = source.lines().take(line).collect();
    lines.iter().rev().find_map(|l| {
        let rest = l.trim().strip_prefix('[')?;
        let (name, after) = rest.split_once(']')?;
        let name = name.trim();
        let bare = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        let after = after.trim();
        (bare && (after.is_empty() || after.starts_with('#'))).then(|| name.to_string())
    })
}

fn validate(ctx: &Ctx<'_>, raw: RawSchedule) -> Result<Schedule, CampaignError> {
    let Some(job_table) = raw.job else {
        return Err(ctx.err(
            0..0,
            "job",
            "the schedule has no [job] table",
            Some("a [job] table with gpus, iteration_ms and compute_fraction"),
        ));
    };
    let (job, iteration_span) = job(ctx, job_table)?;
    Ok(Schedule {
        communication: communication(ctx, raw.communication)?,
        spread: spread(ctx, raw.spread, job.iteration_ms)?,
        stragglers: raw
            .stragglers
            .map(|s| stragglers(ctx, s, job.iteration_ms))
            .transpose()?,
        mitigation: mitigation(ctx, raw.mitigation, &job)?,
        output: output(ctx, raw.output, job.iteration_ms, iteration_span)?,
        supply: raw
            .supply
            .map(|s| crate::parse::supply(ctx, s, FACILITY))
            .transpose()?,
        grid: raw.grid.map(|g| crate::parse::grid(ctx, g)).transpose()?,
        lifecycle: raw
            .lifecycle
            .map(|l| super::lifecycle::lifecycle(ctx, l, job.iteration_ms))
            .transpose()?,
        job,
    })
}

/// A whole number in `lo..=hi`, else an error with `allowed`.
fn whole(
    ctx: &Ctx<'_>,
    v: &Spanned<i64>,
    field: &str,
    (lo, hi): (i64, i64),
    allowed: &str,
) -> Result<u64, CampaignError> {
    let x = *v.get_ref();
    if (lo..=hi).contains(&x) && x >= 0 {
        return Ok(x as u64);
    }
    Err(ctx.err(
        v.span(),
        field,
        format!("must be a whole number from {lo} to {hi}, got {x}"),
        Some(allowed),
    ))
}

/// A number within `(0, iteration_ms]`; refused with the bound it
/// breaks: above the iteration, or not above 0 (`at_zero` says what to
/// write instead).
fn within_iteration(
    ctx: &Ctx<'_>,
    v: &Option<Spanned<f64>>,
    field: &str,
    iteration_ms: f64,
    at_zero: &str,
) -> Result<f64, CampaignError> {
    ctx.ranged(v, field, 0.0, (0.0, iteration_ms), true)
        .map_err(|mut e| {
            let x = v.as_ref().map_or(f64::NAN, |s| *s.get_ref());
            e.message.push_str(&if x > iteration_ms {
                format!(" (it may not exceed job.iteration_ms, {iteration_ms} ms)")
            } else if x.is_finite() {
                format!(" (it must be above 0; {at_zero})")
            } else {
                " (not a finite number)".to_string()
            });
            e
        })
}

/// `[job]`, and where its `iteration_ms` is written (what the output's
/// defaults are checked against when `[output]` does not set them).
fn job(ctx: &Ctx<'_>, j: Spanned<RawJob>) -> Result<(Job, Range<usize>), CampaignError> {
    let span = j.span();
    let j = j.into_inner();
    let name = match &j.name {
        None => DEFAULT_NAME.to_string(),
        Some(n) => job_name(ctx, n)?,
    };
    let gpus_allowed = format!("a whole number, 1..={MAX_JOB_GPUS}");
    let g = need(ctx, &j.gpus, span.clone(), "job.gpus", &gpus_allowed)?;
    let gpus = whole(ctx, g, "job.gpus", (1, MAX_JOB_GPUS as i64), &gpus_allowed)?;
    let per_node_max = gpus.min(MAX_GPUS_PER_NODE);
    let gpus_per_node = match &j.gpus_per_node {
        None => None,
        Some(v) => Some(whole(
            ctx,
            v,
            "job.gpus_per_node",
            (1, per_node_max as i64),
            &format!("1..={per_node_max} (at most job.gpus and {MAX_GPUS_PER_NODE})"),
        )? as u32),
    };
    let it = need(
        ctx,
        &j.iteration_ms,
        span.clone(),
        "job.iteration_ms",
        &format!(
            "{} <= iteration_ms <= {}",
            ITERATION_MS_RANGE.0, ITERATION_MS_RANGE.1
        ),
    )?
    .span();
    let iteration_ms = ctx.ranged(
        &j.iteration_ms,
        "job.iteration_ms",
        0.0,
        ITERATION_MS_RANGE,
        false,
    )?;
    let field = "job.compute_fraction";
    need(
        ctx,
        &j.compute_fraction,
        span,
        field,
        "0 < compute_fraction <= 1",
    )?;
    let compute_fraction = ctx.ranged(&j.compute_fraction, field, 0.0, (0.0, 1.0), true)?;
    let compute_w_per_gpu = match &j.compute_w_per_gpu {
        None => None,
        v => Some(ctx.ranged(v, "job.compute_w_per_gpu", 0.0, (0.0, 5_000.0), true)?),
    };
    let job = Job {
        name,
        gpus,
        gpus_per_node,
        iteration_ms,
        compute_fraction,
        compute_w_per_gpu,
    };
    Ok((job, it))
}

/// The job's name: a title, 1 to [`crate::names::MAX_NAME_CHARS`]
/// characters once trimmed, no control characters.
fn job_name(ctx: &Ctx<'_>, n: &Spanned<String>) -> Result<String, CampaignError> {
    let name = n.get_ref().trim();
    let max = crate::names::MAX_NAME_CHARS;
    let chars = name.chars().count();
    if chars == 0 || chars > max || name.chars().any(char::is_control) {
        return Err(ctx.err(
            n.span(),
            "job.name",
            format!("{name:?} cannot title a report"),
            Some(&format!("1 to {max} characters, no control characters")),
        ));
    }
    Ok(name.to_string())
}

/// `[communication]`: `source` off (the default), fabric or given, and
/// `w_per_gpu` with `given` only.
fn communication(
    ctx: &Ctx<'_>,
    c: Option<Spanned<RawCommunication>>,
) -> Result<Communication, CampaignError> {
    let Some(c) = c else {
        return Ok(Communication::Off);
    };
    let at = c.get_ref().source.as_ref().map_or(c.span(), |s| s.span());
    let c = c.into_inner();
    let source = c.source.as_ref().map_or("off", |s| s.get_ref().as_str());
    let field = "communication.w_per_gpu";
    let w_allowed = format!("0 < w_per_gpu <= {MAX_COMM_W_PER_GPU}, with source = \"given\" only");
    match source {
        "given" => {
            need(ctx, &c.w_per_gpu, at, field, &w_allowed)?;
            let range = (0.0, MAX_COMM_W_PER_GPU);
            Ok(Communication::Given {
                w_per_gpu: ctx.ranged(&c.w_per_gpu, field, 0.0, range, true)?,
            })
        }
        "off" | "fabric" => {
            let why = format!("a declared draw per GPU with source = \"{source}\"");
            refuse(ctx, &c.w_per_gpu, field, &why, &w_allowed)?;
            Ok(if source == "off" {
                Communication::Off
            } else {
                Communication::Fabric
            })
        }
        other => Err(ctx.err(
            at,
            "communication.source",
            format!("unknown communication source `{other}`"),
            Some("off, fabric, given"),
        )),
    }
}

/// `[spread]`: `kind` none (the default), measured, normal (with
/// `sigma_ms`) or uniform (with `width_ms`), each within the iteration.
fn spread(
    ctx: &Ctx<'_>,
    s: Option<Spanned<RawSpread>>,
    iteration_ms: f64,
) -> Result<Spread, CampaignError> {
    let Some(s) = s else {
        return Ok(Spread::None);
    };
    let at = s.get_ref().kind.as_ref().map_or(s.span(), |k| k.span());
    let s = s.into_inner();
    let kind = s.kind.as_ref().map_or("none", |k| k.get_ref().as_str());
    let (sigma, width) = ("spread.sigma_ms", "spread.width_ms");
    let sigma_allowed = "0 < sigma_ms <= job.iteration_ms, with kind = \"normal\" only";
    let width_allowed = "0 < width_ms <= job.iteration_ms, with kind = \"uniform\" only";
    let why = format!("not taken by kind = \"{kind}\"");
    match kind {
        "none" | "measured" | "normal" | "uniform" => {}
        other => {
            return Err(ctx.err(
                at,
                "spread.kind",
                format!("unknown spread kind `{other}`"),
                Some("none, measured, normal, uniform"),
            ));
        }
    }
    if kind != "normal" {
        refuse(ctx, &s.sigma_ms, sigma, &why, sigma_allowed)?;
    }
    if kind != "uniform" {
        refuse(ctx, &s.width_ms, width, &why, width_allowed)?;
    }
    Ok(match kind {
        "normal" => {
            need(ctx, &s.sigma_ms, at, sigma, sigma_allowed)?;
            Spread::Normal {
                sigma_ms: within_iteration(ctx, &s.sigma_ms, sigma, iteration_ms, NO_SPREAD)?,
            }
        }
        "uniform" => {
            need(ctx, &s.width_ms, at, width, width_allowed)?;
            Spread::Uniform {
                width_ms: within_iteration(ctx, &s.width_ms, width, iteration_ms, NO_SPREAD)?,
            }
        }
        "measured" => Spread::Measured,
        _ => Spread::None,
    })
}

/// `[stragglers]`: both keys required, `share` in `(0, 1]`, `delay_ms`
/// within the iteration.
fn stragglers(
    ctx: &Ctx<'_>,
    s: Spanned<RawStragglers>,
    iteration_ms: f64,
) -> Result<Stragglers, CampaignError> {
    let span = s.span();
    let s = s.into_inner();
    let (share, delay) = ("stragglers.share", "stragglers.delay_ms");
    need(ctx, &s.share, span.clone(), share, "0 < share <= 1")?;
    need(
        ctx,
        &s.delay_ms,
        span,
        delay,
        "0 < delay_ms <= job.iteration_ms",
    )?;
    Ok(Stragglers {
        share: ctx.ranged(&s.share, share, 0.0, (0.0, 1.0), true)?,
        delay_ms: within_iteration(
            ctx,
            &s.delay_ms,
            delay,
            iteration_ms,
            "for no stragglers leave [stragglers] out",
        )?,
    })
}

/// `[mitigation]`: a profile label (`plain`: none) and at most as many
/// stagger groups as nodes.
fn mitigation(
    ctx: &Ctx<'_>,
    m: Option<Spanned<RawMitigation>>,
    job: &Job,
) -> Result<MitigationChoice, CampaignError> {
    let Some(m) = m else {
        return Ok(MitigationChoice {
            profile: None,
            stagger_groups: 1,
        });
    };
    let m = m.into_inner();
    let profile = match &m.profile {
        None => None,
        Some(p) => profile(ctx, p)?,
    };
    let (nodes, what) = match job.gpus_per_node {
        Some(n) => (
            job.gpus.div_ceil(u64::from(n)),
            "the node count, ceil(job.gpus / job.gpus_per_node)",
        ),
        None => (job.gpus, "job.gpus"),
    };
    let stagger_groups = match &m.stagger_groups {
        None => 1,
        Some(v) => whole(
            ctx,
            v,
            "mitigation.stagger_groups",
            (1, nodes as i64),
            &format!("1..={nodes} ({what})"),
        )? as u32,
    };
    Ok(MitigationChoice {
        profile,
        stagger_groups,
    })
}

/// A profile label as a run names its rungs: path-safe
/// ([`crate::names::NAME_ALLOWED`]); `plain` is the plain wave (None).
fn profile(ctx: &Ctx<'_>, p: &Spanned<String>) -> Result<Option<String>, CampaignError> {
    let label = p.get_ref();
    if label == "plain" {
        return Ok(None);
    }
    if let Some(why) = crate::names::name_problem(label) {
        return Err(ctx.err(
            p.span(),
            "mitigation.profile",
            format!("not a profile label: {why}"),
            Some(crate::names::NAME_ALLOWED),
        ));
    }
    Ok(Some(label.clone()))
}
