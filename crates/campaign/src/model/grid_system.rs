//! `[grid.system]`: the power system the facility connects to, for
//! `powerlab predict`'s grid study (issue 60): a case of a real open
//! dynamic simulator (ANDES), the bus the facility's load sits at, the
//! playback's windows and step, and the limits on what the grid does
//! (frequency deviation, RoCoF, the steady oscillation's peak-to-peak in
//! frequency and on the inter-area tie). A limit not declared is not
//! judged.

use serde::{Deserialize, Serialize};

/// The steady window's length where none is declared, s: long enough for
/// a lightly damped inter-area mode (σ ≈ 0.1–0.2 /s) to settle to a few %.
pub const DEFAULT_STEADY_WINDOW_S: f64 = 60.0;
/// An event window's length where none is declared, s.
pub const DEFAULT_EVENT_WINDOW_S: f64 = 20.0;
/// The playback's step where none is declared, ms.
pub const DEFAULT_PLAYBACK_STEP_MS: f64 = 20.0;

/// `[grid.system]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GridSystem {
    /// The simulator's case: a path under ANDES's own `andes/cases/`
    /// (`kundur/kundur_full.xlsx`) or a file path.
    pub case: String,
    /// The bus the facility's load connects at (the case's bus number).
    pub bus: u32,
    /// The steady window's length, s.
    pub steady_window_s: f64,
    /// Each lifecycle event's window, s (it starts
    /// [`EVENT_LEAD_S`] before the event).
    pub event_window_s: f64,
    /// The playback's step, ms.
    pub step_ms: f64,
    /// The largest |Δf| at the bus or the centre of inertia, mHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_df_mhz: Option<f64>,
    /// The largest RoCoF over 500 ms, Hz/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rocof_hz_per_s: Option<f64>,
    /// The largest steady oscillation's peak-to-peak in frequency (bus
    /// and centre of inertia), mHz.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_osc_pp_mhz: Option<f64>,
    /// The largest steady oscillation's peak-to-peak on the inter-area
    /// tie, MW.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_osc_pp_tie_mw: Option<f64>,
}

/// How long an event window runs before its event, s.
pub const EVENT_LEAD_S: f64 = 2.0;

impl GridSystem {
    /// Whether any limit on the steady oscillation is declared.
    pub fn limits_oscillation(&self) -> bool {
        self.max_osc_pp_mhz.is_some() || self.max_osc_pp_tie_mw.is_some()
    }
}
