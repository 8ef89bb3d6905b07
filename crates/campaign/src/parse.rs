//! TOML → validated [`Campaign`], with every error located in the file.

use crate::ctx::Ctx;
use crate::error::{CampaignError, line_col};
use crate::model::*;
use powerlab_core::Collective;
use powerlab_core::units::ns_to_s;
use serde::Deserialize;
use std::ops::Range;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    campaign: Spanned<RawHeader>,
    sampling: Option<RawSampling>,
    limits: Option<RawLimits>,
    defaults: Option<RawDefaults>,
    rack: Option<RawRack>,
    #[serde(default)]
    phase: Vec<Spanned<RawPhase>>,
    #[serde(default)]
    node_power: Vec<Spanned<crate::node_power::RawNodePower>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHeader {
    name: Spanned<String>,
    description: Option<String>,
    gpus: Option<Spanned<toml::Value>>,
    nccl_first: Option<bool>,
    confirm_node_swing: Option<bool>,
    calibrate: Option<bool>,
    ramp_up: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSampling {
    poll_interval_ms: Option<Spanned<f64>>,
    buffer_interval_ms: Option<Spanned<f64>>,
    field_interval_ms: Option<Spanned<f64>>,
    status_interval_ms: Option<Spanned<f64>>,
    flush_interval_ms: Option<Spanned<f64>>,
    grid_ms: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    max_gpu_temp_c: Option<Spanned<f64>>,
    max_memory_temp_c: Option<Spanned<f64>>,
    max_node_power_w: Option<Spanned<f64>>,
    abort_on_hw_slowdown: Option<bool>,
    barrier_tolerance_ms: Option<Spanned<f64>>,
    edge_p99_us: Option<Spanned<f64>>,
    edge_max_us: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRack {
    stagger: Option<Spanned<String>>,
    clock_tolerance_ms: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDefaults {
    repeats: Option<Spanned<i64>>,
    warmup_s: Option<Spanned<f64>>,
    cooldown_s: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPhase {
    kind: Spanned<String>,
    name: Option<Spanned<String>>,
    duration_s: Option<Spanned<f64>>,
    warmup_s: Option<Spanned<f64>>,
    cooldown_s: Option<Spanned<f64>>,
    repeats: Option<Spanned<i64>>,
    period_ms: Option<Spanned<f64>>,
    periods_ms: Option<Spanned<Vec<f64>>>,
    duty: Option<Spanned<f64>>,
    ramp_s: Option<Spanned<f64>>,
    exact_period: Option<Spanned<bool>>,
    mode: Option<Spanned<String>>,
    modes: Option<Spanned<Vec<String>>>,
    stagger_step_deg: Option<Spanned<f64>>,
    offsets_deg: Option<Spanned<Vec<f64>>>,
    offsets_ms: Option<Spanned<Vec<f64>>>,
    collectives: Option<Spanned<Vec<String>>>,
    min_bytes: Option<Spanned<i64>>,
    max_bytes: Option<Spanned<i64>>,
    step_factor: Option<Spanned<i64>>,
    iterations: Option<Spanned<i64>>,
    bsp_compute_ms: Option<Spanned<f64>>,
    warmup_iters: Option<Spanned<i64>>,
    sweep_s: Option<Spanned<f64>>,
    fabric_bytes: Option<Spanned<i64>>,
    timeout_s: Option<Spanned<f64>>,
}

/// Shortest rung, s (one 20 ms sampling period would not fit a shorter one).
pub const MIN_DURATION_S: f64 = 0.05;
/// Longest rung, s: one week.
pub const MAX_DURATION_S: f64 = 604_800.0;
/// Longest warm-up or cool-down, s.
pub const MAX_WARMUP_S: f64 = 3_600.0;
pub use crate::model::MAX_REPEATS;
/// The temperature limits a campaign may set, °C: below 50 an idle GPU
/// would trip them, above 110 they would not protect anything.
pub const TEMP_LIMIT_RANGE_C: (f64, f64) = (50.0, 110.0);
/// Most periods in one duty phase.
pub const MAX_PERIODS: usize = 1_000;

const PHASE_KINDS: &str = "idle, sustained, duty, nccl, soak";
const MODES: &str = "in_phase, staggered";

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

fn toml_error(ctx: &Ctx<'_>, e: &toml::de::Error) -> CampaignError {
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
    let name = header.name.get_ref().trim().to_string();
    if let Some(why) = crate::names::name_problem(&name) {
        return Err(ctx.err(
            header.name.span(),
            "campaign.name",
            format!("cannot name a run directory: {why}"),
            Some(crate::names::NAME_ALLOWED),
        ));
    }
    let gpus = match &header.gpus {
        None => GpuSelector::All,
        Some(v) => parse_gpus(ctx, v)?,
    };

    let s = raw.sampling.unwrap_or(RawSampling {
        poll_interval_ms: None,
        buffer_interval_ms: None,
        field_interval_ms: None,
        status_interval_ms: None,
        flush_interval_ms: None,
        grid_ms: None,
    });
    let d = Sampling::default();
    if let Some(p) = &s.poll_interval_ms
        && *p.get_ref() > 1000.0
    {
        return Err(ctx.err(p.span(), "sampling.poll_interval_ms", "the interlocks and the instant field are read at this period; slower than 1 s leaves the node unwatched", Some("0 < poll_interval_ms <= 1000")));
    }
    if let Some(b) = &s.buffer_interval_ms
        && *b.get_ref() > 1000.0
    {
        return Err(ctx.err(b.span(), "sampling.buffer_interval_ms", "the driver buffer holds ~2.4 s of samples; draining it less often than every second risks losing some", Some("0 < buffer_interval_ms <= 1000")));
    }
    if let Some(f) = &s.flush_interval_ms
        && *f.get_ref() > 1000.0
    {
        return Err(ctx.err(
            f.span(),
            "sampling.flush_interval_ms",
            "raw samples must reach disk at least every second",
            Some("0 < flush_interval_ms <= 1000"),
        ));
    }

    let sampling = Sampling {
        poll_interval_ms: ctx.ranged(
            &s.poll_interval_ms,
            "sampling.poll_interval_ms",
            d.poll_interval_ms,
            (1.0, 1000.0),
            false,
        )?,
        buffer_interval_ms: ctx.ranged(
            &s.buffer_interval_ms,
            "sampling.buffer_interval_ms",
            d.buffer_interval_ms,
            (1.0, 1000.0),
            false,
        )?,
        field_interval_ms: ctx.ranged(
            &s.field_interval_ms,
            "sampling.field_interval_ms",
            d.field_interval_ms,
            (1.0, 1000.0),
            false,
        )?,
        status_interval_ms: ctx.ranged(
            &s.status_interval_ms,
            "sampling.status_interval_ms",
            d.status_interval_ms,
            (1.0, 1000.0),
            false,
        )?,
        flush_interval_ms: ctx.ranged(
            &s.flush_interval_ms,
            "sampling.flush_interval_ms",
            d.flush_interval_ms,
            (1.0, 1000.0),
            false,
        )?,
        grid_ms: ctx.ranged(
            &s.grid_ms,
            "sampling.grid_ms",
            d.grid_ms,
            (1.0, 1000.0),
            false,
        )?,
    };
    let l = raw.limits.unwrap_or(RawLimits {
        max_gpu_temp_c: None,
        max_memory_temp_c: None,
        max_node_power_w: None,
        abort_on_hw_slowdown: None,
        barrier_tolerance_ms: None,
        edge_p99_us: None,
        edge_max_us: None,
    });
    let dl = Limits::default();
    let limits = Limits {
        max_gpu_temp_c: ctx.ranged(
            &l.max_gpu_temp_c,
            "limits.max_gpu_temp_c",
            dl.max_gpu_temp_c,
            TEMP_LIMIT_RANGE_C,
            false,
        )?,
        max_memory_temp_c: ctx.ranged(
            &l.max_memory_temp_c,
            "limits.max_memory_temp_c",
            dl.max_memory_temp_c,
            TEMP_LIMIT_RANGE_C,
            false,
        )?,
        max_node_power_w: match &l.max_node_power_w {
            None => None,
            v => Some(ctx.ranged(v, "limits.max_node_power_w", 0.0, (1.0, 1.0e6), false)?),
        },
        abort_on_hw_slowdown: l.abort_on_hw_slowdown.unwrap_or(dl.abort_on_hw_slowdown),
        barrier_tolerance_ms: ctx.ranged(
            &l.barrier_tolerance_ms,
            "limits.barrier_tolerance_ms",
            dl.barrier_tolerance_ms,
            (0.001, 10_000.0),
            false,
        )?,
        edge_p99_us: ctx.ranged(
            &l.edge_p99_us,
            "limits.edge_p99_us",
            dl.edge_p99_us,
            (0.1, 1.0e6),
            false,
        )?,
        edge_max_us: ctx.ranged(
            &l.edge_max_us,
            "limits.edge_max_us",
            dl.edge_max_us,
            (0.1, 1.0e6),
            false,
        )?,
    };

    if limits.edge_max_us < limits.edge_p99_us {
        let span = l
            .edge_max_us
            .as_ref()
            .or(l.edge_p99_us.as_ref())
            .map(|v| v.span())
            .unwrap_or(0..0);
        return Err(ctx.err(
            span,
            "limits.edge_max_us",
            format!(
                "the largest edge error allowed ({} µs) is below the p99 allowed ({} µs)",
                limits.edge_max_us, limits.edge_p99_us
            ),
            Some("edge_max_us >= edge_p99_us"),
        ));
    }

    let rack = match raw.rack {
        None => Rack::default(),
        Some(r) => Rack {
            stagger: match &r.stagger {
                None => Rack::default().stagger,
                Some(v) => match v.get_ref().as_str() {
                    "gpu" => RackStagger::Gpu,
                    "node" => RackStagger::Node,
                    other => {
                        return Err(ctx.err(
                            v.span(),
                            "rack.stagger",
                            format!("unknown rack stagger `{other}`"),
                            Some("gpu, node"),
                        ));
                    }
                },
            },
            clock_tolerance_ms: ctx.ranged(
                &r.clock_tolerance_ms,
                "rack.clock_tolerance_ms",
                Rack::default().clock_tolerance_ms,
                (0.001, 10_000.0),
                false,
            )?,
        },
    };

    let defaults = raw.defaults.unwrap_or(RawDefaults {
        repeats: None,
        warmup_s: None,
        cooldown_s: None,
    });
    let default_repeats =
        ctx.count(&defaults.repeats, "defaults.repeats", 1, MAX_REPEATS as i64)?;
    let default_warmup =
        ctx.non_negative(&defaults.warmup_s, "defaults.warmup_s", 2.0, MAX_WARMUP_S)?;
    let default_cooldown = ctx.non_negative(
        &defaults.cooldown_s,
        "defaults.cooldown_s",
        2.0,
        MAX_WARMUP_S,
    )?;

    if raw.phase.is_empty() && header.calibrate != Some(true) {
        return Err(ctx.err(
            header_span,
            "phase",
            "the campaign declares no phases",
            Some("one or more [[phase]] tables, or calibrate = true in [campaign]"),
        ));
    }
    let defaults = PhaseDefaults {
        repeats: default_repeats,
        warmup_s: default_warmup,
        cooldown_s: default_cooldown,
        listed_gpus: match &gpus {
            GpuSelector::List(l) => Some(l.len()),
            GpuSelector::All => None,
        },
        rack_stagger: rack.stagger,
    };
    let mut phases: Vec<Phase> = Vec::new();
    for (i, p) in raw.phase.into_iter().enumerate() {
        // Where the name is written, else the phase's table.
        let name_span = p
            .get_ref()
            .name
            .as_ref()
            .map_or_else(|| p.span(), |n| n.span());
        let phase = validate_phase(ctx, i, p, &defaults)?;
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
    };
    let rungs = crate::plan::estimated_rungs(&campaign, None);
    if rungs > crate::plan::MAX_RUNGS as u64 {
        return Err(ctx.err(
            header_span.clone(),
            "phase",
            format!(
                "the campaign expands into {rungs} rungs (every phase × its repeats, periods, modes and NCCL steps), more than {}",
                crate::plan::MAX_RUNGS
            ),
            Some(&format!(
                "at most {} rungs (fewer repeats, periods or modes)",
                crate::plan::MAX_RUNGS
            )),
        ));
    }
    // Before any schedule is expanded: a campaign that cannot end within a
    // year is refused here, at once, whatever the GPU count.
    let total_s = crate::plan::estimated_total_s(&campaign, None);
    if total_s > ns_to_s(crate::plan::MAX_PLAN_NS) {
        return Err(ctx.err(
            header_span.clone(),
            "phase",
            format!(
                "the campaign would run {:.0} days (every phase × its repeats, periods and modes)",
                total_s / 86_400.0
            ),
            Some("a total under 366 days (fewer repeats or shorter phases)"),
        ));
    }
    Ok(campaign)
}

fn parse_gpus(ctx: &Ctx<'_>, v: &Spanned<toml::Value>) -> Result<GpuSelector, CampaignError> {
    let allowed =
        Some("\"all\", or a list of visible indices and/or UUIDs like [0, 1] or [\"GPU-…\"]");
    match v.get_ref() {
        toml::Value::String(s) if s == "all" => Ok(GpuSelector::All),
        toml::Value::Array(items) if items.len() > crate::plan::MAX_GPUS => Err(ctx.err(
            v.span(),
            "campaign.gpus",
            format!(
                "{} GPUs listed, more than one node has ({})",
                items.len(),
                crate::plan::MAX_GPUS
            ),
            allowed,
        )),
        toml::Value::Array(items) if !items.is_empty() => {
            let mut out = Vec::new();
            for item in items {
                match item {
                    toml::Value::Integer(i) if *i >= 0 && *i < 1024 => {
                        out.push(GpuRef::Index(*i as u32))
                    }
                    toml::Value::String(s) if s.starts_with("GPU-") || s.starts_with("MIG-") => {
                        out.push(GpuRef::Uuid(s.clone()))
                    }
                    other => {
                        return Err(ctx.err(
                            v.span(),
                            "campaign.gpus",
                            format!("`{other}` is neither a GPU index nor a UUID"),
                            allowed,
                        ));
                    }
                }
            }
            let mut seen = std::collections::HashSet::new();
            if let Some(dup) = out.iter().find(|r| !seen.insert((*r).clone())) {
                return Err(ctx.err(
                    v.span(),
                    "campaign.gpus",
                    format!("{dup:?} is listed twice"),
                    allowed,
                ));
            }
            Ok(GpuSelector::List(out))
        }
        other => Err(ctx.err(
            v.span(),
            "campaign.gpus",
            format!("`{other}` does not select GPUs"),
            allowed,
        )),
    }
}

/// What a phase takes from the rest of the file.
struct PhaseDefaults {
    repeats: u32,
    warmup_s: f64,
    cooldown_s: f64,
    /// How many GPUs `gpus` lists, when it lists them.
    listed_gpus: Option<usize>,
    rack_stagger: RackStagger,
}

fn validate_phase(
    ctx: &Ctx<'_>,
    index: usize,
    spanned: Spanned<RawPhase>,
    defaults: &PhaseDefaults,
) -> Result<Phase, CampaignError> {
    let (default_repeats, default_warmup, default_cooldown) =
        (defaults.repeats, defaults.warmup_s, defaults.cooldown_s);
    let phase_span = spanned.span();
    let p = spanned.into_inner();
    let f = |name: &str| format!("phase[{index}].{name}");
    let kind = match p.kind.get_ref().as_str() {
        "idle" => PhaseKind::Idle,
        "sustained" => PhaseKind::Sustained,
        "duty" => PhaseKind::Duty,
        "nccl" => PhaseKind::Nccl,
        "soak" => PhaseKind::Soak,
        other => {
            return Err(ctx.err(
                p.kind.span(),
                f("kind"),
                format!("unknown phase kind `{other}`"),
                Some(PHASE_KINDS),
            ));
        }
    };

    // Which keys each kind accepts; anything else present is an error.
    let common: &[&str] = &["kind", "name", "duration_s", "repeats", "cooldown_s"];
    let extra: &[&str] = match kind {
        PhaseKind::Idle => &["warmup_s"],
        PhaseKind::Sustained => &["warmup_s", "mode"],
        // Never parsed (the planner's own steps); listed for the match.
        PhaseKind::Soak | PhaseKind::RampUp => &["warmup_s"],
        PhaseKind::Duty => &[
            "warmup_s",
            "period_ms",
            "periods_ms",
            "duty",
            "ramp_s",
            "exact_period",
            "mode",
            "modes",
            "stagger_step_deg",
            "offsets_deg",
            "offsets_ms",
        ],
        PhaseKind::Nccl => &[
            "warmup_s",
            "collectives",
            "min_bytes",
            "max_bytes",
            "step_factor",
            "iterations",
            "warmup_iters",
            "sweep_s",
            "fabric_bytes",
            "timeout_s",
            "bsp_compute_ms",
        ],
    };
    let present: Vec<(&str, Range<usize>)> = [
        ("warmup_s", p.warmup_s.as_ref().map(|s| s.span())),
        ("period_ms", p.period_ms.as_ref().map(|s| s.span())),
        ("periods_ms", p.periods_ms.as_ref().map(|s| s.span())),
        ("duty", p.duty.as_ref().map(|s| s.span())),
        ("ramp_s", p.ramp_s.as_ref().map(|s| s.span())),
        ("exact_period", p.exact_period.as_ref().map(|s| s.span())),
        ("mode", p.mode.as_ref().map(|s| s.span())),
        ("modes", p.modes.as_ref().map(|s| s.span())),
        (
            "stagger_step_deg",
            p.stagger_step_deg.as_ref().map(|s| s.span()),
        ),
        ("offsets_deg", p.offsets_deg.as_ref().map(|s| s.span())),
        ("offsets_ms", p.offsets_ms.as_ref().map(|s| s.span())),
        ("collectives", p.collectives.as_ref().map(|s| s.span())),
        ("min_bytes", p.min_bytes.as_ref().map(|s| s.span())),
        ("max_bytes", p.max_bytes.as_ref().map(|s| s.span())),
        ("step_factor", p.step_factor.as_ref().map(|s| s.span())),
        ("iterations", p.iterations.as_ref().map(|s| s.span())),
        (
            "bsp_compute_ms",
            p.bsp_compute_ms.as_ref().map(|s| s.span()),
        ),
        ("warmup_iters", p.warmup_iters.as_ref().map(|s| s.span())),
        ("sweep_s", p.sweep_s.as_ref().map(|s| s.span())),
        ("fabric_bytes", p.fabric_bytes.as_ref().map(|s| s.span())),
        ("timeout_s", p.timeout_s.as_ref().map(|s| s.span())),
    ]
    .into_iter()
    .filter_map(|(k, s)| s.map(|s| (k, s)))
    .collect();
    for (key, span) in &present {
        if !common.contains(key) && !extra.contains(key) {
            let allowed: Vec<&str> = common.iter().chain(extra.iter()).copied().collect();
            return Err(ctx.err(
                span.clone(),
                f(key),
                format!("`{key}` is not allowed in a `{}` phase", kind.as_str()),
                Some(&allowed.join(", ")),
            ));
        }
    }

    let name = match &p.name {
        Some(n) if !n.get_ref().trim().is_empty() => n.get_ref().trim().to_string(),
        Some(n) => {
            return Err(ctx.err(n.span(), f("name"), "a phase name must not be empty", None));
        }
        None => format!("{}-{}", kind.as_str(), index),
    };
    if let Some(n) = &p.name {
        if let Some(why) = crate::names::name_problem(&name) {
            return Err(ctx.err(
                n.span(),
                f("name"),
                format!("cannot name a phase: {why}"),
                Some(crate::names::NAME_ALLOWED),
            ));
        }
        if let Some(why) = crate::names::reserved_problem(&name, kind) {
            return Err(ctx.err(
                n.span(),
                f("name"),
                format!("cannot name a phase: {why}"),
                Some("another name"),
            ));
        }
    }
    let duration_s = match &p.duration_s {
        Some(_) => ctx.ranged(
            &p.duration_s,
            &f("duration_s"),
            0.0,
            (MIN_DURATION_S, MAX_DURATION_S),
            false,
        )?,
        None => {
            return Err(ctx.err(
                phase_span,
                f("duration_s"),
                "every phase needs a duration",
                Some("duration_s = seconds > 0"),
            ));
        }
    };
    let repeats = ctx.count(
        &p.repeats,
        &f("repeats"),
        if kind == PhaseKind::Soak {
            1
        } else {
            default_repeats
        },
        MAX_REPEATS as i64,
    )?;
    if kind == PhaseKind::Soak && repeats != 1 {
        let span = p
            .repeats
            .as_ref()
            .map(|s| s.span())
            .unwrap_or(phase_span.clone());
        return Err(ctx.err(span, f("repeats"), "a soak runs once", Some("1")));
    }
    let warmup_s = ctx.non_negative(&p.warmup_s, &f("warmup_s"), default_warmup, MAX_WARMUP_S)?;
    let cooldown_s = ctx.non_negative(
        &p.cooldown_s,
        &f("cooldown_s"),
        default_cooldown,
        MAX_WARMUP_S,
    )?;
    let ramp_s = ctx.non_negative(&p.ramp_s, &f("ramp_s"), 0.0, MAX_DURATION_S)?;

    let mut periods_ms = Vec::new();
    let mut duty = 1.0;
    let mut modes = vec![Mode::InPhase];
    let mut stagger = Stagger::Even;
    let mut nccl = None;

    if let Some(m) = &p.mode {
        let mode = parse_mode(ctx, m.get_ref(), m.span(), &f("mode"))?;
        if mode == Mode::Staggered && kind != PhaseKind::Duty {
            return Err(ctx.err(
                m.span(),
                f("mode"),
                "only duty phases can be staggered: constant load has no phase to shift",
                Some("in_phase"),
            ));
        }
        modes = vec![mode];
    }

    if kind == PhaseKind::Duty {
        match (&p.period_ms, &p.periods_ms) {
            (Some(_), Some(b)) => {
                return Err(ctx.err(
                    b.span(),
                    f("periods_ms"),
                    "give `period_ms` or `periods_ms`, not both",
                    None,
                ));
            }
            (Some(a), None) => periods_ms.push(
                ctx.positive(&p.period_ms, &f("period_ms"), 0.0, f64::MAX)
                    .map_err(|e| e.clone())
                    .and_then(|v| check_period(ctx, v, a.span(), &f("period_ms")))?,
            ),
            (None, Some(list)) => {
                if list.get_ref().is_empty() {
                    return Err(ctx.err(
                        list.span(),
                        f("periods_ms"),
                        "the sweep lists no periods",
                        Some("one or more periods in ms"),
                    ));
                }
                if list.get_ref().len() > MAX_PERIODS {
                    return Err(ctx.err(
                        list.span(),
                        f("periods_ms"),
                        format!(
                            "the sweep lists {} periods, more than {MAX_PERIODS}",
                            list.get_ref().len()
                        ),
                        Some(&format!("1 to {MAX_PERIODS} periods per phase")),
                    ));
                }
                for v in list.get_ref() {
                    let p = check_period(ctx, *v, list.span(), &f("periods_ms"))?;
                    if periods_ms.contains(&p) {
                        return Err(ctx.err(
                            list.span(),
                            f("periods_ms"),
                            format!("{p} ms is listed twice (repeats = N runs a period again)"),
                            Some("distinct periods"),
                        ));
                    }
                    periods_ms.push(p);
                }
            }
            (None, None) => {
                return Err(ctx.err(
                    phase_span.clone(),
                    f("period_ms"),
                    "a duty phase needs a period",
                    Some("period_ms = 500 or periods_ms = [2000, 500, 100]"),
                ));
            }
        }
        duty = match &p.duty {
            None => 0.5,
            Some(d) => check_duty(ctx, *d.get_ref(), &periods_ms, d.span(), &f("duty"))?,
        };
        if let (Some(_), Some(ms)) = (&p.mode, &p.modes) {
            return Err(ctx.err(
                ms.span(),
                f("modes"),
                "give `mode` or `modes`, not both",
                None,
            ));
        }
        if let Some(ms) = &p.modes {
            let mut parsed = Vec::new();
            for m in ms.get_ref() {
                let mode = parse_mode(ctx, m, ms.span(), &f("modes"))?;
                if parsed.contains(&mode) {
                    return Err(ctx.err(
                        ms.span(),
                        f("modes"),
                        format!("`{m}` is listed twice"),
                        Some(MODES),
                    ));
                }
                parsed.push(mode);
            }
            if parsed.is_empty() {
                return Err(ctx.err(ms.span(), f("modes"), "no modes listed", Some(MODES)));
            }
            modes = parsed;
        }
        let given: Vec<(&str, Range<usize>)> = [
            (
                "stagger_step_deg",
                p.stagger_step_deg.as_ref().map(|s| s.span()),
            ),
            ("offsets_deg", p.offsets_deg.as_ref().map(|s| s.span())),
            ("offsets_ms", p.offsets_ms.as_ref().map(|s| s.span())),
        ]
        .into_iter()
        .filter_map(|(k, s)| s.map(|s| (k, s)))
        .collect();
        if given.len() > 1 {
            return Err(ctx.err(
                given[1].1.clone(),
                f(given[1].0),
                "give one of stagger_step_deg, offsets_deg, offsets_ms",
                None,
            ));
        }
        if let Some((key, span)) = given.first()
            && !modes.contains(&Mode::Staggered)
        {
            return Err(ctx.err(
                span.clone(),
                f(key),
                "stagger offsets are given but no staggered mode is run",
                Some("mode = \"staggered\" or modes = [\"in_phase\", \"staggered\"]"),
            ));
        }
        for (key, list) in [
            ("offsets_deg", &p.offsets_deg),
            ("offsets_ms", &p.offsets_ms),
        ] {
            if let Some(list) = list {
                check_offset_count(ctx, list, defaults, &f(key))?;
            }
        }
        if let Some(s) = &p.stagger_step_deg {
            let v = *s.get_ref();
            if !(v > 0.0 && v < 360.0) {
                return Err(ctx.err(
                    s.span(),
                    f("stagger_step_deg"),
                    format!("{v} is not a step between GPUs"),
                    Some("0 < degrees < 360"),
                ));
            }
            stagger = Stagger::StepDeg(v);
        }
        if let Some(s) = &p.offsets_deg {
            if s.get_ref().iter().any(|v| !(0.0..360.0).contains(v)) {
                return Err(ctx.err(
                    s.span(),
                    f("offsets_deg"),
                    "offsets must lie in one period",
                    Some("0 <= degrees < 360"),
                ));
            }
            stagger = Stagger::OffsetsDeg(s.get_ref().clone());
        }
        if let Some(s) = &p.offsets_ms {
            if s.get_ref().iter().any(|v| !(v.is_finite() && *v >= 0.0)) {
                return Err(ctx.err(
                    s.span(),
                    f("offsets_ms"),
                    "offsets must be non-negative milliseconds",
                    Some("ms >= 0"),
                ));
            }
            let min_period = periods_ms.iter().cloned().fold(f64::INFINITY, f64::min);
            if s.get_ref().iter().any(|v| *v >= min_period) {
                return Err(ctx.err(
                    s.span(),
                    f("offsets_ms"),
                    format!("an offset is not shorter than the shortest period ({min_period} ms)"),
                    Some("0 <= ms < period"),
                ));
            }
            stagger = Stagger::OffsetsMs(s.get_ref().clone());
        }
        if ramp_s >= duration_s {
            let span = p
                .ramp_s
                .as_ref()
                .map(|s| s.span())
                .unwrap_or(phase_span.clone());
            return Err(ctx.err(
                span,
                f("ramp_s"),
                "the ramp must be shorter than the rung",
                Some("ramp_s < duration_s"),
            ));
        }
    }

    if kind == PhaseKind::Nccl {
        let collectives = match &p.collectives {
            None => Collective::ALL.to_vec(),
            Some(c) => parse_collectives(ctx, c, &f("collectives"))?,
        };
        let bytes =
            |v: &Option<Spanned<i64>>, key: &str, default: u64| -> Result<u64, CampaignError> {
                match v {
                    None => Ok(default),
                    Some(s) if *s.get_ref() >= 1 && *s.get_ref() <= (1i64 << 36) => {
                        Ok(*s.get_ref() as u64)
                    }
                    Some(s) => Err(ctx.err(
                        s.span(),
                        f(key),
                        format!("{} bytes is out of range", s.get_ref()),
                        Some("1 ..= 64 GiB"),
                    )),
                }
            };
        let min_bytes = bytes(&p.min_bytes, "min_bytes", 8)?;
        let max_bytes = bytes(&p.max_bytes, "max_bytes", 4 << 30)?;
        if min_bytes > max_bytes {
            let span = p
                .min_bytes
                .as_ref()
                .map(|s| s.span())
                .unwrap_or(phase_span.clone());
            return Err(ctx.err(span, f("min_bytes"), "min_bytes exceeds max_bytes", None));
        }
        let step_factor = match &p.step_factor {
            None => 2,
            Some(s) if [2, 4, 8].contains(s.get_ref()) => *s.get_ref() as u64,
            Some(s) => {
                return Err(ctx.err(
                    s.span(),
                    f("step_factor"),
                    format!("{} is not a sweep step", s.get_ref()),
                    Some("2, 4 or 8"),
                ));
            }
        };
        let iterations = ctx.count(&p.iterations, &f("iterations"), 20, 100_000)?;
        let bsp_compute_ms = match &p.bsp_compute_ms {
            None => None,
            v => Some(ctx.ranged(v, &f("bsp_compute_ms"), 0.0, (0.01, 600_000.0), false)?),
        };
        let warmup_iters = ctx.count(&p.warmup_iters, &f("warmup_iters"), 5, 10_000)?;
        let sweep_s = ctx.ranged(&p.sweep_s, &f("sweep_s"), 60.0, (0.1, 86_400.0), false)?;
        let fabric_bytes = bytes(&p.fabric_bytes, "fabric_bytes", 1 << 30)?;
        let timeout_s = ctx.ranged(&p.timeout_s, &f("timeout_s"), 60.0, (0.1, 86_400.0), false)?;
        nccl = Some(NcclSpec {
            collectives,
            min_bytes,
            max_bytes,
            step_factor,
            iterations,
            warmup_iters,
            sweep_s,
            fabric_bytes,
            timeout_s,
            bsp_compute_ms,
        });
    }

    let exact_period = p.exact_period.as_ref().is_some_and(|e| *e.get_ref());
    Ok(Phase {
        name,
        kind,
        duration_s,
        warmup_s,
        cooldown_s,
        repeats,
        periods_ms,
        duty,
        ramp_s,
        exact_period,
        modes,
        stagger,
        nccl,
    })
}

/// An explicit offset list beside an explicit GPU list: one offset per
/// listed GPU (per GPU of the rack: a whole multiple of the list), unless
/// the rack spreads whole nodes (one offset per node, any count).
fn check_offset_count(
    ctx: &Ctx<'_>,
    list: &Spanned<Vec<f64>>,
    defaults: &PhaseDefaults,
    field: &str,
) -> Result<(), CampaignError> {
    let (Some(n), RackStagger::Gpu) = (defaults.listed_gpus, defaults.rack_stagger) else {
        return Ok(());
    };
    let given = list.get_ref().len();
    if given == 0 || !given.is_multiple_of(n) {
        return Err(ctx.err(
            list.span(),
            field,
            format!("{given} offsets are given for the {n} GPUs listed in `gpus`"),
            Some(&format!(
                "one offset per listed GPU ({n}; on a rack, {n} per node)"
            )),
        ));
    }
    Ok(())
}

/// Least duty of a square wave (and least off fraction: 1 − duty), so
/// that each half of the cycle holds samples to fold.
pub const MIN_DUTY: f64 = 0.01;
/// Shortest on or off part of a cycle, ms: the engine switches its load a
/// kernel at a time, and a shorter pulse is not one it can hold.
pub const MIN_PULSE_MS: f64 = 0.5;

/// A duty of 1 (constant load), or one whose on and off parts are each at
/// least [`MIN_DUTY`] of the period and [`MIN_PULSE_MS`] long at every
/// period of the phase.
fn check_duty(
    ctx: &Ctx<'_>,
    d: f64,
    periods_ms: &[f64],
    span: Range<usize>,
    field: &str,
) -> Result<f64, CampaignError> {
    let allowed = format!(
        "duty = 1 (constant load), or {MIN_DUTY} <= duty <= {} with on and off parts each at least {MIN_PULSE_MS} ms",
        1.0 - MIN_DUTY
    );
    if d == 1.0 {
        return Ok(d);
    }
    if !(d.is_finite() && (MIN_DUTY..=1.0 - MIN_DUTY).contains(&d)) {
        return Err(ctx.err(
            span,
            field,
            format!("duty {d} leaves no on or no off part worth sampling"),
            Some(&allowed),
        ));
    }
    let shortest = periods_ms.iter().copied().fold(f64::INFINITY, f64::min);
    let pulse = shortest * d.min(1.0 - d);
    if pulse < MIN_PULSE_MS {
        return Err(ctx.err(
            span,
            field,
            format!("duty {d} at {shortest} ms leaves a {pulse} ms part of the cycle"),
            Some(&allowed),
        ));
    }
    Ok(d)
}

/// One or more known collectives, each listed once.
fn parse_collectives(
    ctx: &Ctx<'_>,
    c: &Spanned<Vec<String>>,
    field: &str,
) -> Result<Vec<Collective>, CampaignError> {
    let names: Vec<&str> = Collective::ALL.iter().map(|c| c.as_str()).collect();
    let allowed = format!("one or more of {}, each once", names.join(", "));
    let mut out = Vec::new();
    for name in c.get_ref() {
        let Some(one) = Collective::parse(name) else {
            return Err(ctx.err(
                c.span(),
                field,
                format!("unknown collective `{name}`"),
                Some(&allowed),
            ));
        };
        if out.contains(&one) {
            return Err(ctx.err(
                c.span(),
                field,
                format!("`{name}` is listed twice"),
                Some(&allowed),
            ));
        }
        out.push(one);
    }
    if out.is_empty() {
        return Err(ctx.err(
            c.span(),
            field,
            "no collectives listed: the sweep would measure nothing",
            Some(&allowed),
        ));
    }
    Ok(out)
}

fn check_period(
    ctx: &Ctx<'_>,
    v: f64,
    span: Range<usize>,
    field: &str,
) -> Result<f64, CampaignError> {
    if v.is_finite() && (1.0..=600_000.0).contains(&v) {
        Ok(v)
    } else {
        Err(ctx.err(
            span,
            field,
            format!("period {v} ms is out of range"),
            Some("1 ms ..= 600000 ms"),
        ))
    }
}

fn parse_mode(
    ctx: &Ctx<'_>,
    s: &str,
    span: Range<usize>,
    field: &str,
) -> Result<Mode, CampaignError> {
    match s {
        "in_phase" => Ok(Mode::InPhase),
        "staggered" => Ok(Mode::Staggered),
        other => Err(ctx.err(span, field, format!("unknown mode `{other}`"), Some(MODES))),
    }
}
