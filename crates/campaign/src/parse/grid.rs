//! `[grid]`: the utility interconnect's limits on the load's swings (ramp
//! rates, dynamic range, the critical band and the largest share of the
//! fluctuation's energy inside it), checked as `[supply]` is: every key in
//! range, units in the names, errors at the key's line.

use super::raw::RawGrid;
use crate::ctx::Ctx;
use crate::error::CampaignError;
use crate::model::{DEFAULT_BAND_HZ, Grid};
use toml::Spanned;

/// Highest ramp limit per GPU, W/s (0 excluded): 100 MW/s, a GPU that
/// swung 1 kW in 10 µs.
pub const RAMP_W_PER_S_RANGE: (f64, f64) = (0.0, 100_000_000.0);
/// Highest ramp limit of a site, MW/s (0 excluded): 100 GW/s.
pub const RAMP_MW_PER_S_RANGE: (f64, f64) = (0.0, 100_000.0);
/// The band's edges, Hz: above 0, at most 1 kHz.
pub const BAND_HZ_RANGE: (f64, f64) = (0.0, 1_000.0);
/// Most GPUs a site may declare.
pub const MAX_SITE_GPUS: i64 = 10_000_000;

/// One ramp direction's keys as written: the per-GPU and the site limit.
struct RampKeys<'a> {
    per_gpu: (&'a Option<Spanned<f64>>, &'static str),
    site: (&'a Option<Spanned<f64>>, &'static str),
}

/// `[grid]`: each limit in range, at most one of a ramp's two forms, a
/// site's MW/s limit only with its `gpus`, the band `[low, high]` with
/// `0 < low < high`, and at most one form of the dynamic range.
pub(crate) fn grid(ctx: &Ctx<'_>, g: Spanned<RawGrid>) -> Result<Grid, CampaignError> {
    let g = g.into_inner();
    let gpus = match &g.gpus {
        None => None,
        Some(_) => Some(ctx.count(&g.gpus, "grid.gpus", 1, MAX_SITE_GPUS)?),
    };
    let up = RampKeys {
        per_gpu: (&g.ramp_up_w_per_s_per_gpu, "grid.ramp_up_w_per_s_per_gpu"),
        site: (&g.ramp_up_mw_per_s, "grid.ramp_up_mw_per_s"),
    };
    let down = RampKeys {
        per_gpu: (
            &g.ramp_down_w_per_s_per_gpu,
            "grid.ramp_down_w_per_s_per_gpu",
        ),
        site: (&g.ramp_down_mw_per_s, "grid.ramp_down_mw_per_s"),
    };
    let (up_gpu, up_site) = ramp(ctx, &up, gpus)?;
    let (down_gpu, down_site) = ramp(ctx, &down, gpus)?;
    if let Some(s) = &g.gpus
        && up_site.is_none()
        && down_site.is_none()
    {
        return Err(ctx.err(
            s.span(),
            "grid.gpus",
            "a site's GPU count without a site limit to scale",
            Some("gpus with ramp_up_mw_per_s and/or ramp_down_mw_per_s"),
        ));
    }
    let pct = (0.0, 100.0);
    let share = optional(ctx, &g.max_band_share_pct, "grid.max_band_share_pct", pct)?;
    let range_pct = optional(
        ctx,
        &g.max_dynamic_range_pct,
        "grid.max_dynamic_range_pct",
        pct,
    )?;
    let range_w = optional(
        ctx,
        &g.max_dynamic_range_w,
        "grid.max_dynamic_range_w",
        super::table::SUPPLY_W_RANGE,
    )?;
    if let (Some(_), Some(w)) = (&g.max_dynamic_range_pct, &g.max_dynamic_range_w) {
        return Err(ctx.err(
            w.span(),
            "grid.max_dynamic_range_w",
            "the dynamic range is limited twice",
            Some("one of max_dynamic_range_pct, max_dynamic_range_w"),
        ));
    }
    Ok(Grid {
        gpus,
        ramp_up_w_per_s_per_gpu: up_gpu,
        ramp_up_mw_per_s: up_site,
        ramp_down_w_per_s_per_gpu: down_gpu,
        ramp_down_mw_per_s: down_site,
        band_hz: band(ctx, &g.band_hz)?,
        max_band_share_pct: share,
        max_dynamic_range_pct: range_pct,
        max_dynamic_range_w: range_w,
    })
}

/// A value in `(lo, hi]`, or None when not written.
fn optional(
    ctx: &Ctx<'_>,
    v: &Option<Spanned<f64>>,
    field: &str,
    range: (f64, f64),
) -> Result<Option<f64>, CampaignError> {
    match v {
        None => Ok(None),
        Some(_) => ctx.ranged(v, field, 0.0, range, true).map(Some),
    }
}

/// One ramp direction: at most one of its two forms, the site's only with
/// the site's `gpus`.
fn ramp(
    ctx: &Ctx<'_>,
    k: &RampKeys<'_>,
    gpus: Option<u32>,
) -> Result<(Option<f64>, Option<f64>), CampaignError> {
    let per_gpu = optional(ctx, k.per_gpu.0, k.per_gpu.1, RAMP_W_PER_S_RANGE)?;
    let site = optional(ctx, k.site.0, k.site.1, RAMP_MW_PER_S_RANGE)?;
    if let Some(s) = k.site.0 {
        if per_gpu.is_some() {
            return Err(ctx.err(
                s.span(),
                k.site.1,
                format!("this ramp is limited twice (also {})", k.per_gpu.1),
                Some("one of the per-GPU W/s and the site's MW/s limit"),
            ));
        }
        if gpus.is_none() {
            return Err(ctx.err(
                s.span(),
                k.site.1,
                "a site's limit needs the site's GPU count",
                Some("gpus = N in [grid], the GPUs the MW/s limit is for"),
            ));
        }
    }
    Ok((per_gpu, site))
}

/// `band_hz = [low, high]` with `0 < low < high <= 1000`, or the default.
fn band(ctx: &Ctx<'_>, v: &Option<Spanned<Vec<f64>>>) -> Result<[f64; 2], CampaignError> {
    let Some(b) = v else {
        return Ok(DEFAULT_BAND_HZ);
    };
    let bad = |message: String| {
        ctx.err(
            b.span(),
            "grid.band_hz",
            message,
            Some("[low_hz, high_hz] with 0 < low_hz < high_hz <= 1000"),
        )
    };
    let &[lo, hi] = b.get_ref().as_slice() else {
        return Err(bad(format!(
            "{} values where a pair [low_hz, high_hz] belongs",
            b.get_ref().len()
        )));
    };
    let inside = |f: f64| f > BAND_HZ_RANGE.0 && f <= BAND_HZ_RANGE.1;
    if !(inside(lo) && inside(hi)) {
        return Err(bad(format!("[{lo}, {hi}] Hz is out of range")));
    }
    if lo >= hi {
        return Err(bad(format!("{lo} Hz is not below {hi} Hz")));
    }
    Ok([lo, hi])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
    use crate::model::{DEFAULT_BAND_HZ, Ramp};

    fn with_grid(table: &str) -> Result<crate::Campaign, crate::CampaignError> {
        crate::parse_str(
            "t.toml",
            &format!(
                "[campaign]\nname = \"t\"\n[[phase]]\nkind = \"sustained\"\nduration_s = 5\n{table}"
            ),
        )
    }

    #[test]
    fn a_grid_table_is_read_and_scaled_to_the_node() {
        let c = with_grid(
            "[grid]\ngpus = 100000\nramp_up_mw_per_s = 10\nramp_down_w_per_s_per_gpu = 500\nband_hz = [0.2, 5]\nmax_band_share_pct = 20\nmax_dynamic_range_pct = 50\n",
        )
        .unwrap();
        let g = c.grid.unwrap();
        assert_eq!(g.band_hz, [0.2, 5.0]);
        assert_eq!(g.max_band_share_pct, Some(20.0));
        // 10 MW/s over 100,000 GPUs: 100 W/s per GPU, 800 W/s for 8.
        let up = g.ramp_limit_node_w_per_s(Ramp::Up, 8).unwrap();
        assert!((up - 800.0).abs() < 1e-9, "{up}");
        assert_eq!(g.ramp_limit_node_w_per_s(Ramp::Down, 8), Some(4000.0));
        let g = with_grid("[grid]\nmax_dynamic_range_w = 3000\n")
            .unwrap()
            .grid
            .unwrap();
        assert_eq!(g.band_hz, DEFAULT_BAND_HZ);
        assert_eq!(g.ramp_limit_node_w_per_s(Ramp::Up, 8), None);
        assert!(with_grid("").unwrap().grid.is_none());
    }

    #[test]
    fn a_bad_grid_table_names_its_key_and_line() {
        for (table, field, says) in [
            ("[grid]\nband_hz = [20, 0.1]\n", "grid.band_hz", "not below"),
            (
                "[grid]\nband_hz = [0, 20]\n",
                "grid.band_hz",
                "out of range",
            ),
            ("[grid]\nband_hz = [0.1]\n", "grid.band_hz", "a pair"),
            (
                "[grid]\nramp_up_mw_per_s = 10\n",
                "grid.ramp_up_mw_per_s",
                "GPU count",
            ),
            (
                "[grid]\ngpus = 8\nramp_down_w_per_s_per_gpu = 1\nramp_down_mw_per_s = 1\n",
                "grid.ramp_down_mw_per_s",
                "limited twice",
            ),
            (
                "[grid]\ngpus = 8\nramp_down_w_per_s_per_gpu = 1\n",
                "grid.gpus",
                "without a site limit",
            ),
            (
                "[grid]\ngpus = 0\nramp_up_mw_per_s = 1\n",
                "grid.gpus",
                "1 to",
            ),
            (
                "[grid]\nramp_up_w_per_s_per_gpu = -5\n",
                "grid.ramp_up_w_per_s_per_gpu",
                "out of range",
            ),
            (
                "[grid]\nmax_band_share_pct = 120\n",
                "grid.max_band_share_pct",
                "out of range",
            ),
            (
                "[grid]\nmax_dynamic_range_pct = 50\nmax_dynamic_range_w = 100\n",
                "grid.max_dynamic_range_w",
                "limited twice",
            ),
        ] {
            let e = with_grid(table).unwrap_err();
            assert_eq!(e.field.as_deref(), Some(field), "{table}: {e}");
            assert!(e.line >= 7, "{table}: {e}");
            assert!(e.message.contains(says), "{table}: {e}");
        }
        let e = with_grid("[grid]\nramp_up_w_per_s = 1\n").unwrap_err();
        assert!(e.message.contains("unknown field"), "{e}");
    }
}
