//! Typed notes of the event log: a topic's `detail` read as its type (the
//! smoothing and lifecycle notes share this reading).

use crate::events::RunEvent;

/// The typed note a record holds under `topic` (None: another record; an
/// error: a note of that topic that does not read).
pub fn note_of<T: serde::de::DeserializeOwned>(
    e: &RunEvent,
    topic: &str,
) -> Option<Result<T, serde_json::Error>> {
    match e {
        RunEvent::Note {
            topic: t, detail, ..
        } if t == topic => Some(serde_json::from_value(detail.clone())),
        _ => None,
    }
}

/// Every note of `topic` in `events`, in order; one that does not read is
/// left out (an event log of another version).
pub fn notes_of<T: serde::de::DeserializeOwned>(events: &[RunEvent], topic: &str) -> Vec<T> {
    events
        .iter()
        .filter_map(|e| note_of(e, topic))
        .filter_map(Result::ok)
        .collect()
}
