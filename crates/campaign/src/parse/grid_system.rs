//! `[grid.system]`: the case and bus of the grid study, its windows and
//! step, and its limits, checked as the rest of `[grid]`: every number
//! ranged, units in the names, unknown keys refused, errors at the key's
//! line.

use super::raw::RawGridSystem;
use crate::ctx::Ctx;
use crate::error::CampaignError;
use crate::model::{
    DEFAULT_EVENT_WINDOW_S, DEFAULT_PLAYBACK_STEP_MS, DEFAULT_STEADY_WINDOW_S, EVENT_LEAD_S,
    GridSystem,
};
use toml::Spanned;

/// Highest bus number a case may name (PSS/E's highest, 999,997).
pub const MAX_BUS: i64 = 999_997;
/// The steady window's range, s: long enough to settle, short enough to
/// simulate (a long span is never simulated whole).
pub const STEADY_WINDOW_S_RANGE: (f64, f64) = (5.0, 600.0);
/// An event window's range, s (above the lead before the event).
pub const EVENT_WINDOW_S_RANGE: (f64, f64) = (EVENT_LEAD_S, 600.0);
/// The playback's step range, ms (ANDES's own step is 1/30 s by default;
/// below 1 ms a dynamic case's playback takes hours).
pub const PLAYBACK_STEP_MS_RANGE: (f64, f64) = (1.0, 1000.0);
/// The frequency limits' range, mHz (0 excluded): up to 10 Hz.
pub const MHZ_RANGE: (f64, f64) = (0.0, 10_000.0);
/// The RoCoF limit's range, Hz/s (0 excluded).
pub const ROCOF_HZ_PER_S_RANGE: (f64, f64) = (0.0, 100.0);
/// The tie oscillation limit's range, MW (0 excluded).
pub const TIE_MW_RANGE: (f64, f64) = (0.0, 100_000.0);

/// `[grid.system]`: `case` and `bus` required, the rest ranged.
pub(crate) fn system(
    ctx: &Ctx<'_>,
    s: &Spanned<RawGridSystem>,
) -> Result<GridSystem, CampaignError> {
    let r = s.get_ref();
    let missing = |k: &str, allowed: &str| {
        ctx.err(
            s.span(),
            format!("grid.system.{k}"),
            format!("[grid.system] without `{k}`"),
            Some(allowed),
        )
    };
    let Some(case) = &r.case else {
        return Err(missing(
            "case",
            "case = \"kundur/kundur_full.xlsx\" (a case under ANDES's andes/cases/, or a file)",
        ));
    };
    let name = case.get_ref().trim();
    if name.is_empty() || name.chars().any(char::is_control) {
        return Err(ctx.err(
            case.span(),
            "grid.system.case",
            "the case is empty or holds a control character",
            Some("a case path such as \"kundur/kundur_full.xlsx\""),
        ));
    }
    if r.bus.is_none() {
        return Err(missing(
            "bus",
            "bus = N, the case's bus number (1 ..= 999997)",
        ));
    }
    let bus = ctx.count(&r.bus, "grid.system.bus", 1, MAX_BUS)?;
    let limit = |v: &Option<Spanned<f64>>, key: &str, range: (f64, f64)| match v {
        None => Ok(None),
        Some(_) => ctx.ranged(v, key, 0.0, range, true).map(Some),
    };
    Ok(GridSystem {
        case: name.to_string(),
        bus,
        steady_window_s: ctx.ranged(
            &r.steady_window_s,
            "grid.system.steady_window_s",
            DEFAULT_STEADY_WINDOW_S,
            STEADY_WINDOW_S_RANGE,
            false,
        )?,
        event_window_s: ctx.ranged(
            &r.event_window_s,
            "grid.system.event_window_s",
            DEFAULT_EVENT_WINDOW_S,
            EVENT_WINDOW_S_RANGE,
            true,
        )?,
        step_ms: ctx.ranged(
            &r.step_ms,
            "grid.system.step_ms",
            DEFAULT_PLAYBACK_STEP_MS,
            PLAYBACK_STEP_MS_RANGE,
            false,
        )?,
        max_df_mhz: limit(&r.max_df_mhz, "grid.system.max_df_mhz", MHZ_RANGE)?,
        max_rocof_hz_per_s: limit(
            &r.max_rocof_hz_per_s,
            "grid.system.max_rocof_hz_per_s",
            ROCOF_HZ_PER_S_RANGE,
        )?,
        max_osc_pp_mhz: limit(&r.max_osc_pp_mhz, "grid.system.max_osc_pp_mhz", MHZ_RANGE)?,
        max_osc_pp_tie_mw: limit(
            &r.max_osc_pp_tie_mw,
            "grid.system.max_osc_pp_tie_mw",
            TIE_MW_RANGE,
        )?,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking

    fn with(table: &str) -> Result<crate::Campaign, crate::CampaignError> {
        crate::parse_str(
            "t.toml",
            &format!(
                "[campaign]\nname = \"t\"\n[[phase]]\nkind = \"sustained\"\nduration_s = 5\n[grid]\nmax_band_share_pct = 20\n[grid.system]\n{table}"
            ),
        )
    }

    #[test]
    fn a_grid_system_is_read_with_its_defaults_and_limits() {
        let c = with("case = \"kundur/kundur_full.xlsx\"\nbus = 7\nmax_osc_pp_mhz = 20\nmax_osc_pp_tie_mw = 15\n").unwrap();
        let s = c.grid.unwrap().system.unwrap();
        assert_eq!(s.case, "kundur/kundur_full.xlsx");
        assert_eq!(s.bus, 7);
        assert_eq!(s.steady_window_s, crate::model::DEFAULT_STEADY_WINDOW_S);
        assert_eq!(s.step_ms, crate::model::DEFAULT_PLAYBACK_STEP_MS);
        assert_eq!(s.max_osc_pp_mhz, Some(20.0));
        assert_eq!(s.max_df_mhz, None);
        assert!(s.limits_oscillation());
        // Without a system nothing new is serialized (report.json keeps
        // its bytes).
        let plain = with("case = \"a\"\nbus = 1\n").unwrap().grid.unwrap();
        let mut none = plain.clone();
        none.system = None;
        let table = toml::Value::try_from(&none).unwrap();
        assert!(table.get("system").is_none(), "{table}");
        let back: crate::Grid = toml::Value::try_from(&plain).unwrap().try_into().unwrap();
        assert_eq!(back, plain);
    }

    #[test]
    fn a_bad_grid_system_names_its_key_and_line() {
        for (table, field, says) in [
            ("bus = 7\n", "grid.system.case", "without `case`"),
            ("case = \"k\"\n", "grid.system.bus", "without `bus`"),
            ("case = \" \"\nbus = 7\n", "grid.system.case", "empty"),
            ("case = \"k\"\nbus = 0\n", "grid.system.bus", "1 to"),
            (
                "case = \"k\"\nbus = 7\nsteady_window_s = 1\n",
                "grid.system.steady_window_s",
                "out of range",
            ),
            (
                "case = \"k\"\nbus = 7\nevent_window_s = 2\n",
                "grid.system.event_window_s",
                "out of range",
            ),
            (
                "case = \"k\"\nbus = 7\nstep_ms = 0.5\n",
                "grid.system.step_ms",
                "out of range",
            ),
            (
                "case = \"k\"\nbus = 7\nmax_df_mhz = 0\n",
                "grid.system.max_df_mhz",
                "out of range",
            ),
            (
                "case = \"k\"\nbus = 7\nmax_rocof_hz_per_s = 500\n",
                "grid.system.max_rocof_hz_per_s",
                "out of range",
            ),
            (
                "case = \"k\"\nbus = 7\nmax_osc_pp_tie_mw = -1\n",
                "grid.system.max_osc_pp_tie_mw",
                "out of range",
            ),
        ] {
            let e = with(table).unwrap_err();
            assert_eq!(e.field.as_deref(), Some(field), "{table}: {e}");
            assert!(e.line >= 8, "{table}: {e}");
            assert!(e.message.contains(says), "{table}: {e}");
        }
        let e = with("case = \"k\"\nbus = 7\npython = \"/bin/sh\"\n").unwrap_err();
        assert!(e.message.contains("unknown field"), "{e}");
    }
}
