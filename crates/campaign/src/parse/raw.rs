//! The campaign file as written: every table and key with its place in the
//! file (`Spanned`), before any value is checked. Unknown keys are refused
//! here, by toml, with the list of the keys a table accepts.

use crate::node_power::RawNodePower;
use serde::Deserialize;
use toml::Spanned;

/// A campaign file as written, before validation.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFile {
    pub(super) campaign: Spanned<RawHeader>,
    pub(super) sampling: Option<RawSampling>,
    pub(super) limits: Option<RawLimits>,
    pub(super) defaults: Option<RawDefaults>,
    pub(super) rack: Option<RawRack>,
    pub(super) supply: Option<Spanned<RawSupply>>,
    pub(super) grid: Option<Spanned<RawGrid>>,
    #[serde(default)]
    pub(super) phase: Vec<Spanned<RawPhase>>,
    #[serde(default)]
    pub(super) node_power: Vec<Spanned<RawNodePower>>,
}

/// `[campaign]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHeader {
    pub(super) name: Spanned<String>,
    pub(super) description: Option<String>,
    pub(super) gpus: Option<Spanned<toml::Value>>,
    pub(super) nccl_first: Option<bool>,
    pub(super) confirm_node_swing: Option<bool>,
    pub(super) calibrate: Option<bool>,
    pub(super) ramp_up: Option<bool>,
}

/// `[sampling]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSampling {
    pub(super) poll_interval_ms: Option<Spanned<f64>>,
    pub(super) buffer_interval_ms: Option<Spanned<f64>>,
    pub(super) field_interval_ms: Option<Spanned<f64>>,
    pub(super) status_interval_ms: Option<Spanned<f64>>,
    pub(super) flush_interval_ms: Option<Spanned<f64>>,
    pub(super) grid_ms: Option<Spanned<f64>>,
}

/// `[limits]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLimits {
    pub(super) max_gpu_temp_c: Option<Spanned<f64>>,
    pub(super) max_memory_temp_c: Option<Spanned<f64>>,
    pub(super) max_node_power_w: Option<Spanned<f64>>,
    pub(super) abort_on_hw_slowdown: Option<bool>,
    pub(super) barrier_tolerance_ms: Option<Spanned<f64>>,
    pub(super) edge_p99_us: Option<Spanned<f64>>,
    pub(super) edge_max_us: Option<Spanned<f64>>,
}

/// `[rack]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRack {
    pub(super) stagger: Option<Spanned<String>>,
    pub(super) clock_tolerance_ms: Option<Spanned<f64>>,
}

/// `[supply]` as written: `excursions` a list of `[duration_ms, watts]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSupply {
    pub(super) rated_w: Option<Spanned<f64>>,
    pub(super) excursions: Option<Spanned<Vec<Spanned<Vec<f64>>>>>,
}

/// `[grid]` as written: rates per GPU (W/s) or per site (MW/s, with the
/// site's `gpus`), the band as `[low_hz, high_hz]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGrid {
    pub(super) gpus: Option<Spanned<i64>>,
    pub(super) ramp_up_w_per_s_per_gpu: Option<Spanned<f64>>,
    pub(super) ramp_up_mw_per_s: Option<Spanned<f64>>,
    pub(super) ramp_down_w_per_s_per_gpu: Option<Spanned<f64>>,
    pub(super) ramp_down_mw_per_s: Option<Spanned<f64>>,
    pub(super) band_hz: Option<Spanned<Vec<f64>>>,
    pub(super) max_band_share_pct: Option<Spanned<f64>>,
    pub(super) max_dynamic_range_pct: Option<Spanned<f64>>,
    pub(super) max_dynamic_range_w: Option<Spanned<f64>>,
    pub(super) retune_iteration_pct: Option<Spanned<f64>>,
    pub(super) max_step_mw: Option<Spanned<f64>>,
    pub(super) ramp_up_mw_per_min: Option<Spanned<f64>>,
    pub(super) ramp_down_mw_per_min: Option<Spanned<f64>>,
    pub(super) max_load_loss_mw: Option<Spanned<f64>>,
    #[serde(default)]
    pub(super) mode: Vec<Spanned<RawGridMode>>,
    pub(super) system: Option<Spanned<RawGridSystem>>,
}

/// `[grid.system]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGridSystem {
    pub(super) case: Option<Spanned<String>>,
    pub(super) bus: Option<Spanned<i64>>,
    pub(super) steady_window_s: Option<Spanned<f64>>,
    pub(super) event_window_s: Option<Spanned<f64>>,
    pub(super) step_ms: Option<Spanned<f64>>,
    pub(super) max_df_mhz: Option<Spanned<f64>>,
    pub(super) max_rocof_hz_per_s: Option<Spanned<f64>>,
    pub(super) max_osc_pp_mhz: Option<Spanned<f64>>,
    pub(super) max_osc_pp_tie_mw: Option<Spanned<f64>>,
}

/// One `[[grid.mode]]` as written: a mode's frequency and one of its two
/// bandwidth forms.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGridMode {
    pub(super) name: Option<Spanned<String>>,
    pub(super) hz: Option<Spanned<f64>>,
    pub(super) bandwidth_hz: Option<Spanned<f64>>,
    pub(super) damping_ratio: Option<Spanned<f64>>,
}

/// `[defaults]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDefaults {
    pub(super) repeats: Option<Spanned<i64>>,
    pub(super) warmup_s: Option<Spanned<f64>>,
    pub(super) cooldown_s: Option<Spanned<f64>>,
}

/// One `[[phase]]` table as written: every key of every kind (the field
/// order is the order toml's unknown-key message lists them in); which
/// keys a kind accepts is [`super::table::KINDS`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPhase {
    pub(super) kind: Spanned<String>,
    pub(super) name: Option<Spanned<String>>,
    pub(super) duration_s: Option<Spanned<f64>>,
    pub(super) warmup_s: Option<Spanned<f64>>,
    pub(super) cooldown_s: Option<Spanned<f64>>,
    pub(super) repeats: Option<Spanned<i64>>,
    pub(super) period_ms: Option<Spanned<f64>>,
    pub(super) periods_ms: Option<Spanned<Vec<f64>>>,
    pub(super) duty: Option<Spanned<f64>>,
    pub(super) ramp_s: Option<Spanned<f64>>,
    pub(super) exact_period: Option<Spanned<bool>>,
    pub(super) mode: Option<Spanned<String>>,
    pub(super) modes: Option<Spanned<Vec<String>>>,
    pub(super) stagger_step_deg: Option<Spanned<f64>>,
    pub(super) offsets_deg: Option<Spanned<Vec<f64>>>,
    pub(super) offsets_ms: Option<Spanned<Vec<f64>>>,
    pub(super) smoothing: Option<Spanned<Vec<Spanned<RawSmoothing>>>>,
    pub(super) collectives: Option<Spanned<Vec<String>>>,
    pub(super) min_bytes: Option<Spanned<i64>>,
    pub(super) max_bytes: Option<Spanned<i64>>,
    pub(super) step_factor: Option<Spanned<i64>>,
    pub(super) iterations: Option<Spanned<i64>>,
    pub(super) bsp_compute_ms: Option<Spanned<f64>>,
    pub(super) warmup_iters: Option<Spanned<i64>>,
    pub(super) sweep_s: Option<Spanned<f64>>,
    pub(super) fabric_bytes: Option<Spanned<i64>>,
    pub(super) timeout_s: Option<Spanned<f64>>,
    pub(super) command: Option<Spanned<Vec<String>>>,
    pub(super) iteration_ms: Option<Spanned<f64>>,
    pub(super) env: Option<Spanned<std::collections::BTreeMap<String, String>>>,
    pub(super) cwd: Option<Spanned<String>>,
    pub(super) stop_grace_s: Option<Spanned<f64>>,
    pub(super) stop: Option<Spanned<String>>,
    pub(super) sim: Option<Spanned<RawTrainingSim>>,
}

/// A workload phase's `sim` table as written: the simulated training job.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTrainingSim {
    pub(super) iteration_ms: Option<Spanned<f64>>,
    pub(super) compute_fraction: Option<Spanned<f64>>,
    pub(super) compute_level: Option<Spanned<f64>>,
    pub(super) comm: Option<Spanned<String>>,
    pub(super) comm_level: Option<Spanned<f64>>,
    pub(super) jitter_pct: Option<Spanned<f64>>,
    pub(super) optimizer_ms: Option<Spanned<f64>>,
    pub(super) optimizer_level: Option<Spanned<f64>>,
    pub(super) seed: Option<Spanned<i64>>,
}

/// One entry of a duty phase's `smoothing` list as written: its keys with
/// their places (unknown keys are refused by the validator, which names
/// the entry).
pub(super) type RawSmoothing = std::collections::BTreeMap<String, Spanned<toml::Value>>;
