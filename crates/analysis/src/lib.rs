//! The collator's analyses: pure functions from a run's typed series
//! (`powerlab-samples`) to figures. Nothing here writes a file or formats
//! a report; `powerlab-collate` does both.
//!
//! A duty rung's node figures come from its composed node cycle
//! ([`cycle`]): every GPU's buffered samples folded on its own recorded
//! edges, corrected for the sample window and summed at the GPUs' measured
//! offsets. Constant-load rungs are summarised from the node curve
//! ([`curve`]), which sums per-GPU driver-buffered and instant readings on
//! a common time grid; the 1 s average field is never summed into a result.
//!
//! The modules, lowest first: [`curve`], [`edges`], [`energy`], the
//! [`sensor`] model and calibration, [`workload`] (a job's period),
//! [`cycle`], [`lifecycle`] (start and stop edges), [`summary`] (per rung
//! and across repeats), [`envelope`] and [`grid`] (the supply and the
//! utility's figures), [`mitigation`], [`per_gpu`], [`soak`], [`nccl`],
//! [`node_power`] (the node's own meters beside the GPU sum).

pub mod curve;
pub mod cycle;
pub mod edges;
pub mod energy;
pub mod envelope;
pub mod fft;
pub mod grid;
pub mod lifecycle;
pub mod metric;
pub mod mitigation;
pub mod nccl;
pub mod node_power;
pub mod per_gpu;
pub mod sensor;
pub mod soak;
pub mod summary;
pub mod workload;
