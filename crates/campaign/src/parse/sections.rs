//! The tables around the phases: `[campaign]`'s name and GPUs,
//! `[sampling]`, `[limits]`, `[rack]`, `[supply]` and `[defaults]`, one
//! function each.

use super::raw::{RawDefaults, RawLimits, RawRack, RawSampling, RawSupply};
use super::table::{EXCURSION_RANGE_MS, MAX_WARMUP_S, SUPPLY_W_RANGE, TEMP_LIMIT_RANGE_C};
use crate::ctx::Ctx;
use crate::error::CampaignError;
use crate::model::{
    Excursion, GpuRef, GpuSelector, Limits, MAX_REPEATS, Rack, RackStagger, Sampling, Supply,
};
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

/// The ranges a `[supply]` table is held to: the node's
/// ([`SupplyRanges::NODE`]) or a facility's (a schedule's `[supply]`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SupplyRanges {
    /// `rated_w` and every excursion's watts, W (the low end excluded).
    pub(crate) w: (f64, f64),
    /// Every excursion's duration, ms.
    pub(crate) duration_ms: (f64, f64),
}

impl SupplyRanges {
    /// A node's supply, as a campaign's `[supply]` declares it.
    pub(crate) const NODE: Self = Self {
        w: SUPPLY_W_RANGE,
        duration_ms: EXCURSION_RANGE_MS,
    };
}

/// `[supply]`: `rated_w` within `ranges.w` (0 excluded), and `excursions`
/// a list of `[duration_ms, watts]` pairs, durations within
/// `ranges.duration_ms` and strictly increasing, watts within `ranges.w`
/// and never rising as the window lengthens; `rated_w` no higher than any
/// pair's watts.
pub(crate) fn supply(
    ctx: &Ctx<'_>,
    s: Spanned<RawSupply>,
    ranges: SupplyRanges,
) -> Result<Supply, CampaignError> {
    let s = s.into_inner();
    let rated_w = match &s.rated_w {
        None => None,
        v => Some(ctx.ranged(v, "supply.rated_w", 0.0, ranges.w, true)?),
    };
    let (ms, w) = (ranges.duration_ms, ranges.w);
    let allowed = format!(
        "[duration_ms, watts] with {} <= duration_ms <= {}, {} < watts <= {}, durations strictly increasing, watts never rising",
        ms.0, ms.1, w.0, w.1
    );
    let mut excursions: Vec<Excursion> = Vec::new();
    for (i, pair) in s.excursions.iter().flat_map(|e| e.get_ref()).enumerate() {
        let field = format!("supply.excursions[{i}]");
        let bad = |message: String| ctx.err(pair.span(), &field, message, Some(&allowed));
        let &[duration_ms, watts] = pair.get_ref().as_slice() else {
            return Err(bad(format!(
                "{} values where a pair [duration_ms, watts] belongs",
                pair.get_ref().len()
            )));
        };
        if !(duration_ms >= ms.0 && duration_ms <= ms.1) {
            return Err(bad(format!("duration {duration_ms} ms is out of range")));
        }
        if !(watts > w.0 && watts <= w.1) {
            return Err(bad(format!("{watts} W is out of range")));
        }
        if let Some(prev) = excursions.last()
            && duration_ms <= prev.duration_ms
        {
            return Err(bad(format!(
                "duration {duration_ms} ms does not follow {} ms",
                prev.duration_ms
            )));
        }
        if let Some(prev) = excursions.last()
            && watts > prev.watts
        {
            return Err(ctx.err(
                pair.span(),
                &field,
                format!(
                    "{watts} W over {duration_ms} ms is above the {} W allowed over the shorter {} ms: a longer window's limit may not rise",
                    prev.watts, prev.duration_ms
                ),
                Some(&format!(
                    "at most {} W here (each pair's watts no higher than the one before it)",
                    prev.watts
                )),
            ));
        }
        excursions.push(Excursion { duration_ms, watts });
    }
    rated_within_excursions(ctx, &s.rated_w, &excursions)?;
    Ok(Supply {
        rated_w,
        excursions,
    })
}

/// `rated_w`, where written, no higher than any excursion's watts: a
/// supply cannot hold continuously more than it allows over a window.
fn rated_within_excursions(
    ctx: &Ctx<'_>,
    rated: &Option<Spanned<f64>>,
    excursions: &[Excursion],
) -> Result<(), CampaignError> {
    let Some(r) = rated else { return Ok(()) };
    let lowest = excursions
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.watts.total_cmp(&b.1.watts));
    match lowest {
        Some((i, e)) if *r.get_ref() > e.watts => Err(ctx.err(
            r.span(),
            "supply.rated_w",
            format!(
                "{} W is above the {} W allowed over {} ms (supply.excursions[{i}]): a supply cannot hold continuously more than it allows over a window",
                r.get_ref(),
                e.watts,
                e.duration_ms
            ),
            Some(&format!(
                "rated_w <= {} W, the lowest excursion limit (or raise that limit)",
                e.watts
            )),
        )),
        _ => Ok(()),
    }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
    use crate::model::Excursion;

    fn with_supply(table: &str) -> Result<crate::Campaign, crate::CampaignError> {
        crate::parse_str(
            "t.toml",
            &format!(
                "[campaign]\nname = \"t\"\n[[phase]]\nkind = \"sustained\"\nduration_s = 5\n{table}"
            ),
        )
    }

    #[test]
    fn a_supply_table_is_read_and_interpolated_log_linearly() {
        let c = with_supply("[supply]\nrated_w = 3000\nexcursions = [[10, 4500], [1000, 3500]]\n")
            .unwrap();
        let s = c.supply.unwrap();
        assert_eq!(s.rated_w, Some(3000.0));
        assert_eq!(
            s.excursions,
            vec![
                Excursion {
                    duration_ms: 10.0,
                    watts: 4500.0
                },
                Excursion {
                    duration_ms: 1000.0,
                    watts: 3500.0
                }
            ]
        );
        assert_eq!(s.limit_at(10.0), Some(4500.0));
        // 100 ms is half way between 10 ms and 1 s on a log scale.
        assert!((s.limit_at(100.0).unwrap() - 4000.0).abs() < 1e-9);
        assert_eq!(s.limit_at(5.0), None);
        assert_eq!(s.limit_at(2000.0), None);
        assert!(with_supply("").unwrap().supply.is_none());
    }

    #[test]
    fn a_bad_supply_table_names_its_key_and_line() {
        for (table, field, says) in [
            (
                "[supply]\nexcursions = [[10, 4500], [10, 3500]]\n",
                "supply.excursions[1]",
                "does not follow",
            ),
            (
                "[supply]\nexcursions = [[0.5, 4500]]\n",
                "supply.excursions[0]",
                "out of range",
            ),
            (
                "[supply]\nexcursions = [[20000, 4500]]\n",
                "supply.excursions[0]",
                "out of range",
            ),
            (
                "[supply]\nexcursions = [[10, -1]]\n",
                "supply.excursions[0]",
                "out of range",
            ),
            (
                "[supply]\nexcursions = [[10, 1, 2]]\n",
                "supply.excursions[0]",
                "a pair",
            ),
            ("[supply]\nrated_w = 0\n", "supply.rated_w", "out of range"),
        ] {
            let e = with_supply(table).unwrap_err();
            assert_eq!(e.field.as_deref(), Some(field), "{table}: {e}");
            assert_eq!(e.line, 7, "{table}: {e}");
            assert!(e.message.contains(says), "{table}: {e}");
        }
        let e = with_supply("[supply]\nfuse_w = 1\n").unwrap_err();
        assert!(e.message.contains("unknown field"), "{e}");
    }
}
