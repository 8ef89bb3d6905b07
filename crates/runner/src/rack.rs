//! The coordinator's side of a rack run: before every rung the node joins
//! the rack exchange (see `powerlab_rack::protocol`) and starts at the epoch
//! every node derived; when it leaves the rung loop it keeps exchanging its
//! end until every node has ended. Waiting polls the link thread, so a stop
//! (Ctrl-C, SIGTERM from the launcher, an interlock) is noticed at once and
//! a silent node becomes a timeout naming the rung, never a hang.

use crate::stop::{StopLatch, StopReason};
use powerlab_campaign::RackPosition;
use powerlab_rack::protocol::{all_ended, decide, gather_json};
use powerlab_rack::{Agreement, NodeEnd, Pending, RackError, RackLink, RackMsg};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// This node's part in a rack run.
pub struct RackRun {
    /// The link to the other nodes.
    pub link: Arc<RackLink>,
    /// Rank and node count.
    pub position: RackPosition,
    /// Node labels by rank.
    pub nodes: Vec<String>,
    /// This node's run directory (inside the rack's run directory).
    pub node_dir: PathBuf,
    /// Longest wait for every node at one exchange.
    pub exchange_timeout: Duration,
    /// How long the preflight exchanges took (seeds the first rung's margin), ns.
    pub first_exchange_ns: i64,
}

impl std::fmt::Debug for RackRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RackRun")
            .field("position", &self.position)
            .field("nodes", &self.nodes)
            .field("node_dir", &self.node_dir)
            .finish()
    }
}

impl RackRun {
    /// `nNNN-host (rank N)`.
    pub fn describe(&self, rank: usize) -> String {
        format!(
            "node {} (rank {rank})",
            self.nodes.get(rank).map(String::as_str).unwrap_or("?")
        )
    }
}

/// Set by the binary's signal handler: a signal arrived (under a launcher,
/// SIGTERM means the job is going down).
pub static SIGNAL_SEEN: AtomicBool = AtomicBool::new(false);

/// Waits for a link answer without blocking the runtime's other tasks and
/// without letting a paused (virtual) clock run ahead meanwhile.
///
/// # Errors
/// The link failed (a peer gone, a garbled message), the wait outlasted the
/// rack's exchange timeout, or `stop` gave a reason to stop waiting.
pub async fn wait_pending<T>(
    p: Pending<T>,
    virtual_time: bool,
    stop: &dyn Fn() -> Option<StopReason>,
    timeout: Duration,
) -> Result<Result<T, RackError>, WaitEnd> {
    let start = Instant::now();
    loop {
        if let Some(v) = p.try_take() {
            return Ok(v);
        }
        if let Some(r) = stop() {
            return Err(WaitEnd::Stopped(r));
        }
        if start.elapsed() > timeout {
            return Err(WaitEnd::Timeout);
        }
        if virtual_time {
            // Busy with real time only: virtual time must not advance while
            // the other nodes are still on their way to this exchange.
            std::thread::sleep(Duration::from_micros(200));
            tokio::task::yield_now().await;
        } else {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

/// Why a wait ended without an answer.
#[derive(Debug)]
pub enum WaitEnd {
    /// The run is being stopped.
    Stopped(StopReason),
    /// No answer within the timeout.
    Timeout,
}

/// Per-run state of the exchanges.
pub(crate) struct RackSync {
    rack: Arc<RackRun>,
    last_exchange_ns: i64,
    /// False once an exchange was abandoned mid-way: no further collective
    /// can pair up, so none is attempted.
    usable: bool,
    /// Set when another node's end stopped this one.
    pub stopped_by: Option<(usize, String)>,
    virtual_time: bool,
    /// Another node's alarm: (its rank, the text every node reports).
    alarm: Arc<std::sync::Mutex<Option<(usize, String)>>>,
}

impl RackSync {
    pub(crate) fn new(rack: Arc<RackRun>, virtual_time: bool) -> Self {
        let first = rack.first_exchange_ns;
        RackSync {
            rack,
            last_exchange_ns: first,
            usable: true,
            stopped_by: None,
            virtual_time,
            alarm: Arc::new(std::sync::Mutex::new(None)),
        }
    }

    fn alarm(&self) -> Option<(usize, String)> {
        self.alarm.lock().ok().and_then(|a| a.clone())
    }

    /// Watches for another node's alarm (sent when it leaves its rung loop,
    /// mid-rung included) and stops this node at once, naming that node.
    pub(crate) fn spawn_alarm_watch(&self, stop: StopLatch) -> tokio::task::JoinHandle<()> {
        let rack = self.rack.clone();
        let slot = self.alarm.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(20));
            loop {
                tick.tick().await;
                let Some((rank, bytes)) = rack.link.alarms().into_iter().next() else {
                    continue;
                };
                let end: NodeEnd = serde_json::from_slice(&bytes).unwrap_or(NodeEnd::Failed {
                    reason: "an unreadable alarm".into(),
                });
                let text = format!(
                    "{} ended: {}",
                    rack.describe(rank),
                    end.reason().unwrap_or("ended")
                );
                if let Ok(mut a) = slot.lock() {
                    *a = Some((rank, text.clone()));
                }
                let reason = format!("stopped because {text}; every node of the rack stops");
                stop.raise(match end {
                    NodeEnd::Interrupted { .. } => StopReason::Interrupted(reason),
                    _ => StopReason::Failed(reason),
                });
                return;
            }
        })
    }

    /// Tells every other node at once that this one left its rung loop
    /// (not for a signal: the launcher delivers those to every node).
    pub(crate) fn post_alarm(&self, end: &NodeEnd) {
        if matches!(
            end,
            NodeEnd::Complete | NodeEnd::Interrupted { .. } | NodeEnd::Stopped { .. }
        ) || !self.usable
        {
            return;
        }
        let Ok(bytes) = serde_json::to_vec(end) else {
            return;
        };
        // Queued before the end exchange on the link thread, so it leaves first.
        let _ = self.rack.link.submit(move |t| t.post_alarm(&bytes));
    }

    /// How this node ended, from its outcome and what stopped it.
    pub(crate) fn end_of(&self, outcome: &Result<(), StopReason>) -> NodeEnd {
        let by = self.stopped_by.clone().or_else(|| self.alarm());
        match (outcome, by) {
            (Ok(()), _) => NodeEnd::Complete,
            (Err(_), Some((by_rank, reason))) => NodeEnd::Stopped { by_rank, reason },
            (Err(StopReason::Interrupted(r)), None) => NodeEnd::Interrupted { reason: r.clone() },
            (Err(StopReason::Failed(r)), None) => NodeEnd::Failed { reason: r.clone() },
        }
    }

    async fn exchange(
        &mut self,
        msg: RackMsg,
        what: &str,
        stop: &dyn Fn() -> Option<StopReason>,
    ) -> Result<Vec<RackMsg>, StopReason> {
        if !self.usable {
            return Err(StopReason::Failed(format!(
                "{what}: the rack exchange was abandoned earlier"
            )));
        }
        let t0 = Instant::now();
        let pending = self.rack.link.submit(move |t| gather_json(t, &msg));
        match wait_pending(pending, self.virtual_time, stop, self.rack.exchange_timeout).await {
            Ok(Ok(msgs)) => {
                self.last_exchange_ns = t0.elapsed().as_nanos() as i64;
                Ok(msgs)
            }
            Ok(Err(e)) => {
                self.usable = false;
                Err(StopReason::Failed(format!("{what}: {e}")))
            }
            Err(WaitEnd::Stopped(r)) => {
                self.usable = false;
                Err(r)
            }
            Err(WaitEnd::Timeout) => {
                self.usable = false;
                Err(StopReason::Failed(format!(
                    "{what}: not every node answered within {} s; a node is hung or far slower than the others (each node's events.jsonl shows where it stopped)",
                    self.rack.exchange_timeout.as_secs()
                )))
            }
        }
    }

    /// The epoch every node starts `rung_id` at, or why every node stops.
    pub(crate) async fn before_rung(
        &mut self,
        rung_id: u32,
        label: &str,
        now_ns: i64,
        lead_ns: i64,
        stop: &StopLatch,
    ) -> Result<i64, StopReason> {
        let msg = RackMsg::Rung {
            rung_id,
            now_ns,
            lead_ns,
            exchange_ns: self.last_exchange_ns,
        };
        // Stopped by another node's alarm, this node still completes the
        // exchange: the others answer it with their ends, and the
        // collectives stay paired.
        let alarm = self.alarm.clone();
        let stopped = || {
            if SIGNAL_SEEN.load(Ordering::Relaxed)
                || alarm.lock().map(|a| a.is_none()).unwrap_or(true)
            {
                stop.current()
            } else {
                None
            }
        };
        let msgs = self
            .exchange(msg, &format!("rack barrier before rung {label}"), &stopped)
            .await?;
        match decide(&msgs) {
            Ok(Agreement::Start { epoch_ns }) => Ok(epoch_ns),
            Ok(Agreement::Stop { rank, end }) => {
                let reason = end.reason().unwrap_or("ended").to_string();
                let text = match &end {
                    NodeEnd::Stopped { by_rank, .. } => {
                        format!("{} stopped: {reason}", self.rack.describe(*by_rank))
                    }
                    _ => format!("{} ended: {reason}", self.rack.describe(rank)),
                };
                let cause_rank = if let NodeEnd::Stopped { by_rank, .. } = &end {
                    *by_rank
                } else {
                    rank
                };
                self.stopped_by = Some((cause_rank, text.clone()));
                let text = format!("stopped because {text}; every node of the rack stops");
                Err(match end {
                    NodeEnd::Interrupted { .. } => StopReason::Interrupted(text),
                    _ => StopReason::Failed(text),
                })
            }
            Err(e) => {
                // Every rank derived the same error from the same messages.
                self.stopped_by = Some((self.rack.position.rank, e.to_string()));
                Err(StopReason::Failed(e.to_string()))
            }
        }
    }

    /// Says how this node ended, until every node has said it. Returns the
    /// ends of all nodes by rank. A node stopped by a signal does not wait:
    /// under a launcher every rank gets it, and the launcher kills what is
    /// left soon after.
    pub(crate) async fn finish(&mut self, end: NodeEnd) -> Result<Vec<NodeEnd>, StopReason> {
        if matches!(end, NodeEnd::Interrupted { .. }) || SIGNAL_SEEN.load(Ordering::Relaxed) {
            return Err(StopReason::Interrupted(
                "a signal ended this node; the rack exchange is not waited for".into(),
            ));
        }
        let stop = || {
            SIGNAL_SEEN.load(Ordering::Relaxed).then(|| {
                StopReason::Interrupted("signal received while waiting for the other nodes".into())
            })
        };
        // Each round, every node still in its rung loop sees an end and
        // leaves it; nodes + 1 rounds always suffice.
        for _ in 0..=self.rack.position.nodes {
            let msgs = self
                .exchange(RackMsg::End { end: end.clone() }, "rack end of run", &stop)
                .await?;
            if all_ended(&msgs) {
                return Ok(msgs
                    .into_iter()
                    .filter_map(|m| {
                        if let RackMsg::End { end } = m {
                            Some(end)
                        } else {
                            None
                        }
                    })
                    .collect());
            }
        }
        Err(StopReason::Failed(
            "rack end of run: the nodes did not all end".into(),
        ))
    }
}
