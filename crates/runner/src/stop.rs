//! Why a run stops early, and the latch that keeps the first such reason.
//!
//! Every part of a run that can stop it (a signal, a sampler fault, the
//! node-power interlock, another node of the rack, a failed rung) raises its
//! reason on one shared [`StopLatch`]. The first reason raised is the one the
//! run reports; later reasons are refused, so a consequence of the stop can
//! never rename its cause.

use tokio::sync::watch;

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

/// The stop of a run whose directory could not be written (a full disk,
/// most often): the reason names the file and the error, and says what to do.
pub(crate) fn disk_failure(e: &dyn std::fmt::Display) -> StopReason {
    StopReason::Failed(format!(
        "disk: writing the run directory failed: {e}; the load is stopped rather than run unrecorded (free space on the disk that holds the results directory, or choose another --results)"
    ))
}

/// A run's stop signal: empty until a reason is raised, then holding the
/// first reason for good.
///
/// Clones share one latch. Tasks that wait for the stop subscribe to the
/// underlying watch channel, whose value turns from `None` to the first
/// reason exactly once.
#[derive(Debug, Clone)]
pub struct StopLatch {
    tx: watch::Sender<Option<StopReason>>,
}

impl StopLatch {
    /// A latch with no reason raised.
    pub fn new() -> Self {
        StopLatch {
            tx: watch::Sender::new(None),
        }
    }

    /// Raises `reason` if no reason was raised before; returns whether this
    /// reason is now the run's stop reason. A later reason never replaces
    /// the first one.
    pub fn raise(&self, reason: StopReason) -> bool {
        self.tx.send_if_modified(|cur| {
            if cur.is_none() {
                *cur = Some(reason);
                true
            } else {
                false
            }
        })
    }

    /// The reason raised first, if any.
    pub fn current(&self) -> Option<StopReason> {
        self.tx.borrow().clone()
    }

    /// A receiver that sees the latch's value, for tasks that wait for the stop.
    pub fn subscribe(&self) -> watch::Receiver<Option<StopReason>> {
        self.tx.subscribe()
    }
}

impl Default for StopLatch {
    fn default() -> Self {
        Self::new()
    }
}

impl From<watch::Sender<Option<StopReason>>> for StopLatch {
    /// Wraps an existing channel; a reason already in it counts as the first.
    fn from(tx: watch::Sender<Option<StopReason>>) -> Self {
        StopLatch { tx }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_reason_never_replaces_the_first() {
        let latch = StopLatch::new();
        let rx = latch.subscribe();
        assert_eq!(latch.current(), None);
        assert!(latch.raise(StopReason::Interrupted("SIGTERM received".into())));
        assert!(!latch.raise(StopReason::Failed("interlock".into())));
        assert!(!latch.clone().raise(StopReason::Interrupted("again".into())));
        let first = Some(StopReason::Interrupted("SIGTERM received".into()));
        assert_eq!(latch.current(), first);
        assert_eq!(*rx.borrow(), first);
    }

    #[test]
    fn a_wrapped_channel_keeps_a_reason_already_in_it() {
        let (tx, rx) = watch::channel(Some(StopReason::Failed("earlier".into())));
        let latch = StopLatch::from(tx);
        assert!(!latch.raise(StopReason::Interrupted("later".into())));
        assert_eq!(*rx.borrow(), Some(StopReason::Failed("earlier".into())));
    }

    #[tokio::test]
    async fn a_subscriber_wakes_once_with_the_first_reason() {
        let latch = StopLatch::new();
        let mut rx = latch.subscribe();
        let waiter = tokio::spawn(async move {
            rx.wait_for(|v| v.is_some())
                .await
                .map(|v| v.clone())
                .ok()
                .flatten()
        });
        latch.raise(StopReason::Failed("first".into()));
        latch.raise(StopReason::Failed("second".into()));
        assert_eq!(
            waiter.await.unwrap(),
            Some(StopReason::Failed("first".into()))
        );
    }
}
