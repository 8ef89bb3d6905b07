//! A prediction's CSV tables: `spectrum.csv` (the headline's bands),
//! `scenarios.csv` (one row per scenario, empty cells where a figure has
//! none), and the run report's own `envelope.csv` and `grid.csv` (one row
//! per scenario and window or metric, `rung_id` the scenario's id).

use super::super::{Prediction, Scenario};
use powerlab_collate::render::{write_envelope, write_grid, write_rows};
use powerlab_samples::error::CollateError;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// The spectrum's and the scenarios' file names.
pub use powerlab_rundir::files::predict::{SCENARIOS_CSV, SPECTRUM_CSV};

/// One row of `scenarios.csv`.
#[derive(Debug, Serialize)]
pub struct ScenarioRow<'a> {
    /// Scenario id (0: the schedule's own).
    pub id: u32,
    /// Its label.
    pub label: &'a str,
    /// The measured profile.
    pub profile: &'a str,
    /// Stagger groups.
    pub stagger_groups: u32,
    /// Mean, W.
    pub mean_w: f64,
    /// Its ±.
    pub mean_pm_w: Option<f64>,
    /// p90 − p10, W.
    pub swing_w: f64,
    /// Its ±.
    pub swing_pm_w: Option<f64>,
    /// p99 − p1, W.
    pub spread_w: f64,
    /// Its ±.
    pub spread_pm_w: Option<f64>,
    /// Highest point, W.
    pub peak_w: f64,
    /// Lowest point, W.
    pub min_w: f64,
    /// Percentiles, W.
    pub p1_w: f64,
    /// 10th.
    pub p10_w: f64,
    /// 90th.
    pub p90_w: f64,
    /// 99th.
    pub p99_w: f64,
    /// Energy over the span, MWh.
    pub energy_mwh: f64,
    /// Sets of measured rungs behind the ±.
    pub sets: usize,
    /// Their mode: `in_phase`, `staggered` or `every mode`.
    pub sets_from: &'a str,
    /// The measured rungs used, `;`-joined.
    pub sources: String,
    /// Swing taken off against plain, W.
    pub swing_cut_w: Option<f64>,
    /// Its ±.
    pub swing_cut_pm_w: Option<f64>,
    /// The same as a share of the plain swing, %.
    pub swing_cut_pct: Option<f64>,
    /// Mean added against plain, W.
    pub extra_mean_w: Option<f64>,
    /// Its ±.
    pub extra_mean_pm_w: Option<f64>,
    /// Energy added over the span, MWh.
    pub extra_energy_mwh: Option<f64>,
    /// What its figures rest on, ` | `-joined.
    pub notes: String,
}

impl<'a> ScenarioRow<'a> {
    /// The row of `s`.
    pub fn of(s: &'a Scenario) -> Self {
        let v = s.vs_plain.as_ref();
        ScenarioRow {
            id: s.id,
            label: &s.label,
            profile: &s.profile,
            stagger_groups: s.stagger_groups,
            mean_w: s.mean_w.value,
            mean_pm_w: s.mean_w.plus_minus,
            swing_w: s.swing_w.value,
            swing_pm_w: s.swing_w.plus_minus,
            spread_w: s.spread_w.value,
            spread_pm_w: s.spread_w.plus_minus,
            peak_w: s.levels.peak_w,
            min_w: s.levels.min_w,
            p1_w: s.levels.p1_w,
            p10_w: s.levels.p10_w,
            p90_w: s.levels.p90_w,
            p99_w: s.levels.p99_w,
            energy_mwh: s.energy_mwh,
            sets: s.sets,
            sets_from: &s.sets_from,
            sources: s.sources.join(";"),
            swing_cut_w: v.map(|v| v.swing_cut_w.value),
            swing_cut_pm_w: v.and_then(|v| v.swing_cut_w.plus_minus),
            swing_cut_pct: v.map(|v| v.swing_cut_pct),
            extra_mean_w: v.map(|v| v.extra_mean_w.value),
            extra_mean_pm_w: v.and_then(|v| v.extra_mean_w.plus_minus),
            extra_energy_mwh: v.map(|v| v.extra_energy_mwh),
            notes: s.notes.join(" | "),
        }
    }
}

/// Writes `spectrum.csv`, `scenarios.csv`, `envelope.csv` and `grid.csv`
/// into `dir`.
///
/// # Errors
///
/// [`CollateError::Io`] naming the file when one cannot be written.
pub fn write_tables(p: &Prediction, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
    let spectrum = dir.join(SPECTRUM_CSV);
    write_rows(&p.spectrum, &spectrum)?;
    let scenarios = dir.join(SCENARIOS_CSV);
    let rows: Vec<ScenarioRow<'_>> = p.scenarios.iter().map(ScenarioRow::of).collect();
    write_rows(&rows, &scenarios)?;
    Ok(vec![
        spectrum,
        scenarios,
        write_envelope(&p.envelope, dir)?,
        write_grid(&p.grid, dir)?,
    ])
}
