//! `[grid]`: the utility interconnect's limits on the load's swings (ramp
//! rates, dynamic range, the critical band and the largest share of the
//! fluctuation's energy inside it), checked as `[supply]` is: every key in
//! range, units in the names, errors at the key's line.

use super::raw::{RawGrid, RawGridMode};
use crate::ctx::Ctx;
use crate::error::CampaignError;
use crate::model::{DEFAULT_BAND_HZ, Grid, GridMode};
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
/// A mode's damping ratio ζ: above 0, below 1 (both excluded).
pub const DAMPING_RATIO_RANGE: (f64, f64) = (0.0, 1.0);
/// How far the iteration may be retuned, ± %: above 0, at most 50.
pub const RETUNE_ITERATION_PCT_RANGE: (f64, f64) = (0.0, 50.0);

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
        modes: modes(ctx, &g.mode)?,
        retune_iteration_pct: optional(
            ctx,
            &g.retune_iteration_pct,
            "grid.retune_iteration_pct",
            RETUNE_ITERATION_PCT_RANGE,
        )?,
        max_step_mw: optional(ctx, &g.max_step_mw, "grid.max_step_mw", SITE_MW_RANGE)?,
        ramp_up_mw_per_min: optional(
            ctx,
            &g.ramp_up_mw_per_min,
            "grid.ramp_up_mw_per_min",
            SITE_MW_RANGE,
        )?,
        ramp_down_mw_per_min: optional(
            ctx,
            &g.ramp_down_mw_per_min,
            "grid.ramp_down_mw_per_min",
            SITE_MW_RANGE,
        )?,
        max_load_loss_mw: optional(
            ctx,
            &g.max_load_loss_mw,
            "grid.max_load_loss_mw",
            SITE_MW_RANGE,
        )?,
        system: g
            .system
            .as_ref()
            .map(|s| super::grid_system::system(ctx, s))
            .transpose()?,
    })
}

/// A site's step, load loss or per-minute ramp limit, MW (0 excluded): up
/// to 100 GW.
pub const SITE_MW_RANGE: (f64, f64) = (0.0, 100_000.0);

/// `[[grid.mode]]`: each a unique non-empty `name`, `hz` in
/// [`BAND_HZ_RANGE`] and exactly one of `bandwidth_hz` (above 0, below
/// `2 · hz`: the band stays above 0 Hz) or `damping_ratio` (0 < ζ < 1);
/// each error names `grid.mode[i].key` (i from 0) at the value's line.
fn modes(ctx: &Ctx<'_>, raw: &[Spanned<RawGridMode>]) -> Result<Vec<GridMode>, CampaignError> {
    let mut out: Vec<GridMode> = Vec::with_capacity(raw.len());
    for (i, m) in raw.iter().enumerate() {
        let key = |k: &str| format!("grid.mode[{i}].{k}");
        let r = m.get_ref();
        let missing = |k: &str, allowed: &str| {
            ctx.err(
                m.span(),
                key(k),
                format!("a mode without `{k}`"),
                Some(allowed),
            )
        };
        let Some(name) = &r.name else {
            return Err(missing("name", "name = \"inter-area\" (unique in [grid])"));
        };
        let label = name.get_ref().trim();
        if label.is_empty() || out.iter().any(|o| o.name == label) {
            return Err(ctx.err(
                name.span(),
                key("name"),
                format!("`{label}` is empty or names another mode too"),
                Some("a unique, non-empty name per [[grid.mode]]"),
            ));
        }
        // The name is a table row's cell and a heading's word in every
        // report: a newline or a `|` would forge rows.
        if let Some(why) = crate::names::name_problem(label) {
            return Err(ctx.err(
                name.span(),
                key("name"),
                why,
                Some(crate::names::NAME_ALLOWED),
            ));
        }
        if r.hz.is_none() {
            return Err(missing("hz", "hz = f with 0 < f <= 1000"));
        }
        let hz = ctx.ranged(&r.hz, &key("hz"), 0.0, BAND_HZ_RANGE, true)?;
        let (bandwidth_hz, damping_ratio) = mode_band(ctx, r, hz, &key, m.span())?;
        out.push(GridMode {
            name: label.to_string(),
            hz,
            bandwidth_hz,
            damping_ratio,
        });
    }
    Ok(out)
}

/// A mode's band: exactly one of `bandwidth_hz` (0 < b < 2 · hz) and
/// `damping_ratio` (0 < ζ < 1).
fn mode_band(
    ctx: &Ctx<'_>,
    r: &RawGridMode,
    hz: f64,
    key: &dyn Fn(&str) -> String,
    span: std::ops::Range<usize>,
) -> Result<(Option<f64>, Option<f64>), CampaignError> {
    match (&r.bandwidth_hz, &r.damping_ratio) {
        (Some(_), Some(z)) => Err(ctx.err(
            z.span(),
            key("damping_ratio"),
            "the mode's band is given twice (also bandwidth_hz)",
            Some("one of bandwidth_hz, damping_ratio"),
        )),
        (None, None) => Err(ctx.err(
            span,
            key("bandwidth_hz"),
            "a mode without its band",
            Some("one of bandwidth_hz = b (0 < b < 2 · hz), damping_ratio = ζ (0 < ζ < 1)"),
        )),
        (Some(b), None) => {
            let x = *b.get_ref();
            if x.is_finite() && x > 0.0 && x < 2.0 * hz {
                return Ok((Some(x), None));
            }
            Err(ctx.err(
                b.span(),
                key("bandwidth_hz"),
                format!("{x} is out of range"),
                Some(&format!(
                    "0 < bandwidth_hz < {} (twice hz: the band stays above 0 Hz)",
                    2.0 * hz
                )),
            ))
        }
        (None, Some(z)) => {
            let x = *z.get_ref();
            if x.is_finite() && x > DAMPING_RATIO_RANGE.0 && x < DAMPING_RATIO_RANGE.1 {
                return Ok((None, Some(x)));
            }
            Err(ctx.err(
                z.span(),
                key("damping_ratio"),
                format!("{x} is out of range"),
                Some("0 < damping_ratio < 1"),
            ))
        }
    }
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

    const TWO_MODES: &str = "[grid]\nretune_iteration_pct = 5\n[[grid.mode]]\nname = \"inter-area\"\nhz = 0.5\ndamping_ratio = 0.05\n[[grid.mode]]\nname = \"plant\"\nhz = 1.5\nbandwidth_hz = 0.2\n";

    #[test]
    fn grid_modes_are_read_with_their_bands() {
        let g = with_grid(TWO_MODES).unwrap().grid.unwrap();
        assert_eq!(g.retune_iteration_pct, Some(5.0));
        assert_eq!(g.modes.len(), 2);
        let [lo, hi] = g.modes[0].band_hz();
        assert!((lo - 0.475).abs() < 1e-12 && (hi - 0.525).abs() < 1e-12);
        assert_eq!(g.modes[0].damping(), 0.05);
        let [lo, hi] = g.modes[1].band_hz();
        assert!((lo - 1.4).abs() < 1e-12 && (hi - 1.6).abs() < 1e-12);
        assert!((g.modes[1].damping() - 0.2 / 3.0).abs() < 1e-12);
        // No modes: nothing new serialized (report.json keeps its bytes).
        let plain = with_grid("[grid]\nmax_band_share_pct = 20\n")
            .unwrap()
            .grid
            .unwrap();
        let table = toml::Value::try_from(&plain).unwrap();
        assert!(table.get("modes").is_none(), "{table}");
        let back: crate::Grid = toml::Value::try_from(&g).unwrap().try_into().unwrap();
        assert_eq!(back, g);
    }

    /// The file line of the last line of `table` that is `needle`
    /// (`with_grid` puts 5 lines before the table).
    fn line_of(table: &str, needle: &str) -> usize {
        let lines: Vec<&str> = table.lines().collect();
        5 + 1 + lines.iter().rposition(|l| *l == needle).unwrap()
    }

    #[test]
    fn a_bad_grid_mode_names_its_key_and_line() {
        let m = |body: &str| {
            format!(
                "[grid]\n[[grid.mode]]\nname = \"a\"\nhz = 1\ndamping_ratio = 0.1\n[[grid.mode]]\nname = \"b\"\n{body}"
            )
        };
        // (table, key, the line the error is at, what it says); a missing
        // key is reported at its [[grid.mode]] table.
        for (table, field, at, says) in [
            (
                m("hz = 0\nbandwidth_hz = 0.1\n"),
                "grid.mode[1].hz",
                "hz = 0",
                "out of range",
            ),
            (
                m("hz = 1200\nbandwidth_hz = 0.1\n"),
                "grid.mode[1].hz",
                "hz = 1200",
                "out of range",
            ),
            (
                m("hz = 2\nbandwidth_hz = 0.2\ndamping_ratio = 0.1\n"),
                "grid.mode[1].damping_ratio",
                "damping_ratio = 0.1",
                "given twice",
            ),
            (
                m("hz = 2\nbandwidth_hz = 4\n"),
                "grid.mode[1].bandwidth_hz",
                "bandwidth_hz = 4",
                "out of range",
            ),
            (
                m("hz = 2\nbandwidth_hz = -1\n"),
                "grid.mode[1].bandwidth_hz",
                "bandwidth_hz = -1",
                "out of range",
            ),
            (
                m("hz = 2\ndamping_ratio = 1\n"),
                "grid.mode[1].damping_ratio",
                "damping_ratio = 1",
                "out of range",
            ),
            (
                m("hz = 2\ndamping_ratio = 0\n"),
                "grid.mode[1].damping_ratio",
                "damping_ratio = 0",
                "out of range",
            ),
            (
                m("hz = 2\n"),
                "grid.mode[1].bandwidth_hz",
                "[[grid.mode]]",
                "without its band",
            ),
            (
                m("bandwidth_hz = 0.1\n"),
                "grid.mode[1].hz",
                "[[grid.mode]]",
                "without `hz`",
            ),
            (
                "[grid]\nretune_iteration_pct = 60\n".to_string(),
                "grid.retune_iteration_pct",
                "retune_iteration_pct = 60",
                "out of range",
            ),
        ] {
            let e = with_grid(&table).unwrap_err();
            assert_eq!(e.field.as_deref(), Some(field), "{table}: {e}");
            assert_eq!(e.line, line_of(&table, at), "{table}: {e}");
            assert!(e.message.contains(says), "{table}: {e}");
        }
        let dup = with_grid("[grid]\n[[grid.mode]]\nname = \"a\"\nhz = 1\ndamping_ratio = 0.1\n[[grid.mode]]\nname = \"a\"\nhz = 2\ndamping_ratio = 0.1\n").unwrap_err();
        assert_eq!(dup.field.as_deref(), Some("grid.mode[1].name"), "{dup}");
        let e = with_grid("[grid]\n[[grid.mode]]\nname = \"a\"\nhz = 1\nzeta = 0.1\n").unwrap_err();
        assert!(e.message.contains("unknown field"), "{e}");
    }
}
