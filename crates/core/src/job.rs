//! A workload's process as the harness starts and stops it: how a
//! workload phase's command is stopped at the window's end
//! ([`WorkloadStop`]), and what a backend is told of the process's life
//! ([`JobEvent`]): a real GPU ignores it (the process itself draws), the
//! simulated node draws the simulated job's cold start, kill and exit.

use crate::training::TrainingSpec;
use crate::units::EpochNs;
use serde::{Deserialize, Serialize};

/// How a workload phase's command is stopped at its window's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadStop {
    /// SIGTERM to its process group, SIGKILL after the grace period (the
    /// job's own handler decides how it ends).
    #[default]
    Sigterm,
    /// SIGKILL to its process group at once: the intended stop (a crash
    /// mid-compute), not an error.
    Sigkill,
    /// It exits on its own (its duration is the user's); the runner waits
    /// up to the grace period for it.
    Exit,
}

impl WorkloadStop {
    /// Every stop, in the order the campaign file's error lists them.
    pub const ALL: [WorkloadStop; 3] = [
        WorkloadStop::Sigterm,
        WorkloadStop::Sigkill,
        WorkloadStop::Exit,
    ];

    /// The name as written in campaign files and the event log.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadStop::Sigterm => "sigterm",
            WorkloadStop::Sigkill => "sigkill",
            WorkloadStop::Exit => "exit",
        }
    }

    /// The stop written as `name`, if there is one.
    pub fn parse(name: &str) -> Option<WorkloadStop> {
        Self::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// Whether the rung measures the process's lifecycle edges (its cold
    /// start and this stop): a kill or an exit, whose moment the runner
    /// knows. A SIGTERM's end depends on the job's handler (Python's
    /// default ends the process at once, a handler finishes a step), so
    /// such a rung measures neither.
    pub fn is_lifecycle(self) -> bool {
        self != WorkloadStop::Sigterm
    }

    /// Whether this is the default (left out of files that predate it).
    pub fn is_default(&self) -> bool {
        *self == WorkloadStop::Sigterm
    }
}

/// What a backend is told of a workload's process (run clock, ns).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum JobEvent {
    /// The process was started (spawned) at `at_ns`: it initialises CUDA,
    /// then runs `job` (the simulated job that stands in for it).
    Spawned {
        /// The spawn.
        at_ns: EpochNs,
        /// The simulated job.
        job: TrainingSpec,
    },
    /// SIGKILL at `at_ns`: its load stops at once, its context goes.
    Killed {
        /// The signal.
        at_ns: EpochNs,
    },
    /// The simulated job reaches its own end at `at_ns`: it finishes the
    /// iteration it is in and exits; the backend answers when.
    Finish {
        /// When its time is up.
        at_ns: EpochNs,
    },
    /// The process was seen to exit at `at_ns` (a command that ran).
    Exited {
        /// The exit, as the runner saw it.
        at_ns: EpochNs,
    },
}
