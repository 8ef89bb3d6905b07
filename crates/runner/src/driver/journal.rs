//! What a run tells while it goes: every event is appended to
//! `events.jsonl` and shown to the observer, the monitor's events are
//! logged in the order they arrived, and every wait shows progress and ends
//! at once when the run is stopped.

use crate::error::RunError;
use crate::observer::Observer;
use crate::stop::{StopLatch, StopReason};
use powerlab_core::RunClock;
use powerlab_rundir::{EventLog, RunEvent};
use std::future::Future;
use std::time::Duration;
use tokio::sync::mpsc;

/// How often [`Journal::guarded_ticking`] calls its function.
pub(crate) const TICK: Duration = Duration::from_millis(250);

/// Where a wait stands in the campaign, for the progress shown meanwhile.
pub(crate) struct Progress<'a> {
    /// Nominal ns of the campaign done when the wait began.
    pub done_ns: i64,
    /// Nominal ns of the whole campaign.
    pub total_ns: i64,
    /// Run-clock time from which the wait's own progress counts.
    pub start_ns: i64,
    /// The current rung's label.
    pub label: &'a str,
}

/// The event log, the observer and the stop latch of a run.
pub(crate) struct Journal<'a> {
    /// The run clock.
    pub clock: RunClock,
    /// The run's stop latch.
    pub stop: StopLatch,
    /// The user's view of the run.
    pub observer: &'a mut dyn Observer,
    events: EventLog,
    monitor_rx: mpsc::UnboundedReceiver<RunEvent>,
    /// The live metrics' state, when served: every event and progress.
    live: Option<std::sync::Arc<powerlab_live::Live>>,
}

impl<'a> Journal<'a> {
    /// A journal writing into `events`, with the monitor's events arriving
    /// on `monitor_rx`.
    pub fn new(
        clock: RunClock,
        stop: StopLatch,
        observer: &'a mut dyn Observer,
        events: EventLog,
        monitor_rx: mpsc::UnboundedReceiver<RunEvent>,
        live: Option<std::sync::Arc<powerlab_live::Live>>,
    ) -> Self {
        Journal {
            clock,
            stop,
            observer,
            events,
            monitor_rx,
            live,
        }
    }

    /// Shows an event to the observer and appends it to the event log.
    pub fn log(&mut self, e: RunEvent) -> Result<(), RunError> {
        self.observer.event(&e);
        if let Some(live) = &self.live {
            live.on_event(&e);
        }
        self.events.append(&e).map_err(RunError::from)
    }

    /// Logs every event the monitor has forwarded so far.
    pub fn pump_monitor(&mut self) -> Result<(), RunError> {
        while let Ok(e) = self.monitor_rx.try_recv() {
            self.log(e)?;
        }
        Ok(())
    }

    /// Progress to the observer and the live metrics.
    pub fn progress(&mut self, done_ns: i64, total_ns: i64, label: &str) {
        self.observer.progress(done_ns, total_ns, label);
        if let Some(live) = &self.live {
            live.progress(done_ns, total_ns);
        }
    }

    /// The run's stop reason, if one was raised.
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.stop.current()
    }

    /// Awaits `f` unless the run is stopped first; reports progress each second.
    pub async fn guarded<F: Future>(
        &mut self,
        f: F,
        progress: Progress<'_>,
    ) -> Result<F::Output, StopReason> {
        self.guarded_ticking(f, progress, None).await
    }

    /// [`Journal::guarded`], also calling `every` each [`TICK`] (a running
    /// window's edges written as the GPUs achieve them). A reason `every`
    /// returns stops the run (raised on the latch, so the workers stop too).
    pub async fn guarded_ticking<F: Future>(
        &mut self,
        f: F,
        progress: Progress<'_>,
        mut every: Option<&mut dyn FnMut() -> Result<(), StopReason>>,
    ) -> Result<F::Output, StopReason> {
        tokio::pin!(f);
        let Progress {
            done_ns,
            total_ns,
            start_ns,
            label,
        } = progress;
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut abort_rx = self.stop.subscribe();
        let mut quick = tokio::time::interval(TICK);
        quick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let ticking = every.is_some();
        loop {
            tokio::select! {
                out = &mut f => {
                    // A worker that answered because the run was aborted must
                    // not turn the abort's reason into its own error.
                    if let Some(reason) = self.stop_reason() {
                        return Err(reason);
                    }
                    return Ok(out);
                }
                r = abort_rx.wait_for(|v| v.is_some()) => {
                    let reason = r.ok().and_then(|v| v.clone()).unwrap_or_else(|| StopReason::Failed("abort channel closed".into()));
                    return Err(reason);
                }
                _ = tick.tick() => {
                    let elapsed = (self.clock.now_ns() - start_ns).max(0);
                    self.progress(done_ns + elapsed, total_ns, label);
                }
                _ = quick.tick(), if ticking => {
                    if let Some(Err(reason)) = every.as_mut().map(|f| f()) {
                        self.stop.raise(reason);
                    }
                }
            }
        }
    }
}
