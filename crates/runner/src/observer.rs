//! What the user sees while a run goes: events and progress. The CLI
//! implements this with a progress bar, or one JSON object per line.

use powerlab_rundir::RunEvent;

/// Receives every event and progress update.
pub trait Observer {
    /// An event that was also appended to `events.jsonl`.
    fn event(&mut self, event: &RunEvent);
    /// Progress: nominal ns done of total, and the current rung's label.
    fn progress(&mut self, done_ns: i64, total_ns: i64, label: &str);
    /// A line for the user (warnings, the run directory).
    fn message(&mut self, text: &str);
}

/// Discards everything (tests).
pub struct NullObserver;

impl Observer for NullObserver {
    fn event(&mut self, _: &RunEvent) {}
    fn progress(&mut self, _: i64, _: i64, _: &str) {}
    fn message(&mut self, _: &str) {}
}
