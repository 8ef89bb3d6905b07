//! The NCCL part of an `nccl` phase: the collectives, the sweep's sizes
//! and iterations, the fabric and bulk-synchronous rungs.

use super::phase_ctx::PhaseCtx;
use super::table::{self, Bytes};
use crate::ctx::Ctx;
use crate::error::CampaignError;
use crate::model::NcclSpec;
use powerlab_core::Collective;
use toml::Spanned;

/// Validates the NCCL keys.
pub(super) fn validate(ctx: &Ctx<'_>, pc: &PhaseCtx<'_>) -> Result<NcclSpec, CampaignError> {
    let p = pc.p;
    let collectives = match &p.collectives {
        None => Collective::ALL.to_vec(),
        Some(c) => parse_collectives(ctx, c, &pc.f("collectives"))?,
    };
    let min_bytes = bytes(ctx, pc, &p.min_bytes, &table::MIN_BYTES)?;
    let max_bytes = bytes(ctx, pc, &p.max_bytes, &table::MAX_BYTES)?;
    if min_bytes > max_bytes {
        let span = pc.span_of(&p.min_bytes);
        return Err(ctx.err(span, pc.f("min_bytes"), "min_bytes exceeds max_bytes", None));
    }
    let step_factor = match &p.step_factor {
        None => table::DEFAULT_STEP_FACTOR,
        Some(s) if table::STEP_FACTORS.contains(s.get_ref()) => *s.get_ref() as u64,
        Some(s) => {
            return Err(ctx.err(
                s.span(),
                pc.f("step_factor"),
                format!("{} is not a sweep step", s.get_ref()),
                Some("2, 4 or 8"),
            ));
        }
    };
    let iterations = pc.count(
        ctx,
        &p.iterations,
        &table::ITERATIONS,
        table::ITERATIONS.default,
    )?;
    let bsp_compute_ms = match &p.bsp_compute_ms {
        None => None,
        v => Some(pc.num(ctx, v, &table::BSP_COMPUTE_MS, 0.0)?),
    };
    let warmup_iters = pc.count(
        ctx,
        &p.warmup_iters,
        &table::WARMUP_ITERS,
        table::WARMUP_ITERS.default,
    )?;
    let sweep_s = pc.num(ctx, &p.sweep_s, &table::SWEEP_S, table::DEFAULT_NCCL_S)?;
    let fabric_bytes = bytes(ctx, pc, &p.fabric_bytes, &table::FABRIC_BYTES)?;
    let timeout_s = pc.num(ctx, &p.timeout_s, &table::TIMEOUT_S, table::DEFAULT_NCCL_S)?;
    Ok(NcclSpec {
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
    })
}

/// A message size in `1..=`[`table::MAX_MESSAGE_BYTES`], bytes.
fn bytes(
    ctx: &Ctx<'_>,
    pc: &PhaseCtx<'_>,
    v: &Option<Spanned<i64>>,
    key: &Bytes,
) -> Result<u64, CampaignError> {
    match v {
        None => Ok(key.default),
        Some(s) if (1..=table::MAX_MESSAGE_BYTES).contains(s.get_ref()) => Ok(*s.get_ref() as u64),
        Some(s) => Err(ctx.err(
            s.span(),
            pc.f(key.key),
            format!("{} bytes is out of range", s.get_ref()),
            Some(&format!("1 ..= {} GiB", table::MAX_MESSAGE_BYTES >> 30)),
        )),
    }
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
