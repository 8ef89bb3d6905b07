//! The multi-GPU runner: executes an expanded campaign plan on any backend.
//!
//! One worker task per GPU owns its [`Gpu`](powerlab_core::Gpu); one sampler
//! task per GPU owns its [`PowerSource`](powerlab_core::PowerSource) and raw
//! file. Before every rung the coordinator waits for every worker to report
//! warm and ready (workers keep running warm load meanwhile), then picks the
//! window start from the measured arm latencies — an adaptive lead, not a
//! constant — and hands each GPU its absolute schedule, stagger included.
//! Faults, interlocks and signals stop every GPU, keep every sample taken and
//! mark the run directory. The runner never computes summaries: the
//! collator does that from the run directory alone.

pub mod barrier;
pub mod coordinator;
pub mod error;
pub mod lock;
pub mod observer;
pub mod rack;
pub mod sampler;
pub mod worker;

pub use coordinator::{RunOptions, RunResult, check_results_root, run_campaign};
pub use error::RunError;
pub use observer::{NullObserver, Observer};
pub use rack::RackRun;

/// Why a run is being stopped early.
#[derive(Debug, Clone, PartialEq)]
pub enum StopReason {
    /// A signal or the user (Ctrl-C, SIGTERM).
    Interrupted(String),
    /// A fault or interlock.
    Failed(String),
}

impl StopReason {
    /// The human text.
    pub fn text(&self) -> &str {
        match self {
            StopReason::Interrupted(s) | StopReason::Failed(s) => s,
        }
    }
}
