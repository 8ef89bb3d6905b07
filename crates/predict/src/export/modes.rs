//! The grid modes' forcing ([`powerlab_analysis::grid::modes`]), where the `[grid]`
//! declares modes: `modes.csv` (one row per mode) and the "Grid modes"
//! section of `report.md`. Nothing is written without modes.

use super::super::Prediction;
use powerlab_analysis::grid::modes::{ModeForcing, ModeStudy, SIGNIFICANT_SHARE};
use powerlab_collate::render::text;
use powerlab_collate::render::write_rows;
use powerlab_core::units::W_PER_MW;
use powerlab_samples::error::CollateError;
use powerlab_samples::format::{fmt_ms, fmt_power, fmt_power_pm};
use serde::Serialize;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The modes' file name.
pub use powerlab_rundir::files::predict::MODES_CSV;

/// One row of `modes.csv`.
#[derive(Debug, Serialize)]
pub struct ModeRow<'a> {
    /// The mode's name.
    pub mode: &'a str,
    /// Its centre, Hz.
    pub hz: f64,
    /// Its band's low edge, Hz.
    pub band_lo_hz: f64,
    /// Its band's high edge, Hz.
    pub band_hi_hz: f64,
    /// The harmonics inside the band, `;`-joined numbers k.
    pub harmonics_in_band: String,
    /// Their amplitudes' root-sum-square, MW.
    pub forcing_mw: f64,
    /// The fundamental or a significant harmonic is in the band.
    pub flagged: bool,
    /// Where none is in band: the nearest significant harmonic, Hz.
    pub nearest_harmonic_hz: Option<f64>,
    /// Its amplitude, MW.
    pub nearest_amplitude_mw: Option<f64>,
    /// Its distance from the band, Hz.
    pub gap_hz: Option<f64>,
    /// The highest frequency the measured cycles hold, Hz, where the band
    /// reaches above it (empty: resolved).
    pub unresolved_above_hz: Option<f64>,
}

impl<'a> ModeRow<'a> {
    /// The row of `f`.
    pub fn of(f: &'a ModeForcing) -> Self {
        let ks: Vec<String> = f.in_band.iter().map(|h| h.k.to_string()).collect();
        ModeRow {
            mode: &f.mode.name,
            hz: f.mode.hz,
            band_lo_hz: f.band_lo_hz,
            band_hi_hz: f.band_hi_hz,
            harmonics_in_band: ks.join(";"),
            forcing_mw: f.forcing_mw,
            flagged: f.flagged,
            nearest_harmonic_hz: f.nearest.map(|n| n.harmonic.hz),
            nearest_amplitude_mw: f.nearest.map(|n| n.harmonic.amplitude_mw),
            gap_hz: f.nearest.map(|n| n.gap_hz),
            unresolved_above_hz: f.unresolved_above_hz,
        }
    }
}

/// Writes `dir/modes.csv` where `p` studied modes.
///
/// # Errors
///
/// [`CollateError::Io`] naming the file when it cannot be written.
pub fn write_modes(p: &Prediction, dir: &Path) -> Result<Option<PathBuf>, CollateError> {
    let Some(m) = &p.modes else {
        return Ok(None);
    };
    let path = dir.join(MODES_CSV);
    let rows: Vec<ModeRow<'_>> = m.modes.iter().map(ModeRow::of).collect();
    write_rows(&rows, &path)?;
    Ok(Some(path))
}

/// The headline's swing ± as a share of the swing (None: no ±).
fn swing_rel(p: &Prediction) -> Option<f64> {
    let s = p.scenarios.first()?.swing_w;
    s.plus_minus
        .filter(|_| s.value.abs() > 0.0)
        .map(|pm| pm / s.value.abs())
}

/// A power in MW at its scale, with the relative ± where given (`0 MW`
/// for none).
fn mw(v_mw: f64, rel: Option<f64>) -> String {
    if v_mw == 0.0 {
        return "0 MW".into();
    }
    fmt_power_pm(v_mw * W_PER_MW, rel.map(|r| r * v_mw * W_PER_MW))
}

/// Appends "Grid modes" where `p` studied modes (nothing otherwise).
pub(super) fn section(s: &mut String, p: &Prediction) {
    let Some(m) = &p.modes else { return };
    let rel = swing_rel(p);
    let _ = writeln!(
        s,
        "\n## Grid modes\n\nThe headline's expected {} ms iteration forces the grid at {:.4} Hz and its harmonics (largest {}). Per declared `[[grid.mode]]`: the harmonics inside its band and their root-sum-square amplitude (single-sided peak, 2|c_k| of one iteration's DFT; ± the headline swing's relative ±); ⚠ where the fundamental or a harmonic of at least {:.0} % of the largest lies in the band (`{}`).\n",
        fmt_ms(m.period_ms),
        1000.0 / m.period_ms,
        fmt_power(m.largest_mw * W_PER_MW),
        SIGNIFICANT_SHARE * 100.0,
        super::modes::MODES_CSV
    );
    let _ = writeln!(
        s,
        "| mode | band Hz | harmonics in band | forcing | flag | nearest harmonic |\n|---|---|---|---|---|---|"
    );
    for f in &m.modes {
        let ks: Vec<String> = f.in_band.iter().map(|h| h.k.to_string()).collect();
        let nearest = f.nearest.map_or_else(
            || "–".to_string(),
            |n| {
                format!(
                    "{:.3} Hz (k {}), {}, {:.3} Hz outside",
                    n.harmonic.hz,
                    n.harmonic.k,
                    mw(n.harmonic.amplitude_mw, rel),
                    n.gap_hz
                )
            },
        );
        let _ = writeln!(
            s,
            "| {} ({} Hz, ζ {:.3}) | {:.3}–{:.3} | {} | {} | {} | {nearest} |",
            text(&f.mode.name),
            f.mode.hz,
            f.damping_ratio,
            f.band_lo_hz,
            f.band_hi_hz,
            if ks.is_empty() {
                "none".into()
            } else {
                ks.join(", ")
            },
            mw(f.forcing_mw, rel),
            match (f.flagged, f.unresolved_above_hz) {
                (true, _) => "**⚠ in band**".to_string(),
                (false, Some(hz)) =>
                    format!("**not resolved**: the measured cycles hold nothing above {hz:.1} Hz"),
                (false, None) => "clear".to_string(),
            },
        );
    }
    retune_line(s, m);
}

/// Half-bandwidths from a mode's centre beyond which a harmonic is out
/// of its band.
const OUT_OF_BAND: f64 = 1.0;

/// Appends the retuning's sentences (nothing without a retuning).
fn retune_line(s: &mut String, m: &ModeStudy) {
    let Some(r) = &m.retune else { return };
    let ratio = r
        .response_ratio()
        .map_or_else(String::new, |x| format!(", {x:.2}× smaller"));
    let period = format!(
        "an iteration of {} ms (Δ {:+.2} %)",
        fmt_ms(r.period_ms),
        r.change_pct
    );
    let moved = if r.clearance_best > OUT_OF_BAND {
        format!(
            "{period} moves every significant harmonic {:.1} half-bandwidths from every mode (now {:.1})",
            r.clearance_best, r.clearance_now
        )
    } else {
        format!(
            "no iteration keeps every significant harmonic out of every band; the best, {period}, keeps them {:.2} half-bandwidths from every mode's centre (now {:.2})",
            r.clearance_best, r.clearance_now
        )
    };
    let _ = writeln!(
        s,
        "\nRetuning within ± {} %: {moved}; in-band forcing {} → {} (summed over the modes). The modes' response, an index of the forcing as each mode amplifies it (each harmonic times 1/√((1 − r²)² + (2ζr)²) at r = f / f_mode, root-sum-square, summed over the modes; 1/(2ζ) on resonance, about 1 well below it): {} → {}{ratio}. This assumes each harmonic keeps its amplitude as the period stretches (the iteration's shape scaled to it); the period was searched in {} steps each side.",
        fmt_ms(r.range_pct),
        mw(r.forcing_now_mw, None),
        mw(r.forcing_best_mw, None),
        mw(r.response_now_mw, None),
        mw(r.response_best_mw, None),
        powerlab_analysis::grid::modes::RETUNE_STEPS,
    );
}
