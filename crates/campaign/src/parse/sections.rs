//! The tables around the phases: `[campaign]`'s name and GPUs,
//! `[sampling]`, `[limits]`, `[rack]` and `[defaults]`, one function each.

use super::raw::{RawDefaults, RawLimits, RawRack, RawSampling};
use super::table::{MAX_WARMUP_S, TEMP_LIMIT_RANGE_C};
use crate::ctx::Ctx;
use crate::error::CampaignError;
use crate::model::{GpuRef, GpuSelector, Limits, MAX_REPEATS, Rack, RackStagger, Sampling};
use powerlab_core::units::{NS_PER_S, NS_PER_US, W_PER_MW};
use toml::Spanned;

/// Every sampling interval, ms.
const INTERVAL_RANGE_MS: (f64, f64) = (1.0, 1000.0);
/// Largest edge error a limit may allow, µs: one second.
const MAX_EDGE_US: f64 = (NS_PER_S / NS_PER_US) as f64;

/// The campaign's name: one that can name a run directory.
pub(super) fn campaign_name(
    ctx: &Ctx<'_>,
    name: &Spanned<String>,
) -> Result<String, CampaignError> {
    let trimmed = name.get_ref().trim().to_string();
    if let Some(why) = crate::names::name_problem(&trimmed) {
        return Err(ctx.err(
            name.span(),
            "campaign.name",
            format!("cannot name a run directory: {why}"),
            Some(crate::names::NAME_ALLOWED),
        ));
    }
    Ok(trimmed)
}

/// `gpus = "all"` or a list of distinct indices and UUIDs.
pub(super) fn gpus(ctx: &Ctx<'_>, v: &Spanned<toml::Value>) -> Result<GpuSelector, CampaignError> {
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
        toml::Value::Array(items) if !items.is_empty() => gpu_list(ctx, v, items, allowed),
        other => Err(ctx.err(
            v.span(),
            "campaign.gpus",
            format!("`{other}` does not select GPUs"),
            allowed,
        )),
    }
}

/// A non-empty list of GPU indices and UUIDs, each once.
fn gpu_list(
    ctx: &Ctx<'_>,
    v: &Spanned<toml::Value>,
    items: &[toml::Value],
    allowed: Option<&str>,
) -> Result<GpuSelector, CampaignError> {
    let mut out = Vec::new();
    for item in items {
        match item {
            toml::Value::Integer(i) if *i >= 0 && *i < 1024 => out.push(GpuRef::Index(*i as u32)),
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

/// `[sampling]`: every interval within 1 ms ..= 1 s, and the three that
/// keep the node watched and the samples safe say why when slower.
pub(super) fn sampling(ctx: &Ctx<'_>, s: Option<RawSampling>) -> Result<Sampling, CampaignError> {
    let s = s.unwrap_or_default();
    let d = Sampling::default();
    let slow: [(&Option<Spanned<f64>>, &str, &str, &str); 3] = [
        (
            &s.poll_interval_ms,
            "sampling.poll_interval_ms",
            "the interlocks and the instant field are read at this period; slower than 1 s leaves the node unwatched",
            "0 < poll_interval_ms <= 1000",
        ),
        (
            &s.buffer_interval_ms,
            "sampling.buffer_interval_ms",
            "the driver buffer holds ~2.4 s of samples; draining it less often than every second risks losing some",
            "0 < buffer_interval_ms <= 1000",
        ),
        (
            &s.flush_interval_ms,
            "sampling.flush_interval_ms",
            "raw samples must reach disk at least every second",
            "0 < flush_interval_ms <= 1000",
        ),
    ];
    for (v, field, why, allowed) in slow {
        if let Some(v) = v
            && *v.get_ref() > INTERVAL_RANGE_MS.1
        {
            return Err(ctx.err(v.span(), field, why, Some(allowed)));
        }
    }
    let ms = |v: &Option<Spanned<f64>>, field: &str, default: f64| {
        ctx.ranged(v, field, default, INTERVAL_RANGE_MS, false)
    };
    Ok(Sampling {
        poll_interval_ms: ms(
            &s.poll_interval_ms,
            "sampling.poll_interval_ms",
            d.poll_interval_ms,
        )?,
        buffer_interval_ms: ms(
            &s.buffer_interval_ms,
            "sampling.buffer_interval_ms",
            d.buffer_interval_ms,
        )?,
        field_interval_ms: ms(
            &s.field_interval_ms,
            "sampling.field_interval_ms",
            d.field_interval_ms,
        )?,
        status_interval_ms: ms(
            &s.status_interval_ms,
            "sampling.status_interval_ms",
            d.status_interval_ms,
        )?,
        flush_interval_ms: ms(
            &s.flush_interval_ms,
            "sampling.flush_interval_ms",
            d.flush_interval_ms,
        )?,
        grid_ms: ms(&s.grid_ms, "sampling.grid_ms", d.grid_ms)?,
    })
}

/// `[limits]`: temperatures within [`TEMP_LIMIT_RANGE_C`], and the largest
/// edge error allowed not below the p99 allowed.
pub(super) fn limits(ctx: &Ctx<'_>, l: Option<RawLimits>) -> Result<Limits, CampaignError> {
    let l = l.unwrap_or_default();
    let dl = Limits::default();
    let r = |v: &Option<Spanned<f64>>, field: &str, default: f64, range: (f64, f64)| {
        ctx.ranged(v, field, default, range, false)
    };
    let limits = Limits {
        max_gpu_temp_c: r(
            &l.max_gpu_temp_c,
            "limits.max_gpu_temp_c",
            dl.max_gpu_temp_c,
            TEMP_LIMIT_RANGE_C,
        )?,
        max_memory_temp_c: r(
            &l.max_memory_temp_c,
            "limits.max_memory_temp_c",
            dl.max_memory_temp_c,
            TEMP_LIMIT_RANGE_C,
        )?,
        max_node_power_w: match &l.max_node_power_w {
            None => None,
            v => Some(r(v, "limits.max_node_power_w", 0.0, (1.0, W_PER_MW))?),
        },
        abort_on_hw_slowdown: l.abort_on_hw_slowdown.unwrap_or(dl.abort_on_hw_slowdown),
        barrier_tolerance_ms: r(
            &l.barrier_tolerance_ms,
            "limits.barrier_tolerance_ms",
            dl.barrier_tolerance_ms,
            (0.001, 10_000.0),
        )?,
        edge_p99_us: r(
            &l.edge_p99_us,
            "limits.edge_p99_us",
            dl.edge_p99_us,
            (0.1, MAX_EDGE_US),
        )?,
        edge_max_us: r(
            &l.edge_max_us,
            "limits.edge_max_us",
            dl.edge_max_us,
            (0.1, MAX_EDGE_US),
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
    Ok(limits)
}

/// `[rack]`: how staggered rungs spread over nodes, and the clock tolerance.
pub(super) fn rack(ctx: &Ctx<'_>, r: Option<RawRack>) -> Result<Rack, CampaignError> {
    let Some(r) = r else {
        return Ok(Rack::default());
    };
    let stagger = match &r.stagger {
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
    };
    Ok(Rack {
        stagger,
        clock_tolerance_ms: ctx.ranged(
            &r.clock_tolerance_ms,
            "rack.clock_tolerance_ms",
            Rack::default().clock_tolerance_ms,
            (0.001, 10_000.0),
            false,
        )?,
    })
}

/// `[defaults]`: repeats, warm-up and cool-down of every phase that does
/// not set its own.
pub(super) fn defaults(
    ctx: &Ctx<'_>,
    d: Option<RawDefaults>,
) -> Result<(u32, f64, f64), CampaignError> {
    let d = d.unwrap_or_default();
    let repeats = ctx.count(&d.repeats, "defaults.repeats", 1, MAX_REPEATS as i64)?;
    let warmup = ctx.non_negative(&d.warmup_s, "defaults.warmup_s", 2.0, MAX_WARMUP_S)?;
    let cooldown = ctx.non_negative(&d.cooldown_s, "defaults.cooldown_s", 2.0, MAX_WARMUP_S)?;
    Ok((repeats, warmup, cooldown))
}
