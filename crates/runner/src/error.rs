//! Runner errors: each says what failed and what to do.

use powerlab_core::HwError;
use powerlab_rundir::RunDirError;

/// Why a run could not start or complete.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A capability the campaign needs is missing; nothing was started.
    #[error("the campaign cannot start: {0}")]
    Missing(HwError),
    /// The results directory cannot take the run.
    #[error("the results directory cannot take this run: {0}")]
    Results(String),
    /// Another campaign holds the node.
    #[error("{0}")]
    Locked(String),
    /// The run directory could not be written.
    #[error(transparent)]
    RunDir(#[from] RunDirError),
    /// The plan cannot be run as it is (a rung without what its kind
    /// needs); nothing was started.
    #[error("the plan cannot be run: {0}")]
    Plan(String),
    /// The backend failed to open.
    #[error("opening the node failed: {0}")]
    Open(HwError),
    /// An internal task ended unexpectedly.
    #[error("internal error: {0}")]
    Internal(String),
}
