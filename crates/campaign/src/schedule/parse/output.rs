//! `[output]`: the waveform's span, resolution and seed, checked against
//! the job's iteration and the most points a waveform may hold.

use super::whole;
use crate::ctx::Ctx;
use crate::error::CampaignError;
use crate::schedule::raw::RawOutput;
use crate::schedule::{MAX_POINTS, MAX_SPAN_S, Output, RESOLUTION_MS_RANGE};
use std::ops::Range;
use toml::Spanned;

/// `[output]`'s defaults: span, s; resolution, ms; seed.
const DEFAULT_OUTPUT: Output = Output {
    span_s: 600.0,
    resolution_ms: 1.0,
    seed: 1,
};

/// `[output]`: span and resolution in range, the span at least two
/// iterations, the resolution at most a quarter iteration, at most
/// [`MAX_POINTS`] points. A default that breaks a rule is reported at the
/// job's `iteration_ms` (`iteration_span`).
pub(super) fn output(
    ctx: &Ctx<'_>,
    o: Option<Spanned<RawOutput>>,
    iteration_ms: f64,
    iteration_span: Range<usize>,
) -> Result<Output, CampaignError> {
    let Some(o) = o.map(Spanned::into_inner) else {
        return cross_check(
            ctx,
            DEFAULT_OUTPUT,
            &RawOutput::default(),
            iteration_ms,
            iteration_span,
        );
    };
    let d = DEFAULT_OUTPUT;
    let span_s = ctx.ranged(
        &o.span_s,
        "output.span_s",
        d.span_s,
        (0.0, MAX_SPAN_S),
        true,
    )?;
    let resolution_ms = ctx.ranged(
        &o.resolution_ms,
        "output.resolution_ms",
        d.resolution_ms,
        RESOLUTION_MS_RANGE,
        false,
    )?;
    let seed = match &o.seed {
        None => d.seed,
        Some(v) => whole(
            ctx,
            v,
            "output.seed",
            (0, i64::MAX),
            "a non-negative integer",
        )?,
    };
    let out = Output {
        span_s,
        resolution_ms,
        seed,
    };
    cross_check(ctx, out, &o, iteration_ms, iteration_span)
}

/// The output's rules across keys: the span at least two iterations, the
/// resolution at most a quarter iteration, at most [`MAX_POINTS`] points.
/// Each error sits at the key when written, else at the iteration.
fn cross_check(
    ctx: &Ctx<'_>,
    out: Output,
    o: &RawOutput,
    iteration_ms: f64,
    iteration_span: Range<usize>,
) -> Result<Output, CampaignError> {
    let at = |v: Option<&Spanned<f64>>| v.map_or(iteration_span.clone(), |v| v.span());
    let default = |v: &Option<Spanned<f64>>| if v.is_none() { " (the default)" } else { "" };
    let min_span_s = 2.0 * iteration_ms / 1000.0;
    if out.span_s < min_span_s {
        return Err(ctx.err(
            at(o.span_s.as_ref()),
            "output.span_s",
            format!(
                "{} s{} holds fewer than two iterations of {iteration_ms} ms",
                out.span_s,
                default(&o.span_s)
            ),
            Some(&format!(
                "{min_span_s} <= span_s <= {MAX_SPAN_S} (at least 2 × job.iteration_ms)"
            )),
        ));
    }
    let max_resolution = iteration_ms / 4.0;
    if out.resolution_ms > max_resolution {
        return Err(ctx.err(
            at(o.resolution_ms.as_ref()),
            "output.resolution_ms",
            format!(
                "{} ms{} is coarser than a quarter of the {iteration_ms} ms iteration",
                out.resolution_ms,
                default(&o.resolution_ms)
            ),
            Some(&format!(
                "{} <= resolution_ms <= {max_resolution} (job.iteration_ms / 4)",
                RESOLUTION_MS_RANGE.0
            )),
        ));
    }
    let field = if o.resolution_ms.is_some() {
        "output.resolution_ms"
    } else {
        "output.span_s"
    };
    match too_many_points(out) {
        Some((message, allowed)) => Err(ctx.err(
            at(o.resolution_ms.as_ref().or(o.span_s.as_ref())),
            field,
            message,
            Some(&allowed),
        )),
        None => Ok(out),
    }
}

/// Where `out` holds more than [`MAX_POINTS`] points: what is wrong, and
/// the longest span at its resolution and the finest resolution at its
/// span that fit.
fn too_many_points(out: Output) -> Option<(String, String)> {
    let points = out.span_s * 1000.0 / out.resolution_ms;
    if points <= MAX_POINTS as f64 {
        return None;
    }
    let max = MAX_POINTS as f64;
    let longest_s = max * out.resolution_ms / 1000.0;
    let finest_ms = out.span_s * 1000.0 / max;
    Some((
        format!(
            "{points:.0} points (span_s × 1000 / resolution_ms), more than the {} million a waveform may hold",
            MAX_POINTS as f64 / powerlab_core::units::MILLION
        ),
        format!(
            "span_s × 1000 / resolution_ms <= {MAX_POINTS}: at resolution_ms = {}, span_s <= {longest_s}; at span_s = {}, resolution_ms >= {finest_ms}",
            out.resolution_ms, out.span_s
        ),
    ))
}
