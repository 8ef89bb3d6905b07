//! The node's supply and the utility interconnect as a campaign declares
//! them: `[supply]` ([`Supply`]) and `[grid]` ([`Grid`]).

use serde::{Deserialize, Serialize};

/// `[supply]`: the node supply's rating and the excursions it allows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Supply {
    /// The supply's rated (continuous) power, W, where declared.
    #[serde(default)]
    pub rated_w: Option<f64>,
    /// The highest mean power allowed over each duration, durations
    /// strictly increasing.
    #[serde(default)]
    pub excursions: Vec<Excursion>,
}

/// `[grid]`: the limits a utility interconnect sets on how the load
/// swings (arXiv 2508.14318): ramp rates, the dynamic range, and the
/// largest share of the swing's energy inside a critical band. A limit
/// not declared is not judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grid {
    /// The GPU count the `_mw_per_s` limits are for (the site's); the
    /// node's rates are scaled by `gpus / node GPUs` before judging.
    #[serde(default)]
    pub gpus: Option<u32>,
    /// Highest rise rate per GPU, W/s.
    #[serde(default)]
    pub ramp_up_w_per_s_per_gpu: Option<f64>,
    /// Highest rise rate of `gpus` GPUs, MW/s.
    #[serde(default)]
    pub ramp_up_mw_per_s: Option<f64>,
    /// Highest fall rate per GPU, W/s.
    #[serde(default)]
    pub ramp_down_w_per_s_per_gpu: Option<f64>,
    /// Highest fall rate of `gpus` GPUs, MW/s.
    #[serde(default)]
    pub ramp_down_mw_per_s: Option<f64>,
    /// The critical band, Hz: `[low, high]`.
    #[serde(default = "default_band_hz")]
    pub band_hz: [f64; 2],
    /// Largest share of the fluctuation's energy inside the band, %.
    #[serde(default)]
    pub max_band_share_pct: Option<f64>,
    /// Largest max − min as a share of the max, %.
    #[serde(default)]
    pub max_dynamic_range_pct: Option<f64>,
    /// Largest max − min at the node, W.
    #[serde(default)]
    pub max_dynamic_range_w: Option<f64>,
    /// The grid's oscillation modes (`[[grid.mode]]`) an iteration's
    /// harmonics must keep out of (`powerlab predict`'s "Grid modes").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<GridMode>,
    /// How far the user could move the iteration period, ± %: the range
    /// `powerlab predict` searches for a period whose harmonics keep out
    /// of every mode. None: ± [`DEFAULT_RETUNE_ITERATION_PCT`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retune_iteration_pct: Option<f64>,
    /// The largest step of the site's load a lifecycle event may make, MW
    /// (the site's own figure, not scaled by `gpus`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_step_mw: Option<f64>,
    /// The fastest rise between consecutive minute means, MW/min.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp_up_mw_per_min: Option<f64>,
    /// The fastest fall between consecutive minute means, MW/min.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp_down_mw_per_min: Option<f64>,
    /// The most load the site may lose at once (a crash), MW.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_load_loss_mw: Option<f64>,
    /// `[grid.system]`: the power system the facility connects to, for
    /// `powerlab predict`'s grid study (None: none declared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<super::grid_system::GridSystem>,
}

/// The retuning range where `retune_iteration_pct` is not declared, ± %.
pub const DEFAULT_RETUNE_ITERATION_PCT: f64 = 10.0;

/// One of the grid's oscillation modes (arXiv 2508.14318: inter-area
/// below 1 Hz, between nearby plants 1–2.5 Hz, turbine shafts 7 to over
/// 100 Hz): its centre and its band, from exactly one of a bandwidth or a
/// damping ratio.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GridMode {
    /// Its name, unique in the `[grid]`.
    pub name: String,
    /// Its centre frequency, Hz.
    pub hz: f64,
    /// Its band's full width, Hz (the band is `hz ± bandwidth_hz / 2`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth_hz: Option<f64>,
    /// Its damping ratio ζ (the band is the half-power bandwidth 2ζ·hz,
    /// `hz · (1 ± ζ)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub damping_ratio: Option<f64>,
}

impl GridMode {
    /// Half the band's width, Hz: `bandwidth_hz / 2`, or `ζ · hz`.
    pub fn half_bandwidth_hz(&self) -> f64 {
        match (self.bandwidth_hz, self.damping_ratio) {
            (Some(b), _) => b / 2.0,
            (None, Some(z)) => z * self.hz,
            (None, None) => 0.0,
        }
    }

    /// The band, Hz: `[hz − half, hz + half]`.
    pub fn band_hz(&self) -> [f64; 2] {
        let h = self.half_bandwidth_hz();
        [self.hz - h, self.hz + h]
    }

    /// The damping ratio: as declared, or the one whose half-power band
    /// is the declared bandwidth (`bandwidth_hz / (2 · hz)`).
    pub fn damping(&self) -> f64 {
        self.damping_ratio
            .unwrap_or_else(|| self.half_bandwidth_hz() / self.hz)
    }
}

/// The critical band when none is declared, Hz.
pub const DEFAULT_BAND_HZ: [f64; 2] = [0.1, 20.0];

fn default_band_hz() -> [f64; 2] {
    DEFAULT_BAND_HZ
}

/// A direction of a ramp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ramp {
    /// Rising.
    Up,
    /// Falling.
    Down,
}

impl Grid {
    /// The declared limit on a node of `node_gpus` GPUs ramping `dir`, as
    /// a node rate, W/s: a per-GPU limit times the node's GPUs, or a
    /// site's MW/s limit times `node_gpus / gpus`. None: not declared.
    pub fn ramp_limit_node_w_per_s(&self, dir: Ramp, node_gpus: usize) -> Option<f64> {
        let (per_gpu, site) = match dir {
            Ramp::Up => (self.ramp_up_w_per_s_per_gpu, self.ramp_up_mw_per_s),
            Ramp::Down => (self.ramp_down_w_per_s_per_gpu, self.ramp_down_mw_per_s),
        };
        per_gpu.map(|w| w * node_gpus as f64).or_else(|| {
            site.zip(self.gpus).map(|(mw, g)| {
                mw * powerlab_core::units::W_PER_MW * node_gpus as f64 / f64::from(g.max(1))
            })
        })
    }
}

/// One point of a supply's excursion limit: the highest mean power
/// allowed over any window of `duration_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Excursion {
    /// The window, ms.
    pub duration_ms: f64,
    /// The highest mean power allowed over it, W.
    pub watts: f64,
}

impl Supply {
    /// The limit over a window of `duration_ms`: a declared point's, or
    /// interpolated between the two declared points around it, linear in
    /// the logarithm of the duration. None outside the declared durations
    /// (never extrapolated).
    pub fn limit_at(&self, duration_ms: f64) -> Option<f64> {
        let x = &self.excursions;
        if let Some(e) = x.iter().find(|e| e.duration_ms == duration_ms) {
            return Some(e.watts);
        }
        x.windows(2).find_map(|w| {
            let (a, b) = (w[0], w[1]);
            (a.duration_ms < duration_ms && duration_ms < b.duration_ms).then(|| {
                let f = (duration_ms.ln() - a.duration_ms.ln())
                    / (b.duration_ms.ln() - a.duration_ms.ln());
                a.watts + (b.watts - a.watts) * f
            })
        })
    }
}
