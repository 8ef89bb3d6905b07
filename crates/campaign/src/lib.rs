//! Campaign files: parsing, validation and expansion into a plan.
//!
//! A campaign (`campaigns/*.toml`) declares which GPUs, how to sample, the
//! safety limits and an ordered list of phases. This crate owns the file
//! format: every error names the file, line, column and field and says what
//! is allowed; unknown keys are errors. [`plan::expand`] turns a validated
//! campaign into the exact schedule the runner executes (every rung, repeat
//! and per-GPU offset), which is also what `powerlab plan` prints.

mod ctx;
pub mod detune;
pub mod disk;
pub mod error;
pub mod model;
pub mod names;
mod node_power;
pub mod parse;
pub mod period;
pub mod plan;
pub mod reach;
pub mod schedule;

pub use disk::DiskEstimate;
pub use error::CampaignError;
pub use model::{
    CALIBRATION_PHASE, Campaign, DEFAULT_BAND_HZ, DEFAULT_RETUNE_ITERATION_PCT, Excursion,
    GpuSelector, Grid, GridMode, GridSystem, Limits, Mode, NcclSpec, NcclStep, NodePowerKind,
    NodePowerSpec, Phase, PhaseKind, Rack, RackStagger, Ramp, RedfishAuth, Sampling, Stagger,
    Supply, calibration_phases,
};
pub use model::{
    DEFAULT_EVENT_WINDOW_S, DEFAULT_PLAYBACK_STEP_MS, DEFAULT_STEADY_WINDOW_S, EVENT_LEAD_S,
};
pub use parse::{load_file, parse_str};
pub use period::PeriodMs;
pub use plan::{Plan, RackPosition, Rung, expand, expand_on_rack};
pub use schedule::{Schedule, load_schedule, parse_schedule_str};
