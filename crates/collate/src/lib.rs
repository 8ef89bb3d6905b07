//! The collator: turns a run directory's raw samples into node power curves,
//! per-rung summaries, statistics across repeats, the in-phase vs staggered
//! comparison, a Markdown report and plots — from the run directory alone,
//! so `powerlab collate` regenerates exactly what `powerlab run` wrote.
//!
//! A duty rung's node figures come from its composed node cycle
//! ([`cycle`]): every GPU's buffered samples folded on its own recorded
//! edges, corrected for the sample window and summed at the GPUs' measured
//! offsets. Constant-load rungs are summarised from the node curve, which
//! sums per-GPU driver-buffered and instant readings on a common time grid
//! (a backward as-of match within a tolerance); that sample-and-hold sum is kept for every rung as
//! the raw "what NVML sampled" figures. The 1 s average field is never
//! summed into a result: it is carried as a labelled comparison column,
//! because summing it is what flattened every swing in the devlog's
//! rehearsal. The simulated node's true waveform (`sim-truth/`) is never
//! read here: it is the tests' oracle.
//!
//! The modules stand in layers, each importing only from those below it:
//! helpers ([`error`], [`stats`], [`format`](mod@format), [`columns`]); the
//! run's data ([`sensor::series`], [`integrity`], [`load`]); the analyses
//! ([`curve`], [`edges`], [`energy`], the [`sensor`] model and calibration,
//! [`cycle`], the sensor verdicts, [`summary`], [`nccl`], [`node_power`]
//! (the node's own meters beside the GPU sum), the [`rack`]
//! tables, [`compare`]: one run's report against another's); every file
//! written ([`export`], and what a node hands its rack, [`handoff`]); and
//! the pipelines that run them ([`collation`], [`rack`], and
//! [`comparison`] for `powerlab compare`).

pub mod collation;
pub mod columns;
pub mod compare;
pub mod comparison;
pub mod curve;
pub mod cycle;
pub mod edges;
pub mod energy;
pub mod envelope;
pub mod error;
pub mod export;
pub mod format;
pub mod grid;
pub mod handoff;
pub mod integrity;
pub mod lifecycle;
pub mod load;
pub mod mitigation;
pub mod nccl;
pub mod node_power;
pub mod parquet_io;
pub mod per_gpu;
pub mod predict;
pub mod rack;
pub mod report;
pub mod sensor;
pub mod soak;
pub mod stats;
pub mod summary;
pub mod workload;

pub use collation::{CollateOptions, CollateOutput, collate, collate_with};
pub use error::CollateError;
