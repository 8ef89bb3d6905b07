//! The multi-GPU runner: executes an expanded campaign plan on any backend.
//!
//! One worker task per GPU owns its [`Gpu`](powerlab_core::Gpu); one sampler
//! task per GPU owns its [`PowerSource`](powerlab_core::PowerSource) and raw
//! file. Before every rung the coordinator waits for every worker to report
//! warm and ready (workers keep running warm load meanwhile), then picks the
//! window start from the measured arm latencies — an adaptive lead, not a
//! constant — and hands each GPU its absolute schedule, stagger included.
//! One blocking poller per node power source (`[[node_power]]`: BMC, IPMI,
//! PDU) reads the node's own power beside them.
//! Faults, interlocks and signals stop every GPU, keep every sample taken and
//! mark the run directory. The runner never computes summaries: the
//! collator does that from the run directory alone.

pub mod barrier;
pub mod contain;
pub mod coordinator;
mod crew;
mod driver;
pub mod error;
pub mod lock;
pub mod meter;
mod monitor;
pub mod observer;
mod options;
mod output;
pub mod rack;
mod run_files;
pub mod sampler;
mod schedule;
pub mod stop;
pub mod tap;
pub mod worker;
pub mod workload;

pub use coordinator::{RunOptions, RunResult, check_results_root, run_campaign};
pub use error::RunError;
pub use observer::{NullObserver, Observer};
pub use rack::RackRun;
pub use stop::{StopLatch, StopReason};
pub use workload::WorkloadExec;
