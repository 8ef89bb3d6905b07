//! The node power pollers: one blocking task per `[[node_power]]` source,
//! beside the GPU samplers for the whole run. Each asks its meter on a
//! fixed grid (`interval_ms`), records when the request left and when the
//! answer came, and writes every reading or failure at once. A failing
//! source is retried with backoff (doubling up to 30 s) and never stops
//! the campaign: node power is an extra beside the GPU figures.

use powerlab_core::{NodeMeter, RunClock};
use powerlab_rundir::NodePowerWriter;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Longest wait between two attempts of a failing source.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How often a waiting poller looks at its stop flag.
const STOP_POLL: Duration = Duration::from_millis(20);

/// What one poller did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MeterStats {
    /// Source name.
    pub source: String,
    /// Reads that returned a number.
    pub ok: u64,
    /// Reads that failed.
    pub failed: u64,
    /// Set when the source's file could not be written (the poller stopped).
    pub write_error: Option<String>,
}

/// Starts a poller; it ends when `stop` turns true.
pub(crate) fn spawn_meter(
    mut meter: Box<dyn NodeMeter>,
    mut writer: NodePowerWriter,
    clock: RunClock,
    interval: Duration,
    stop: watch::Receiver<bool>,
) -> JoinHandle<MeterStats> {
    tokio::task::spawn_blocking(move || {
        let mut stats = MeterStats {
            source: meter.name().to_string(),
            ..MeterStats::default()
        };
        let interval_ns = interval.as_nanos() as i64;
        let mut next_ns = clock.now_ns();
        let mut failures: u32 = 0;
        loop {
            if !wait_until(&clock, next_ns, &stop) {
                break;
            }
            let sent_ns = clock.now_ns();
            let reading = meter.read();
            let recv_ns = clock.now_ns();
            if let Err(e) = writer.write(sent_ns, recv_ns, &reading) {
                stats.write_error = Some(e.to_string());
                tracing::error!(source = %stats.source, "node power file: {e}");
                break;
            }
            match &reading {
                Ok(_) => {
                    stats.ok += 1;
                    failures = 0;
                    // On the grid; a slow answer skips the slots it overran.
                    next_ns += interval_ns;
                    if next_ns < recv_ns {
                        let behind = recv_ns - next_ns;
                        next_ns += (behind + interval_ns - 1) / interval_ns * interval_ns;
                    }
                }
                Err(e) => {
                    stats.failed += 1;
                    failures = failures.saturating_add(1);
                    if failures == 1 || failures.is_power_of_two() {
                        tracing::warn!(source = %stats.source, failures, "node power read failed: {e}");
                    }
                    let backoff = interval
                        .saturating_mul(1u32 << failures.min(16).saturating_sub(1))
                        .min(MAX_BACKOFF.max(interval));
                    next_ns = recv_ns + backoff.as_nanos() as i64;
                }
            }
        }
        stats
    })
}

/// Sleeps until the run clock reads `at_ns`; false when stopped first.
fn wait_until(clock: &RunClock, at_ns: i64, stop: &watch::Receiver<bool>) -> bool {
    loop {
        if *stop.borrow() {
            return false;
        }
        let left = at_ns - clock.now_ns();
        if left <= 0 {
            return true;
        }
        std::thread::sleep(STOP_POLL.min(Duration::from_nanos(left as u64)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use powerlab_core::{MeterError, NodeReading};
    use std::sync::{Arc, Mutex};

    /// Fails reads `fail_from..fail_to` (by call number).
    struct Flaky {
        calls: Arc<Mutex<Vec<i64>>>,
        clock: RunClock,
        fail: std::ops::Range<usize>,
    }

    impl NodeMeter for Flaky {
        fn name(&self) -> &str {
            "flaky"
        }
        fn kind(&self) -> &'static str {
            "command"
        }
        fn target(&self) -> String {
            "flaky".into()
        }
        fn read(&mut self) -> Result<NodeReading, MeterError> {
            let mut c = self
                .calls
                .lock()
                .map_err(|_| MeterError::Config("poisoned".into()))?;
            c.push(self.clock.now_ns());
            if self.fail.contains(&(c.len() - 1)) {
                return Err(MeterError::Unreachable {
                    target: "flaky".into(),
                    detail: "down".into(),
                });
            }
            Ok(NodeReading {
                node_w: 100.0,
                supplies_w: vec![],
            })
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn backs_off_while_failing_and_resumes_on_the_grid() {
        let dir = tempfile::tempdir().unwrap();
        let clock = RunClock::realtime();
        let calls = Arc::new(Mutex::new(Vec::new()));
        let meter = Flaky {
            calls: calls.clone(),
            clock,
            fail: 2..5,
        };
        let writer = NodePowerWriter::create(dir.path(), "n", "flaky", "command").unwrap();
        let (tx, rx) = watch::channel(false);
        let h = spawn_meter(
            Box::new(meter),
            writer,
            clock,
            Duration::from_millis(40),
            rx,
        );
        tokio::time::sleep(Duration::from_millis(900)).await;
        tx.send(true).unwrap();
        let stats = h.await.unwrap();
        let c = calls.lock().unwrap().clone();
        assert_eq!(stats.failed, 3);
        assert_eq!(stats.ok as usize + 3, c.len());
        let gap = |i: usize| (c[i + 1] - c[i]) as f64 / 1e6;
        // Backoff after the 1st, 2nd, 3rd failure: 40, 80, 160 ms.
        assert!(gap(2) >= 39.0 && gap(2) < 70.0, "{}", gap(2));
        assert!(gap(3) >= 79.0 && gap(3) < 120.0, "{}", gap(3));
        assert!(gap(4) >= 159.0 && gap(4) < 220.0, "{}", gap(4));
        assert!(c.len() > 7, "{}", c.len());
        let file = powerlab_rundir::node_power::node_power_file(dir.path(), "flaky");
        let (rows, _) = powerlab_rundir::node_power::read_node_power(&file).unwrap();
        assert_eq!(rows.len(), c.len());
        assert_eq!(rows.iter().filter(|r| r.watts.is_none()).count(), 3);
    }
}
