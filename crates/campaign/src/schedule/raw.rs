//! The schedule file as written: every table and key with its place in the
//! file (`Spanned`), before any value is checked. Unknown keys are refused
//! here, by toml, with the list of the keys a table accepts. Required keys
//! are `Option`s too, so that their absence is reported by the validator
//! with the field's path.

use crate::parse::{RawGrid, RawSupply};
use serde::Deserialize;
use toml::Spanned;

/// A schedule file as written, before validation.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSchedule {
    pub(super) job: Option<Spanned<RawJob>>,
    pub(super) communication: Option<Spanned<RawCommunication>>,
    pub(super) spread: Option<Spanned<RawSpread>>,
    pub(super) stragglers: Option<Spanned<RawStragglers>>,
    pub(super) mitigation: Option<Spanned<RawMitigation>>,
    pub(super) output: Option<Spanned<RawOutput>>,
    pub(super) supply: Option<Spanned<RawSupply>>,
    pub(super) grid: Option<Spanned<RawGrid>>,
    pub(super) lifecycle: Option<Spanned<RawLifecycle>>,
}

/// `[job]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawJob {
    pub(super) name: Option<Spanned<String>>,
    pub(super) gpus: Option<Spanned<i64>>,
    pub(super) gpus_per_node: Option<Spanned<i64>>,
    pub(super) iteration_ms: Option<Spanned<f64>>,
    pub(super) compute_fraction: Option<Spanned<f64>>,
    pub(super) compute_w_per_gpu: Option<Spanned<f64>>,
}

/// `[communication]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCommunication {
    pub(super) source: Option<Spanned<String>>,
    pub(super) w_per_gpu: Option<Spanned<f64>>,
}

/// `[spread]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSpread {
    pub(super) kind: Option<Spanned<String>>,
    pub(super) sigma_ms: Option<Spanned<f64>>,
    pub(super) width_ms: Option<Spanned<f64>>,
}

/// `[stragglers]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStragglers {
    pub(super) share: Option<Spanned<f64>>,
    pub(super) delay_ms: Option<Spanned<f64>>,
}

/// `[mitigation]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMitigation {
    pub(super) profile: Option<Spanned<String>>,
    pub(super) stagger_groups: Option<Spanned<i64>>,
}

/// `[output]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOutput {
    pub(super) span_s: Option<Spanned<f64>>,
    pub(super) resolution_ms: Option<Spanned<f64>>,
    pub(super) seed: Option<Spanned<i64>>,
}

/// `[lifecycle]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLifecycle {
    pub(super) span_s: Option<Spanned<f64>>,
    pub(super) resolution_ms: Option<Spanned<f64>>,
    pub(super) start_at_s: Option<Spanned<f64>>,
    pub(super) start: Option<Spanned<String>>,
    pub(super) start_ramp_s: Option<Spanned<f64>>,
    pub(super) start_spread_ms: Option<Spanned<f64>>,
    pub(super) checkpoint_every_s: Option<Spanned<f64>>,
    pub(super) checkpoint_s: Option<Spanned<f64>>,
    pub(super) checkpoint_w_per_gpu: Option<Spanned<f64>>,
    pub(super) crash_at_s: Option<Spanned<Vec<f64>>>,
    pub(super) crash_per_hour: Option<Spanned<f64>>,
    pub(super) restart_after_s: Option<Spanned<f64>>,
    pub(super) end_at_s: Option<Spanned<f64>>,
    pub(super) idle_w_per_gpu: Option<Spanned<f64>>,
}
