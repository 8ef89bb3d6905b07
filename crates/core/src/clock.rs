//! The one declared clock of a run.
//!
//! Every record of a run carries Unix-epoch nanoseconds. They come from one
//! anchor: the realtime clock read once at run start, advanced by tokio's
//! monotonic `Instant`. So timestamps are summable across GPUs and nodes
//! (they are wall-clock), yet never jump mid-run if NTP steps the realtime
//! clock. Under a paused tokio runtime (the simulated node's virtual time)
//! the same arithmetic gives deterministic virtual epoch time.

use crate::units::EpochNs;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::time::Instant;

/// Maps between epoch nanoseconds and tokio instants for one run.
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    anchor_epoch_ns: EpochNs,
    anchor_instant: Instant,
    virtual_time: bool,
}

impl RunClock {
    /// Anchors the run clock to the host's realtime clock now.
    pub fn realtime() -> Self {
        let anchor_instant = Instant::now();
        let anchor_epoch_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as i64)
            .unwrap_or(0);
        RunClock {
            anchor_epoch_ns,
            anchor_instant,
            virtual_time: false,
        }
    }

    /// Anchors a clock at a chosen epoch (virtual time for the simulated node).
    /// With a paused tokio runtime, time only moves when every task waits.
    pub fn virtual_at(anchor_epoch_ns: EpochNs) -> Self {
        RunClock {
            anchor_epoch_ns,
            anchor_instant: Instant::now(),
            virtual_time: true,
        }
    }

    /// Current time on the run clock.
    pub fn now_ns(&self) -> EpochNs {
        self.anchor_epoch_ns + self.anchor_instant.elapsed().as_nanos() as i64
    }

    /// The tokio instant at which the run clock reads `epoch_ns`.
    pub fn instant_at(&self, epoch_ns: EpochNs) -> Instant {
        let delta = epoch_ns - self.anchor_epoch_ns;
        if delta <= 0 {
            self.anchor_instant
        } else {
            self.anchor_instant + std::time::Duration::from_nanos(delta as u64)
        }
    }

    /// Sleeps until the run clock reads `epoch_ns`.
    pub async fn sleep_until(&self, epoch_ns: EpochNs) {
        tokio::time::sleep_until(self.instant_at(epoch_ns)).await;
    }

    /// A human-readable description for the manifest.
    pub fn describe(&self) -> &'static str {
        if self.virtual_time {
            "virtual: simulated Unix-epoch ns, anchored at run start, advanced by a paused tokio clock"
        } else {
            "realtime: Unix-epoch ns, CLOCK_REALTIME read once at run start, advanced by CLOCK_MONOTONIC"
        }
    }

    /// Whether this clock is virtual (simulated node).
    pub fn is_virtual(&self) -> bool {
        self.virtual_time
    }
}
