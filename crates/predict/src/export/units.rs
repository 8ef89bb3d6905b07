//! Energies written at their scale for a person, the twin of
//! [`powerlab_samples::format::fmt_power`]: `1.234 GWh`, `84.123 MWh`,
//! `743.7 kWh`, `66.7 Wh`; and the lifecycle's figures kept in MW (MW,
//! MW/s, MW/min) written at the power's scale. The CSV and JSON files
//! keep their fixed units; only the report's text scales.

use powerlab_core::units::{W_PER_GW, W_PER_KW, W_PER_MW};
use powerlab_samples::format::{fmt_power, fmt_power_signed};

/// An energy's scale: GWh and MWh (three decimals) from 1 GWh and 1 MWh,
/// kWh (one decimal) from 1 kWh, else Wh (one decimal), as
/// `fmt_power` writes MW, kW and W; (divisor, unit, decimals).
fn energy_scale(magnitude_wh: f64) -> (f64, &'static str, usize) {
    // Wh per kWh, MWh and GWh are W per kW, MW and GW.
    if magnitude_wh >= W_PER_GW {
        (W_PER_GW, "GWh", 3)
    } else if magnitude_wh >= W_PER_MW {
        (W_PER_MW, "MWh", 3)
    } else if magnitude_wh >= W_PER_KW {
        (W_PER_KW, "kWh", 1)
    } else {
        (1.0, "Wh", 1)
    }
}

/// An energy in MWh (as the prediction holds it) written at its scale:
/// `84.123 MWh`, `66.7 Wh`.
pub(super) fn fmt_energy_mwh(mwh: f64) -> String {
    let wh = mwh * W_PER_MW;
    let (d, unit, n) = energy_scale(wh.abs());
    format!("{:.n$} {unit}", wh / d)
}

/// A signed energy change in MWh written at its scale: `+1.250 MWh`,
/// `−300.0 kWh`.
pub(super) fn fmt_energy_mwh_signed(mwh: f64) -> String {
    let wh = mwh * W_PER_MW;
    let (d, unit, n) = energy_scale(wh.abs());
    format!("{:+.n$} {unit}", wh / d)
}

/// A power in MW written at its scale (`84.123 MW`, `743.7 kW`); `–`
/// where it could not be measured.
pub(super) fn fmt_mw(mw: f64) -> String {
    if mw.is_finite() {
        fmt_power(mw * W_PER_MW)
    } else {
        "–".into()
    }
}

/// A signed power change in MW written at its scale (`+1.250 MW`,
/// `−300.0 kW`); `–` where it could not be measured.
pub(super) fn fmt_mw_signed(mw: f64) -> String {
    if mw.is_finite() {
        fmt_power_signed(mw * W_PER_MW, None)
    } else {
        "–".into()
    }
}

/// A lifecycle figure in `unit`: one in MW, MW/s or MW/min written at the
/// power's scale (`12.500 MW/min`, `743.7 kW/s`), any other as it is.
pub(super) fn fmt_figure(value: f64, unit: &str) -> String {
    match unit.strip_prefix("MW") {
        Some(per) if value.is_finite() => format!("{}{per}", fmt_power(value * W_PER_MW)),
        _ => format!("{value:.2} {unit}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn energies_scale_like_powers() {
        assert_eq!(fmt_energy_mwh(2_345.678_9), "2.346 GWh");
        assert_eq!(fmt_energy_mwh(84.123_4), "84.123 MWh");
        assert_eq!(fmt_energy_mwh(1.0), "1.000 MWh");
        assert_eq!(fmt_energy_mwh(0.743_71), "743.7 kWh");
        assert_eq!(fmt_energy_mwh(8.0 * 500.0 * 60.0 / 3600.0 / 1e6), "66.7 Wh");
        assert_eq!(fmt_energy_mwh(0.0), "0.0 Wh");
        assert_eq!(fmt_energy_mwh_signed(-0.3), "-300.0 kWh");
        assert_eq!(fmt_energy_mwh_signed(1.25), "+1.250 MWh");
        assert_eq!(fmt_energy_mwh_signed(-0.000_012), "-12.0 Wh");
    }

    #[test]
    fn lifecycle_figures_scale_their_megawatts() {
        assert_eq!(fmt_mw(84.123_4), "84.123 MW");
        assert_eq!(fmt_mw(0.743_7), "743.7 kW");
        assert_eq!(fmt_mw(f64::NAN), "–");
        assert_eq!(fmt_mw_signed(-0.0042), "-4.2 kW");
        assert_eq!(fmt_figure(12.5, "MW/min"), "12.500 MW/min");
        assert_eq!(fmt_figure(0.5, "MW/s"), "500.0 kW/s");
        assert_eq!(fmt_figure(0.004, "MW"), "4.0 kW");
        assert_eq!(fmt_figure(3.0, "%"), "3.00 %");
    }
}
