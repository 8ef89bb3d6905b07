//! The collator: turns a run directory's raw samples into node power curves,
//! per-rung summaries, statistics across repeats, the in-phase vs staggered
//! comparison, a Markdown report and plots — from the run directory alone,
//! so `powerlab collate` regenerates exactly what `powerlab run` wrote.
//!
//! The run's figures come from `powerlab-analysis`, which reads the typed
//! series of `powerlab-samples`; this crate holds what is built on them:
//! the [`report`] value (one node's or one rack's figures), every file
//! written from it ([`export`], one exporter per format, and what a node
//! hands its rack, [`handoff`]), one report set against another
//! ([`compare`]), and the pipelines that run them: [`collation`] (a node),
//! [`rack`] (the rack's collation) and [`comparison`] (`powerlab compare`).
//! The simulated node's true waveform (`sim-truth/`) is never read here:
//! it is the tests' oracle.

pub mod collation;
pub mod compare;
pub mod comparison;
pub mod export;
pub mod folder;
pub mod handoff;
pub mod rack;
pub mod render;
pub mod report;

pub use collation::{CollateOptions, CollateOutput, collate, collate_with};
pub use powerlab_samples::error::CollateError;
