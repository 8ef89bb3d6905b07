//! The duty part of a `duty` phase: its periods, duty fraction, modes and
//! how its staggered rungs spread the GPUs.

use super::phase_ctx::{PhaseCtx, parse_mode};
use super::table::{self, MAX_PERIODS, MIN_DUTY, MIN_PULSE_MS, MODES};
use crate::ctx::Ctx;
use crate::error::CampaignError;
use crate::model::{Mode, RackStagger, Stagger};
use std::ops::Range;
use toml::Spanned;

/// The wave a duty phase runs.
pub(super) struct Wave {
    /// Periods, ms, one rung each.
    pub(super) periods_ms: Vec<f64>,
    /// Duty fraction.
    pub(super) duty: f64,
    /// How staggered rungs spread the GPUs.
    pub(super) stagger: Stagger,
}

/// Validates the duty keys; `modes` holds the `mode` key's and becomes
/// the `modes` list where one is given.
pub(super) fn validate(
    ctx: &Ctx<'_>,
    pc: &PhaseCtx<'_>,
    modes: &mut Vec<Mode>,
    ramp_s: f64,
    duration_s: f64,
) -> Result<Wave, CampaignError> {
    let p = pc.p;
    let periods_ms = periods(ctx, pc)?;
    let duty = match &p.duty {
        None => table::DEFAULT_DUTY,
        Some(d) => check_duty(ctx, *d.get_ref(), &periods_ms, d.span(), &pc.f("duty"))?,
    };
    if let Some(listed) = mode_list(ctx, pc)? {
        *modes = listed;
    }
    let stagger = stagger(ctx, pc, modes, &periods_ms)?;
    if ramp_s >= duration_s {
        return Err(ctx.err(
            pc.span_of(&p.ramp_s),
            pc.f("ramp_s"),
            "the ramp must be shorter than the rung",
            Some("ramp_s < duration_s"),
        ));
    }
    Ok(Wave {
        periods_ms,
        duty,
        stagger,
    })
}

/// `period_ms` or `periods_ms` (one of them, each period once).
fn periods(ctx: &Ctx<'_>, pc: &PhaseCtx<'_>) -> Result<Vec<f64>, CampaignError> {
    let p = pc.p;
    let list = match (&p.period_ms, &p.periods_ms) {
        (Some(_), Some(b)) => {
            return Err(ctx.err(
                b.span(),
                pc.f("periods_ms"),
                "give `period_ms` or `periods_ms`, not both",
                None,
            ));
        }
        (Some(a), None) => {
            let v = pc.num(ctx, &p.period_ms, &table::PERIOD_MS, 0.0)?;
            return Ok(vec![check_period(ctx, v, a.span(), &pc.f("period_ms"))?]);
        }
        (None, Some(list)) => list,
        (None, None) => {
            return Err(ctx.err(
                pc.span.clone(),
                pc.f("period_ms"),
                "a duty phase needs a period",
                Some("period_ms = 500 or periods_ms = [2000, 500, 100]"),
            ));
        }
    };
    let field = pc.f("periods_ms");
    let given = list.get_ref();
    if given.is_empty() {
        return Err(ctx.err(
            list.span(),
            field,
            "the sweep lists no periods",
            Some("one or more periods in ms"),
        ));
    }
    if given.len() > MAX_PERIODS {
        return Err(ctx.err(
            list.span(),
            field,
            format!(
                "the sweep lists {} periods, more than {MAX_PERIODS}",
                given.len()
            ),
            Some(&format!("1 to {MAX_PERIODS} periods per phase")),
        ));
    }
    let mut periods_ms = Vec::new();
    for v in given {
        let p = check_period(ctx, *v, list.span(), &field)?;
        if periods_ms.contains(&p) {
            return Err(ctx.err(
                list.span(),
                field,
                format!("{p} ms is listed twice (repeats = N runs a period again)"),
                Some("distinct periods"),
            ));
        }
        periods_ms.push(p);
    }
    Ok(periods_ms)
}

/// The `modes` list, when given (not beside `mode`; each mode once).
fn mode_list(ctx: &Ctx<'_>, pc: &PhaseCtx<'_>) -> Result<Option<Vec<Mode>>, CampaignError> {
    let p = pc.p;
    let Some(ms) = &p.modes else {
        return Ok(None);
    };
    if p.mode.is_some() {
        return Err(ctx.err(
            ms.span(),
            pc.f("modes"),
            "give `mode` or `modes`, not both",
            None,
        ));
    }
    let mut parsed = Vec::new();
    for m in ms.get_ref() {
        let mode = parse_mode(ctx, m, ms.span(), &pc.f("modes"))?;
        if parsed.contains(&mode) {
            return Err(ctx.err(
                ms.span(),
                pc.f("modes"),
                format!("`{m}` is listed twice"),
                Some(MODES),
            ));
        }
        parsed.push(mode);
    }
    if parsed.is_empty() {
        return Err(ctx.err(ms.span(), pc.f("modes"), "no modes listed", Some(MODES)));
    }
    Ok(Some(parsed))
}

/// At most one of `stagger_step_deg`, `offsets_deg`, `offsets_ms`, and
/// only with a staggered mode; even spacing when none.
fn stagger(
    ctx: &Ctx<'_>,
    pc: &PhaseCtx<'_>,
    modes: &[Mode],
    periods_ms: &[f64],
) -> Result<Stagger, CampaignError> {
    let p = pc.p;
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
            pc.f(given[1].0),
            "give one of stagger_step_deg, offsets_deg, offsets_ms",
            None,
        ));
    }
    if let Some((key, span)) = given.first()
        && !modes.contains(&Mode::Staggered)
    {
        return Err(ctx.err(
            span.clone(),
            pc.f(key),
            "stagger offsets are given but no staggered mode is run",
            Some("mode = \"staggered\" or modes = [\"in_phase\", \"staggered\"]"),
        ));
    }
    for (key, list) in [
        ("offsets_deg", &p.offsets_deg),
        ("offsets_ms", &p.offsets_ms),
    ] {
        if let Some(list) = list {
            check_offset_count(ctx, list, pc, &pc.f(key))?;
        }
    }
    if let Some(s) = &p.stagger_step_deg {
        let v = *s.get_ref();
        if !(v > 0.0 && v < 360.0) {
            return Err(ctx.err(
                s.span(),
                pc.f("stagger_step_deg"),
                format!("{v} is not a step between GPUs"),
                Some("0 < degrees < 360"),
            ));
        }
        return Ok(Stagger::StepDeg(v));
    }
    if let Some(s) = &p.offsets_deg {
        if s.get_ref().iter().any(|v| !(0.0..360.0).contains(v)) {
            return Err(ctx.err(
                s.span(),
                pc.f("offsets_deg"),
                "offsets must lie in one period",
                Some("0 <= degrees < 360"),
            ));
        }
        return Ok(Stagger::OffsetsDeg(s.get_ref().clone()));
    }
    match &p.offsets_ms {
        Some(s) => offsets_ms(ctx, pc, s, periods_ms),
        None => Ok(Stagger::Even),
    }
}

/// Explicit offsets in ms: non-negative, each shorter than the shortest period.
fn offsets_ms(
    ctx: &Ctx<'_>,
    pc: &PhaseCtx<'_>,
    s: &Spanned<Vec<f64>>,
    periods_ms: &[f64],
) -> Result<Stagger, CampaignError> {
    if s.get_ref().iter().any(|v| !(v.is_finite() && *v >= 0.0)) {
        return Err(ctx.err(
            s.span(),
            pc.f("offsets_ms"),
            "offsets must be non-negative milliseconds",
            Some("ms >= 0"),
        ));
    }
    let min_period = periods_ms.iter().cloned().fold(f64::INFINITY, f64::min);
    if s.get_ref().iter().any(|v| *v >= min_period) {
        return Err(ctx.err(
            s.span(),
            pc.f("offsets_ms"),
            format!("an offset is not shorter than the shortest period ({min_period} ms)"),
            Some("0 <= ms < period"),
        ));
    }
    Ok(Stagger::OffsetsMs(s.get_ref().clone()))
}

/// An explicit offset list beside an explicit GPU list: one offset per
/// listed GPU (per GPU of the rack: a whole multiple of the list), unless
/// the rack spreads whole nodes (one offset per node, any count).
fn check_offset_count(
    ctx: &Ctx<'_>,
    list: &Spanned<Vec<f64>>,
    pc: &PhaseCtx<'_>,
    field: &str,
) -> Result<(), CampaignError> {
    let (Some(n), RackStagger::Gpu) = (pc.defaults.listed_gpus, pc.defaults.rack_stagger) else {
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

/// A period within [`table::PERIOD_RANGE_MS`].
fn check_period(
    ctx: &Ctx<'_>,
    v: f64,
    span: Range<usize>,
    field: &str,
) -> Result<f64, CampaignError> {
    let (lo, hi) = table::PERIOD_RANGE_MS;
    if v.is_finite() && (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(ctx.err(
            span,
            field,
            format!("period {v} ms is out of range"),
            Some(&format!("{lo} ms ..= {hi} ms")),
        ))
    }
}
