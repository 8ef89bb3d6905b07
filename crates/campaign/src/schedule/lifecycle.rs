//! `[lifecycle]`: the job's start, checkpoints, crashes, restarts and end,
//! each key in range and the events in order: the start within the span,
//! the end after it, every crash while the job runs, a checkpoint shorter
//! than its cadence, and events at least [`MIN_EVENT_GAP_S`] apart (an
//! edge settles before the next begins).

use super::keys::{need, refuse};
use super::raw::RawLifecycle;
use super::{
    Checkpoint, LIFECYCLE_RESOLUTION_MS_RANGE, Lifecycle, MAX_COMM_W_PER_GPU, MAX_LIFECYCLE_SPAN_S,
    MIN_EVENT_GAP_S, StartEdge,
};
use crate::ctx::Ctx;
use crate::error::CampaignError;
use toml::Spanned;

/// The default span, s (an hour), and resolution, ms.
const DEFAULT_SPAN_S: f64 = 3_600.0;
const DEFAULT_RESOLUTION_MS: f64 = 10.0;
/// How far inside the span every event lies, s.
pub const EDGE_MARGIN_S: f64 = 60.0;
/// The most crashes an hour may declare.
const MAX_CRASH_PER_HOUR: f64 = 60.0;

/// `[lifecycle]` checked against the iteration.
pub(super) fn lifecycle(
    ctx: &Ctx<'_>,
    l: Spanned<RawLifecycle>,
    iteration_ms: f64,
) -> Result<Lifecycle, CampaignError> {
    let at = l.span();
    let l = l.into_inner();
    let span_s = ctx.ranged(
        &l.span_s,
        "lifecycle.span_s",
        DEFAULT_SPAN_S,
        (4.0 * EDGE_MARGIN_S, MAX_LIFECYCLE_SPAN_S),
        false,
    )?;
    let resolution_ms = resolution(ctx, &l, iteration_ms)?;
    // A minute of the span either side of the job: the per-minute ramps
    // and the levels either side of the start and the end are read in it
    // (an end 1 s before the span's end was judged on no minute at all).
    let last_s = span_s - EDGE_MARGIN_S;
    let margin = |mut e: CampaignError| {
        e.message.push_str(&format!(
            " (the job's events lie at least {EDGE_MARGIN_S} s inside the span: its per-minute ramps are read there)"
        ));
        e
    };
    let start_at_s = ctx
        .ranged(
            &l.start_at_s,
            "lifecycle.start_at_s",
            EDGE_MARGIN_S,
            (EDGE_MARGIN_S, last_s),
            false,
        )
        .map_err(margin)?;
    let end_at_s = match &l.end_at_s {
        None => None,
        v => Some(
            ctx.ranged(v, "lifecycle.end_at_s", 0.0, (start_at_s, last_s), true)
                .map_err(margin)?,
        ),
    };
    let running_to = end_at_s.unwrap_or(last_s);
    let lc = Lifecycle {
        span_s,
        resolution_ms,
        start_at_s,
        start: start(ctx, &l, at.clone())?,
        start_spread_ms: ctx.non_negative(
            &l.start_spread_ms,
            "lifecycle.start_spread_ms",
            0.0,
            60_000.0,
        )?,
        checkpoint: checkpoint(ctx, &l, at)?,
        crash_at_s: crashes(ctx, &l, (start_at_s, running_to))?,
        crash_per_hour: ctx.non_negative(
            &l.crash_per_hour,
            "lifecycle.crash_per_hour",
            0.0,
            MAX_CRASH_PER_HOUR,
        )?,
        restart_after_s: ctx.ranged(
            &l.restart_after_s,
            "lifecycle.restart_after_s",
            300.0,
            (MIN_EVENT_GAP_S, MAX_LIFECYCLE_SPAN_S),
            false,
        )?,
        end_at_s,
        idle_w_per_gpu: match &l.idle_w_per_gpu {
            None => None,
            v => Some(ctx.ranged(
                v,
                "lifecycle.idle_w_per_gpu",
                0.0,
                (0.0, MAX_COMM_W_PER_GPU),
                false,
            )?),
        },
    };
    if let (Some(e), Some(v)) = (lc.end_at_s, &l.end_at_s)
        && e - lc.start_at_s < MIN_EVENT_GAP_S
    {
        return Err(ctx.err(
            v.span(),
            "lifecycle.end_at_s",
            format!(
                "the job would end {:.1} s after it starts: its start edge would not settle",
                e - lc.start_at_s
            ),
            Some(&format!("end_at_s >= start_at_s + {MIN_EVENT_GAP_S}")),
        ));
    }
    Ok(lc)
}

/// The resolution: in range, at most a quarter iteration.
fn resolution(ctx: &Ctx<'_>, l: &RawLifecycle, iteration_ms: f64) -> Result<f64, CampaignError> {
    let field = "lifecycle.resolution_ms";
    let hi = LIFECYCLE_RESOLUTION_MS_RANGE.1.min(iteration_ms / 4.0);
    let lo = LIFECYCLE_RESOLUTION_MS_RANGE.0;
    if hi < lo {
        let at = l.resolution_ms.as_ref().map_or(0..0, Spanned::span);
        return Err(ctx.err(
            at,
            field,
            format!("a {iteration_ms} ms iteration is shorter than four points of {lo} ms"),
            Some("job.iteration_ms >= 4 ms for a lifecycle study"),
        ));
    }
    let r = ctx.ranged(
        &l.resolution_ms,
        field,
        DEFAULT_RESOLUTION_MS.min(hi),
        (lo, hi),
        false,
    );
    r.map_err(|mut e| {
        e.message
            .push_str(" (at most job.iteration_ms / 4 and 1000 ms)");
        e
    })
}

/// `start`: measured (the default), held, or declared with `start_ramp_s`.
fn start(
    ctx: &Ctx<'_>,
    l: &RawLifecycle,
    at: std::ops::Range<usize>,
) -> Result<StartEdge, CampaignError> {
    let kind = l
        .start
        .as_ref()
        .map_or("measured", |s| s.get_ref().as_str());
    let at = l.start.as_ref().map_or(at, Spanned::span);
    let ramp_field = "lifecycle.start_ramp_s";
    let allowed = "0 < start_ramp_s <= 3600, with start = \"declared\" only";
    match kind {
        "measured" | "held" => {
            refuse(ctx, &l.start_ramp_s, ramp_field, &format!("a declared ramp with start = \"{kind}\""), allowed)?;
            Ok(if kind == "held" {
                StartEdge::Held
            } else {
                StartEdge::Measured
            })
        }
        "declared" => {
            need(ctx, &l.start_ramp_s, at, ramp_field, allowed)?;
            Ok(StartEdge::Ramp {
                ramp_s: ctx.ranged(&l.start_ramp_s, ramp_field, 0.0, (0.0, 3_600.0), true)?,
            })
        }
        other => Err(ctx.err(
            at,
            "lifecycle.start",
            format!("unknown start edge `{other}`"),
            Some("measured (the run's cold start), held (its duty rungs' rise), declared (with start_ramp_s)"),
        )),
    }
}

/// A checkpoint: both of `checkpoint_every_s` and `checkpoint_s`, or
/// neither; the checkpoint shorter than its cadence by two event gaps.
fn checkpoint(
    ctx: &Ctx<'_>,
    l: &RawLifecycle,
    at: std::ops::Range<usize>,
) -> Result<Option<Checkpoint>, CampaignError> {
    let allowed = "checkpoint_every_s and checkpoint_s together (checkpoint_w_per_gpu optional)";
    match (&l.checkpoint_every_s, &l.checkpoint_s) {
        (None, None) => {
            refuse(
                ctx,
                &l.checkpoint_w_per_gpu,
                "lifecycle.checkpoint_w_per_gpu",
                "a checkpoint's draw without a checkpoint",
                allowed,
            )?;
            return Ok(None);
        }
        (Some(_), None) => {
            need(ctx, &l.checkpoint_s, at, "lifecycle.checkpoint_s", allowed)?;
        }
        (None, Some(_)) => {
            need(
                ctx,
                &l.checkpoint_every_s,
                at,
                "lifecycle.checkpoint_every_s",
                allowed,
            )?;
        }
        _ => {}
    }
    let every_s = ctx.ranged(
        &l.checkpoint_every_s,
        "lifecycle.checkpoint_every_s",
        0.0,
        (3.0 * MIN_EVENT_GAP_S, MAX_LIFECYCLE_SPAN_S),
        false,
    )?;
    let duration_s = ctx
        .ranged(
            &l.checkpoint_s,
            "lifecycle.checkpoint_s",
            0.0,
            (MIN_EVENT_GAP_S, every_s - 2.0 * MIN_EVENT_GAP_S),
            false,
        )
        .map_err(|mut e| {
            e.message.push_str(&format!(
                " (at least {MIN_EVENT_GAP_S} s, and {} s shorter than checkpoint_every_s)",
                2.0 * MIN_EVENT_GAP_S
            ));
            e
        })?;
    let w_per_gpu = match &l.checkpoint_w_per_gpu {
        None => None,
        v => Some(ctx.ranged(
            v,
            "lifecycle.checkpoint_w_per_gpu",
            0.0,
            (0.0, MAX_COMM_W_PER_GPU),
            false,
        )?),
    };
    Ok(Some(Checkpoint {
        every_s,
        duration_s,
        w_per_gpu,
    }))
}

/// `crash_at_s`: increasing, each at least an event gap after the start
/// and before the end, and apart by more than the restart.
fn crashes(
    ctx: &Ctx<'_>,
    l: &RawLifecycle,
    (from_s, to_s): (f64, f64),
) -> Result<Vec<f64>, CampaignError> {
    let Some(v) = &l.crash_at_s else {
        return Ok(Vec::new());
    };
    let field = "lifecycle.crash_at_s";
    let (lo, hi) = (from_s + MIN_EVENT_GAP_S, to_s - MIN_EVENT_GAP_S);
    let mut last = f64::NEG_INFINITY;
    for &t in v.get_ref() {
        if !t.is_finite() || t < lo || t > hi || t < last + MIN_EVENT_GAP_S {
            return Err(ctx.err(
                v.span(),
                field,
                format!("a crash at {t} s is not while the job runs, or not after the one before"),
                Some(&format!(
                    "increasing times, {lo} ..= {hi} s ({MIN_EVENT_GAP_S} s after the start and before the end), {MIN_EVENT_GAP_S} s apart"
                )),
            ));
        }
        last = t;
    }
    Ok(v.get_ref().clone())
}
