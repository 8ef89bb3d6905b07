//! The lifecycle of a workload rung's process as the event log records
//! it: its spawn (a cold start), and the kill or the exit that ended it
//! (run clock, ns), one note each under [`LIFECYCLE_TOPIC`]. Written only
//! for a rung whose phase stops its command with `stop = "sigkill"` or
//! `stop = "exit"`; the collator measures the edges about these moments
//! from the raw samples alone.

use crate::events::RunEvent;
use serde::{Deserialize, Serialize};

/// Topic of a lifecycle note: a [`LifecycleNote`] (`{rung_id, label,
/// event, at_ns}`).
pub const LIFECYCLE_TOPIC: &str = "lifecycle";

/// What happened to the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LifecycleEvent {
    /// The command was started (its process spawned): a cold start.
    Spawn,
    /// SIGKILL was sent to its process group (the moment before the
    /// signal).
    Kill,
    /// It exited on its own (the moment the runner saw it; on the
    /// simulated node, the simulated job's exit).
    Exit,
}

/// One moment of a workload rung's process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LifecycleNote {
    /// The rung.
    pub rung_id: u32,
    /// Its label.
    pub label: String,
    /// What happened.
    pub event: LifecycleEvent,
    /// When, run clock, ns.
    pub at_ns: i64,
}

impl LifecycleNote {
    /// The note as an event-log record written at `ts_ns`.
    pub fn to_event(&self, ts_ns: i64) -> RunEvent {
        RunEvent::Note {
            ts_ns,
            topic: LIFECYCLE_TOPIC.into(),
            detail: serde_json::to_value(self).unwrap_or_default(),
        }
    }

    /// The note a record holds (None: another record; an error: a
    /// lifecycle note that does not read).
    pub fn from_event(e: &RunEvent) -> Option<Result<LifecycleNote, serde_json::Error>> {
        crate::notes::note_of(e, LIFECYCLE_TOPIC)
    }
}

/// Every lifecycle note of a run's events, in order; one that does not
/// read is left out (an event log of another version).
pub fn lifecycle_notes(events: &[RunEvent]) -> Vec<LifecycleNote> {
    crate::notes::notes_of(events, LIFECYCLE_TOPIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_reads_back_from_its_event() {
        let note = LifecycleNote {
            rung_id: 4,
            label: "kill/r2".into(),
            event: LifecycleEvent::Kill,
            at_ns: 1_795_997_027_000_000_123,
        };
        let e = note.to_event(1_795_997_027_000_100_000);
        let line = serde_json::to_string(&e).unwrap();
        assert!(line.contains("\"event\":\"kill\""), "{line}");
        let back: RunEvent = serde_json::from_str(&line).unwrap();
        assert_eq!(lifecycle_notes(&[back]), vec![note]);
    }
}
