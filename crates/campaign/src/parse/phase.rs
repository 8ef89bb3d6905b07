//! One `[[phase]]` table → a validated [`Phase`]: its kind from
//! [`table::KINDS`], the keys that kind accepts, the keys every phase has,
//! then the duty or NCCL part.

use super::phase_ctx::{PhaseCtx, PhaseDefaults, parse_mode};
use super::raw::RawPhase;
use super::table::{self, KindSpec};
use super::{duty, nccl, smoothing, workload};
use crate::ctx::Ctx;
use crate::error::CampaignError;
use crate::model::{Mode, PeriodMs, Phase, PhaseKind, Stagger};
use std::ops::Range;
use toml::Spanned;

/// Validates phase `index` of the file.
pub(super) fn validate_phase(
    ctx: &Ctx<'_>,
    index: usize,
    spanned: Spanned<RawPhase>,
    defaults: &PhaseDefaults,
) -> Result<Phase, CampaignError> {
    let span = spanned.span();
    let p = spanned.into_inner();
    let pc = PhaseCtx {
        p: &p,
        index,
        span,
        defaults,
    };
    let spec = kind_spec(ctx, &pc)?;
    check_keys(ctx, &pc, spec)?;
    let kind = spec.kind;
    let name = phase_name(ctx, &pc, kind)?;
    let (duration_s, repeats) = duration_and_repeats(ctx, &pc, kind)?;
    let warmup_s = pc.num(ctx, &p.warmup_s, &table::WARMUP_S, defaults.warmup_s)?;
    let cooldown_s = pc.num(ctx, &p.cooldown_s, &table::COOLDOWN_S, defaults.cooldown_s)?;
    let ramp_s = pc.num(ctx, &p.ramp_s, &table::RAMP_S, 0.0)?;
    let mut modes = single_mode(ctx, &pc, kind)?;
    let mut wave = duty::Wave {
        periods_ms: Vec::new(),
        duty: 1.0,
        stagger: Stagger::Even,
    };
    let mut mitigations = Vec::new();
    if kind == PhaseKind::Duty {
        wave = duty::validate(ctx, &pc, &mut modes, ramp_s, duration_s)?;
        mitigations = smoothing::validate(ctx, &pc, &name, &wave.periods_ms, wave.duty)?;
    }
    let nccl = match kind {
        PhaseKind::Nccl => Some(nccl::validate(ctx, &pc)?),
        _ => None,
    };
    let workload = match kind {
        PhaseKind::Workload => Some(workload::validate(ctx, &pc)?),
        _ => None,
    };
    Ok(Phase {
        name,
        kind,
        duration_s,
        warmup_s,
        cooldown_s,
        repeats,
        periods_ms: wave.periods_ms.into_iter().map(PeriodMs).collect(),
        duty: wave.duty,
        ramp_s,
        exact_period: p.exact_period.as_ref().is_some_and(|e| *e.get_ref()),
        modes,
        stagger: wave.stagger,
        nccl,
        smoothing: mitigations,
        workload,
    })
}

/// The phase's kind, one of [`table::KINDS`].
fn kind_spec(ctx: &Ctx<'_>, pc: &PhaseCtx<'_>) -> Result<&'static KindSpec, CampaignError> {
    let written = &pc.p.kind;
    table::kind_spec(written.get_ref()).ok_or_else(|| {
        ctx.err(
            written.span(),
            pc.f("kind"),
            format!("unknown phase kind `{}`", written.get_ref()),
            Some(&table::kind_names()),
        )
    })
}

/// Every key present is one the kind accepts.
fn check_keys(ctx: &Ctx<'_>, pc: &PhaseCtx<'_>, spec: &KindSpec) -> Result<(), CampaignError> {
    let accepts = |key: &str| table::COMMON_KEYS.contains(&key) || spec.keys.contains(&key);
    let Some((key, span)) = present_keys(pc.p).into_iter().find(|(k, _)| !accepts(k)) else {
        return Ok(());
    };
    if key == "smoothing" {
        let name = pc.p.name.as_ref().map_or_else(
            || format!("{}-{}", spec.kind.as_str(), pc.index),
            |n| n.get_ref().trim().to_string(),
        );
        return Err(ctx.err(
            span,
            format!("phases.{name}.smoothing"),
            format!(
                "`smoothing` is not allowed in phase `{name}`, a `{}` phase: a mitigation smooths the edges of a square wave, so only `duty` phases take it",
                spec.kind.as_str()
            ),
            Some("kind = \"duty\" with periods_ms, or no smoothing"),
        ));
    }
    let allowed: Vec<&str> = table::COMMON_KEYS
        .iter()
        .chain(spec.keys.iter())
        .copied()
        .collect();
    Err(ctx.err(
        span,
        pc.f(key),
        format!("`{key}` is not allowed in a `{}` phase", spec.kind.as_str()),
        Some(&allowed.join(", ")),
    ))
}

/// The kind-specific keys present in a phase table, with their spans, in
/// the order they are checked.
fn present_keys(p: &RawPhase) -> Vec<(&'static str, Range<usize>)> {
    fn at<T>(v: &Option<Spanned<T>>) -> Option<Range<usize>> {
        v.as_ref().map(|s| s.span())
    }
    [
        ("warmup_s", at(&p.warmup_s)),
        ("period_ms", at(&p.period_ms)),
        ("periods_ms", at(&p.periods_ms)),
        ("duty", at(&p.duty)),
        ("ramp_s", at(&p.ramp_s)),
        ("exact_period", at(&p.exact_period)),
        ("mode", at(&p.mode)),
        ("modes", at(&p.modes)),
        ("stagger_step_deg", at(&p.stagger_step_deg)),
        ("offsets_deg", at(&p.offsets_deg)),
        ("offsets_ms", at(&p.offsets_ms)),
        ("smoothing", at(&p.smoothing)),
        ("collectives", at(&p.collectives)),
        ("min_bytes", at(&p.min_bytes)),
        ("max_bytes", at(&p.max_bytes)),
        ("step_factor", at(&p.step_factor)),
        ("iterations", at(&p.iterations)),
        ("bsp_compute_ms", at(&p.bsp_compute_ms)),
        ("warmup_iters", at(&p.warmup_iters)),
        ("sweep_s", at(&p.sweep_s)),
        ("fabric_bytes", at(&p.fabric_bytes)),
        ("timeout_s", at(&p.timeout_s)),
        ("command", at(&p.command)),
        ("iteration_ms", at(&p.iteration_ms)),
        ("env", at(&p.env)),
        ("cwd", at(&p.cwd)),
        ("stop_grace_s", at(&p.stop_grace_s)),
        ("stop", at(&p.stop)),
        ("sim", at(&p.sim)),
    ]
    .into_iter()
    .filter_map(|(k, s)| s.map(|s| (k, s)))
    .collect()
}

/// The name as written (a valid, unreserved name), else `kind-index`.
fn phase_name(ctx: &Ctx<'_>, pc: &PhaseCtx<'_>, kind: PhaseKind) -> Result<String, CampaignError> {
    let Some(n) = &pc.p.name else {
        return Ok(format!("{}-{}", kind.as_str(), pc.index));
    };
    let name = n.get_ref().trim().to_string();
    if name.is_empty() {
        return Err(ctx.err(
            n.span(),
            pc.f("name"),
            "a phase name must not be empty",
            None,
        ));
    }
    if let Some(why) = crate::names::name_problem(&name) {
        return Err(ctx.err(
            n.span(),
            pc.f("name"),
            format!("cannot name a phase: {why}"),
            Some(crate::names::NAME_ALLOWED),
        ));
    }
    if let Some(why) = crate::names::reserved_problem(&name, kind) {
        return Err(ctx.err(
            n.span(),
            pc.f("name"),
            format!("cannot name a phase: {why}"),
            Some("another name"),
        ));
    }
    Ok(name)
}

/// The required duration and the repeats (a soak runs once).
fn duration_and_repeats(
    ctx: &Ctx<'_>,
    pc: &PhaseCtx<'_>,
    kind: PhaseKind,
) -> Result<(f64, u32), CampaignError> {
    let p = pc.p;
    if p.duration_s.is_none() {
        return Err(ctx.err(
            pc.span.clone(),
            pc.f("duration_s"),
            "every phase needs a duration",
            Some("duration_s = seconds > 0"),
        ));
    }
    let duration_s = pc.num(ctx, &p.duration_s, &table::DURATION_S, 0.0)?;
    let default_repeats = if kind == PhaseKind::Soak {
        table::REPEATS.default
    } else {
        pc.defaults.repeats
    };
    let repeats = pc.count(ctx, &p.repeats, &table::REPEATS, default_repeats)?;
    if kind == PhaseKind::Soak && repeats != 1 {
        let span = pc.span_of(&p.repeats);
        return Err(ctx.err(span, pc.f("repeats"), "a soak runs once", Some("1")));
    }
    Ok((duration_s, repeats))
}

/// The mode of `mode = …` (in phase when absent); only a duty phase may
/// stagger.
fn single_mode(
    ctx: &Ctx<'_>,
    pc: &PhaseCtx<'_>,
    kind: PhaseKind,
) -> Result<Vec<Mode>, CampaignError> {
    let Some(m) = &pc.p.mode else {
        return Ok(vec![Mode::InPhase]);
    };
    let mode = parse_mode(ctx, m.get_ref(), m.span(), &pc.f("mode"))?;
    if mode == Mode::Staggered && kind != PhaseKind::Duty {
        return Err(ctx.err(
            m.span(),
            pc.f("mode"),
            "only duty phases can be staggered: constant load has no phase to shift",
            Some("in_phase"),
        ));
    }
    Ok(vec![mode])
}
