//! The grid study's files (`[grid.system]`): `grid_response.csv` (every
//! window from the screen and the simulator, and every lifecycle event's
//! swing-equation RoCoF), `safe_gpus.csv` (the period sweep),
//! `grid_modes.csv` (the modal model's modes as the screen classed them)
//! and the plots `plots/safe_gpus` and `plots/grid_response`. Nothing is
//! written without a `[grid.system]`.

use super::super::Prediction;
use crate::grid_system::metrics::Response;
use crate::grid_system::{GridStudy, bus_mhz, mode_words};
use powerlab_collate::render::write_rows;
use powerlab_collate::render::{
    ResponsePanel, SafeGpusChart, write_grid_response_plot, write_safe_gpus_plot,
};
use powerlab_rundir::files::predict::{GRID_MODES_CSV, GRID_RESPONSE_CSV, SAFE_GPUS_CSV};
use powerlab_samples::error::CollateError;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Where a row of `grid_response.csv` comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The window played through the modal model.
    Screen,
    /// The window played through the simulator.
    Andes,
    /// A lifecycle event's step through the swing equation (every event
    /// of the study, not only the played windows').
    Swing,
}

/// One row of `grid_response.csv`.
#[derive(Debug, Serialize)]
pub struct ResponseRow<'a> {
    /// Where it comes from.
    pub source: Source,
    /// The scenario.
    pub scenario: &'a str,
    /// `steady` or the event's name.
    pub window: &'a str,
    /// The event's time in the lifecycle study, s (empty: steady).
    pub t_event_s: Option<f64>,
    /// The event's load step, MW.
    pub load_step_mw: Option<f64>,
    /// Largest |Δf| at the bus, mHz.
    pub max_df_bus_mhz: Option<f64>,
    /// At the centre of inertia, mHz.
    pub max_df_coi_mhz: Option<f64>,
    /// RoCoF over 100 ms at the bus, Hz/s.
    pub rocof_bus_100ms_hz_per_s: Option<f64>,
    /// Over 500 ms at the bus.
    pub rocof_bus_500ms_hz_per_s: Option<f64>,
    /// Over 100 ms at the centre of inertia.
    pub rocof_coi_100ms_hz_per_s: Option<f64>,
    /// Over 500 ms at the centre of inertia.
    pub rocof_coi_500ms_hz_per_s: Option<f64>,
    /// The load step's swing-equation RoCoF, |ΔP| f0 / (2 Σ H S), Hz/s.
    pub rocof_swing_hz_per_s: Option<f64>,
    /// The steady oscillation's peak-to-peak at the bus, mHz.
    pub osc_pp_bus_mhz: Option<f64>,
    /// At the centre of inertia, mHz.
    pub osc_pp_coi_mhz: Option<f64>,
    /// On the tie, MW.
    pub osc_pp_tie_mw: Option<f64>,
    /// From the event until the bus frequency stays settled, s.
    pub settling_s: Option<f64>,
    /// Whether it settled within the window.
    pub settled: Option<bool>,
    /// Why the simulator gave no figures for this window.
    pub error: Option<&'a str>,
}

impl<'a> ResponseRow<'a> {
    fn of(source: Source, scenario: &'a str, window: &'a str, t: Option<f64>) -> Self {
        ResponseRow {
            source,
            scenario,
            window,
            t_event_s: t,
            load_step_mw: None,
            max_df_bus_mhz: None,
            max_df_coi_mhz: None,
            rocof_bus_100ms_hz_per_s: None,
            rocof_bus_500ms_hz_per_s: None,
            rocof_coi_100ms_hz_per_s: None,
            rocof_coi_500ms_hz_per_s: None,
            rocof_swing_hz_per_s: None,
            osc_pp_bus_mhz: None,
            osc_pp_coi_mhz: None,
            osc_pp_tie_mw: None,
            settling_s: None,
            settled: None,
            error: None,
        }
    }

    fn with(mut self, r: &Response, swing: Option<f64>) -> Self {
        self.load_step_mw = r.load_step_mw;
        self.max_df_bus_mhz = Some(r.max_df_bus_mhz);
        self.max_df_coi_mhz = Some(r.max_df_coi_mhz);
        self.rocof_bus_100ms_hz_per_s = Some(r.rocof_bus_100ms_hz_per_s);
        self.rocof_bus_500ms_hz_per_s = Some(r.rocof_bus_500ms_hz_per_s);
        self.rocof_coi_100ms_hz_per_s = Some(r.rocof_coi_100ms_hz_per_s);
        self.rocof_coi_500ms_hz_per_s = Some(r.rocof_coi_500ms_hz_per_s);
        self.rocof_swing_hz_per_s = swing;
        self.osc_pp_bus_mhz = r.osc_pp_bus_mhz;
        self.osc_pp_coi_mhz = r.osc_pp_coi_mhz;
        self.osc_pp_tie_mw = r.osc_pp_tie_mw;
        self.settling_s = r.settling_s;
        self.settled = r.settled;
        self
    }
}

/// Every row of `grid_response.csv`: the screen's windows, the
/// simulator's, then every lifecycle event's swing-equation RoCoF.
pub fn response_rows(g: &GridStudy) -> Vec<ResponseRow<'_>> {
    let mut rows = Vec::new();
    let swing = |r: &Response| {
        g.model
            .as_ref()
            .zip(r.load_step_mw)
            .map(|((m, _), s)| m.swing_rocof_hz_per_s(s))
    };
    if let Some(s) = &g.screen {
        for (w, r) in g.windows.iter().zip(&s.windows) {
            rows.push(
                ResponseRow::of(Source::Screen, &w.scenario, &w.window, w.t_event_s)
                    .with(r, swing(r)),
            );
        }
    }
    for (w, r) in g.windows.iter().zip(&g.simulated) {
        let row = ResponseRow::of(Source::Andes, &w.scenario, &w.window, w.t_event_s);
        rows.push(match r {
            Ok(r) => row.with(r, swing(r)),
            Err(e) => ResponseRow {
                error: Some(e.as_str()),
                ..row
            },
        });
    }
    if let Some(s) = &g.screen {
        for (e, r) in g.events.iter().zip(&s.swing_hz_per_s) {
            let mut row = ResponseRow::of(Source::Swing, &e.scenario, e.kind.name(), Some(e.t_s));
            row.load_step_mw = Some(e.step_mw);
            row.rocof_swing_hz_per_s = Some(*r);
            rows.push(row);
        }
    }
    rows
}

/// One row of `safe_gpus.csv`.
#[derive(Debug, Serialize)]
pub struct SafeCsvRow<'a> {
    /// The scenario.
    pub scenario: &'a str,
    /// The iteration period, s.
    pub period_s: f64,
    /// The steady oscillation at the job's GPUs: bus, mHz.
    pub osc_pp_bus_mhz: f64,
    /// At the centre of inertia, mHz.
    pub osc_pp_coi_mhz: f64,
    /// On the tie, MW (empty: no tie).
    pub osc_pp_tie_mw: Option<f64>,
    /// The largest GPU count within every declared limit.
    pub safe_gpus: Option<u64>,
    /// The output whose limit sets it.
    pub limited_by: Option<&'a str>,
    /// The harmonic and mode whose band a significant harmonic meets.
    pub danger: Option<&'a str>,
}

/// One row of `grid_modes.csv`.
#[derive(Debug, Serialize)]
pub struct ModeCsvRow {
    /// The mode in words.
    pub mode: String,
    /// `inter_area`, `oscillatory` or `minor`.
    pub kind: crate::grid_system::screen::ModeKind,
    /// Its frequency, Hz.
    pub freq_hz: f64,
    /// Its damping ratio.
    pub damping_ratio: f64,
    /// Its half-power band's low edge, Hz.
    pub band_lo_hz: f64,
    /// Its high edge, Hz.
    pub band_hi_hz: f64,
    /// The facility bus's participation, 0..1.
    pub bus_participation: f64,
    /// Its own peak gain on the bus frequency, mHz per MW.
    pub peak_bus_mhz_per_mw: f64,
    /// On the centre of inertia's, mHz per MW.
    pub peak_coi_mhz_per_mw: f64,
    /// On the tie, MW per MW.
    pub peak_tie_mw_per_mw: f64,
}

/// Writes the grid study's CSV tables and plots into `dir` (plots into
/// `plots_dir`); nothing without a `[grid.system]`.
///
/// # Errors
///
/// [`CollateError`] when a file cannot be written or a plot drawn.
pub fn write_grid(
    p: &Prediction,
    dir: &Path,
    plots_dir: &Path,
) -> Result<Vec<PathBuf>, CollateError> {
    let Some(g) = &p.grid_system else {
        return Ok(Vec::new());
    };
    let mut files = Vec::new();
    let path = dir.join(GRID_RESPONSE_CSV);
    write_rows(&response_rows(g), &path)?;
    files.push(path);
    let Some(s) = &g.screen else {
        return Ok(files);
    };
    let safe: Vec<SafeCsvRow> = s
        .safe
        .iter()
        .map(|r| SafeCsvRow {
            scenario: &r.scenario,
            period_s: r.period_s,
            osc_pp_bus_mhz: r.pp[0],
            osc_pp_coi_mhz: r.pp[1],
            osc_pp_tie_mw: r.pp[2].is_finite().then_some(r.pp[2]),
            safe_gpus: r.safe_gpus,
            limited_by: r.limited_by,
            danger: r.danger.as_deref(),
        })
        .collect();
    let path = dir.join(SAFE_GPUS_CSV);
    write_rows(&safe, &path)?;
    files.push(path);
    let modes: Vec<ModeCsvRow> = s
        .modes
        .iter()
        .map(|x| ModeCsvRow {
            mode: mode_words(x),
            kind: x.kind,
            freq_hz: x.freq_hz,
            damping_ratio: x.damping_ratio,
            band_lo_hz: x.band_hz[0],
            band_hi_hz: x.band_hz[1],
            bus_participation: x.bus_participation,
            peak_bus_mhz_per_mw: x.peak_gain[0],
            peak_coi_mhz_per_mw: x.peak_gain[1],
            peak_tie_mw_per_mw: x.peak_gain[2],
        })
        .collect();
    let path = dir.join(GRID_MODES_CSV);
    write_rows(&modes, &path)?;
    files.push(path);
    if g.limits.pp_mhz.is_some() || g.limits.pp_tie_mw.is_some() {
        files.extend(write_safe_gpus_plot(&safe_chart(g), plots_dir)?);
    }
    let (title, panels) = response_panels(g);
    files.extend(write_grid_response_plot(&title, &panels, plots_dir)?);
    Ok(files)
}

/// The safe-GPU chart: a line per scenario, the headline's danger bands.
pub fn safe_chart(g: &GridStudy) -> SafeGpusChart {
    let s = g.screen.as_ref();
    let lines = g
        .scenarios
        .iter()
        .map(|sc| {
            let pts: Vec<(f64, f64)> = s
                .map(|s| {
                    s.safe
                        .iter()
                        .filter(|r| r.scenario == sc.label)
                        .filter_map(|r| r.safe_gpus.map(|n| (r.period_s, n as f64)))
                        .collect()
                })
                .unwrap_or_default();
            (sc.label.clone(), pts)
        })
        .collect();
    SafeGpusChart {
        caption: format!(
            "largest GPU count within the oscillation limits: {} bus {} (shaded: a harmonic in a mode's band)",
            g.system.case, g.system.bus
        ),
        lines,
        bands: s
            .map(|s| s.danger_bands.iter().map(|b| b.period_s).collect())
            .unwrap_or_default(),
        job: (g.period_s, g.gpus as f64),
    }
}

/// The declared limits in words.
pub fn limits_words(g: &GridStudy) -> String {
    let mut v = Vec::new();
    if let Some(l) = g.limits.pp_mhz {
        v.push(format!("{l} mHz p-p at the bus and the COI"));
    }
    if let Some(l) = g.limits.pp_tie_mw {
        v.push(format!("{l} MW p-p on the tie"));
    }
    if v.is_empty() {
        "none declared".into()
    } else {
        v.join(", ")
    }
}

/// The headline scenario's windows: the screen's and the simulator's Δf
/// at the bus.
fn response_panels(g: &GridStudy) -> (String, Vec<ResponsePanel>) {
    let head = g.scenarios.first().map_or("", |s| s.label.as_str());
    let step_s = g.system.step_ms / 1000.0;
    let pts = |v: &[f64]| -> Vec<(f64, f64)> {
        v.iter()
            .enumerate()
            .map(|(i, y)| (i as f64 * step_s, *y))
            .collect()
    };
    let panels = g
        .windows
        .iter()
        .enumerate()
        .filter(|(_, w)| w.scenario == head)
        .map(|(i, w)| ResponsePanel {
            title: w.name(),
            screen: g
                .screen
                .as_ref()
                .and_then(|s| s.bus_mhz.get(i))
                .map_or_else(Vec::new, |v| pts(v.as_slice())),
            simulated: g
                .playback
                .as_ref()
                .and_then(|p| p.series.get(i))
                .and_then(|r| r.as_ref().ok())
                .map_or_else(Vec::new, |x| pts(bus_mhz(x).as_slice())),
        })
        .collect();
    let title = format!(
        "{head}: Δf at bus {} of {} ({}), each played window",
        g.system.bus,
        g.system.case,
        if g.playback.is_some() {
            "simulator solid, screen dashed"
        } else {
            "screen only: the simulator was not run"
        }
    );
    (title, panels)
}
