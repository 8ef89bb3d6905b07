//! What a rung is: its kind and its mode, one name set for the campaign
//! file, the plan, the event log and every report.
//!
//! The campaign parser reads these from campaign files, the runner writes
//! them into `events.jsonl` (`rung.kind`, `rung.mode`), and the collator
//! reads them back; the serde names and [`PhaseKind::as_str`] /
//! [`Mode::as_str`] are the strings every file and report has always
//! carried. There is no catch-all variant: a kind or mode this build does
//! not know is an error where it is read (naming the file and the value),
//! never a rung that silently matches nothing.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Phase kinds (and so rung kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseKind {
    /// No load: the baseline.
    Idle,
    /// Full load, constant.
    Sustained,
    /// Square-wave load (a duty-cycle rung or a sweep of them).
    Duty,
    /// NCCL collectives (the fabric's own power).
    Nccl,
    /// Long sustained load, run last.
    Soak,
    /// A ramp-up step of swing depth, inserted by the planner (never
    /// written in a campaign file): the square wave of the first in-phase
    /// multi-GPU duty rung run by only some of the GPUs (the campaign
    /// plan's `Rung::swinging`), the others idle. Its own kind, so that
    /// nothing that reads duty rungs (the answer, the in-phase vs staggered
    /// table, the sensor verdicts) takes it for a full-node rung.
    RampUp,
    /// The user's own job: a command the harness starts, samples and
    /// stops (on the simulated node a simulated training job stands in).
    Workload,
}

impl PhaseKind {
    /// Name as written in campaign files, `events.jsonl` and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            PhaseKind::Idle => "idle",
            PhaseKind::Sustained => "sustained",
            PhaseKind::Duty => "duty",
            PhaseKind::Nccl => "nccl",
            PhaseKind::Soak => "soak",
            PhaseKind::RampUp => "ramp_up",
            PhaseKind::Workload => "workload",
        }
    }
}

impl fmt::Display for PhaseKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// In phase or deliberately staggered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Every GPU switches together.
    InPhase,
    /// GPUs switch at intended offsets.
    Staggered,
}

impl Mode {
    /// Name as written in campaign files, `events.jsonl` and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::InPhase => "in_phase",
            Mode::Staggered => "staggered",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_names_are_the_strings_as_str_gives() {
        for k in [
            PhaseKind::Idle,
            PhaseKind::Sustained,
            PhaseKind::Duty,
            PhaseKind::Nccl,
            PhaseKind::Soak,
            PhaseKind::RampUp,
            PhaseKind::Workload,
        ] {
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(json, format!("\"{}\"", k.as_str()));
            assert_eq!(serde_json::from_str::<PhaseKind>(&json).unwrap(), k);
            assert_eq!(format!("{k:>10}"), format!("{:>10}", k.as_str()));
        }
        for m in [Mode::InPhase, Mode::Staggered] {
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(json, format!("\"{}\"", m.as_str()));
            assert_eq!(serde_json::from_str::<Mode>(&json).unwrap(), m);
            assert_eq!(m.to_string(), m.as_str());
        }
    }
}
