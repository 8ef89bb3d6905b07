//! The collator's floor: a run directory's raw files read and verified
//! into typed series, and the helpers every layer above shares. The resolved campaign is read
//! once, into the campaign crate's types ([`campaign::RunCampaign`]).
//!
//! [`load`] opens a run ([`load::Run`]) and reads its power samples,
//! checked by [`integrity`] against the manifest's sizes and CRCs (a
//! damaged file is named, never summed); [`series`] holds the readings
//! and rising edges by (GPU, instrument) key. The helpers: [`error`] (the
//! one error type of the collator's crates), [`stats`], [`format`] (how a
//! figure is printed), [`columns`], [`parquet_io`].
//!
//! The crates stand in floors, each depending only on those below:
//! `powerlab-samples` (this crate) → `powerlab-analysis` (pure functions
//! of the typed series) → `powerlab-collate` (the `Report` value, every
//! exporter and the pipelines) → `powerlab-predict` (a training job at
//! scale). Cargo refuses an arrow upwards.

pub mod campaign;
pub mod columns;
pub mod error;
pub mod format;
pub mod integrity;
pub mod load;
pub mod parallel;
pub mod parquet_io;
pub mod raw_series;
pub mod series;
mod split;
pub mod stats;

pub use error::CollateError;
