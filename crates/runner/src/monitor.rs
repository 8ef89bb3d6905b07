//! The monitor: the task that reads every sampler's messages while a run
//! goes. It keeps the latest buffered power of each GPU to enforce the
//! node-power interlock, raises the stop reason of a fault or an interlock
//! on the run's [`StopLatch`], and forwards every event to the coordinator,
//! which logs them in the order they arrived.

use crate::sampler::SamplerMsg;
use crate::stop::{StopLatch, StopReason};
use powerlab_core::RunClock;
use powerlab_rundir::RunEvent;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// What the monitor watches and where it reports.
pub(crate) struct Monitor {
    /// The run's stop latch.
    pub stop: StopLatch,
    /// The node-power limit, W (None: no limit).
    pub max_node_w: Option<f64>,
    /// GPUs on the node.
    pub gpus: usize,
    /// The run clock, to timestamp interlock events.
    pub clock: RunClock,
}

impl Monitor {
    /// Spawns the monitor over the samplers' channel. It ends when every
    /// sampler has dropped its sender; the events it forwards arrive on the
    /// returned receiver.
    pub fn spawn(
        self,
        mut samplers: mpsc::UnboundedReceiver<SamplerMsg>,
    ) -> (JoinHandle<()>, mpsc::UnboundedReceiver<RunEvent>) {
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let handle = tokio::spawn(async move {
            let mut latest = vec![0.0f64; self.gpus];
            let mut tripped = false;
            while let Some(msg) = samplers.recv().await {
                match msg {
                    SamplerMsg::Power { gpu, watts } => {
                        latest[gpu] = watts;
                        if tripped {
                            continue;
                        }
                        if let Some(event) = self.node_power_interlock(&latest) {
                            tripped = true;
                            let _ = events_tx.send(event);
                        }
                    }
                    SamplerMsg::Event(event, reason) => {
                        if let Some(r) = reason {
                            self.stop.raise(r);
                        }
                        let _ = events_tx.send(*event);
                    }
                }
            }
        });
        (handle, events_rx)
    }

    /// Checks the sum of the latest powers against the node limit; past it,
    /// raises the interlock's stop reason and returns its event.
    fn node_power_interlock(&self, latest: &[f64]) -> Option<RunEvent> {
        let limit = self.max_node_w?;
        let total: f64 = latest.iter().sum();
        // Written as `>` so that a NaN sum never trips it.
        let over = total > limit;
        if !over {
            return None;
        }
        let reading = format!(
            "node power {total:.0} W (sum of the latest buffered samples) > limit {limit:.0} W"
        );
        self.stop.raise(StopReason::Failed(format!(
            "interlock max_node_power_w: {reading}"
        )));
        Some(RunEvent::Interlock {
            ts_ns: self.clock.now_ns(),
            limit: "max_node_power_w".into(),
            reading,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn monitor(stop: &StopLatch) -> Monitor {
        Monitor {
            stop: stop.clone(),
            max_node_w: Some(1000.0),
            gpus: 2,
            clock: RunClock::virtual_at(1_700_000_000_000_000_000),
        }
    }

    async fn run(stop: &StopLatch, msgs: Vec<SamplerMsg>) -> Vec<RunEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        let (handle, mut events) = monitor(stop).spawn(rx);
        for m in msgs {
            tx.send(m).unwrap();
        }
        drop(tx);
        handle.await.unwrap();
        let mut out = Vec::new();
        while let Ok(e) = events.try_recv() {
            out.push(e);
        }
        out
    }

    fn power(gpu: usize, watts: f64) -> SamplerMsg {
        SamplerMsg::Power { gpu, watts }
    }

    #[tokio::test(start_paused = true)]
    async fn the_interlock_trips_once_on_the_sum_of_the_latest_powers() {
        let stop = StopLatch::new();
        let events = run(
            &stop,
            vec![
                power(0, 600.0),
                power(1, 300.0),
                power(0, 900.0),
                power(1, 900.0),
            ],
        )
        .await;
        assert_eq!(events.len(), 1, "{events:?}");
        let RunEvent::Interlock { limit, reading, .. } = &events[0] else {
            panic!("{events:?}");
        };
        assert_eq!(limit, "max_node_power_w");
        assert!(reading.starts_with("node power 1200 W"), "{reading}");
        let Some(StopReason::Failed(reason)) = stop.current() else {
            panic!("{:?}", stop.current());
        };
        assert!(reason.starts_with("interlock max_node_power_w: node power 1200 W"));
    }

    #[tokio::test(start_paused = true)]
    async fn the_interlock_keeps_an_earlier_reason_and_still_logs_its_event() {
        let stop = StopLatch::new();
        stop.raise(StopReason::Interrupted("SIGTERM received".into()));
        let events = run(&stop, vec![power(0, 2000.0)]).await;
        assert!(
            matches!(events[..], [RunEvent::Interlock { .. }]),
            "{events:?}"
        );
        assert_eq!(
            stop.current(),
            Some(StopReason::Interrupted("SIGTERM received".into()))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_sampler_event_raises_its_reason_only_if_it_is_the_first() {
        let stop = StopLatch::new();
        let note = |topic: &str| RunEvent::Note {
            ts_ns: 1,
            topic: topic.into(),
            detail: serde_json::Value::Null,
        };
        let events = run(
            &stop,
            vec![
                SamplerMsg::Event(Box::new(note("a")), None),
                SamplerMsg::Event(
                    Box::new(note("b")),
                    Some(StopReason::Failed("first".into())),
                ),
                SamplerMsg::Event(
                    Box::new(note("c")),
                    Some(StopReason::Failed("second".into())),
                ),
            ],
        )
        .await;
        assert_eq!(events, vec![note("a"), note("b"), note("c")]);
        assert_eq!(stop.current(), Some(StopReason::Failed("first".into())));
    }
}
