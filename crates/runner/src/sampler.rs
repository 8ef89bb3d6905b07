//! One sampler task per GPU: drains the power source on a fixed cadence,
//! appends every sample to the GPU's raw file, flushes at least every
//! second, and reports faults and interlock readings to the coordinator.
//! Transient read errors are counted and retried; a device that stops
//! answering, a fatal device event or a failed write stops the run.

use crate::StopReason;
use crate::tap::PowerTap;
use powerlab_campaign::Limits;
use powerlab_core::hw::{HwError, PowerSource};
use powerlab_core::sample::ClockEventBits;
use powerlab_core::units::NS_PER_MS;
use powerlab_core::{Instrument, RunClock, Sample};
use powerlab_rundir::{RawWriter, RunEvent};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

/// Sampler cadence and limits.
#[derive(Debug, Clone)]
pub struct SamplerConfig {
    /// Poll period of the instant field (and of the interlock checks).
    pub poll_ns: i64,
    /// Drain period of the driver's buffered samples.
    pub buffer_ns: i64,
    /// Poll period of the average field and energy counter.
    pub fields_ns: i64,
    /// Poll period of clocks, temperatures and reasons.
    pub status_ns: i64,
    /// Longest time between flushes.
    pub flush_ns: i64,
    /// Safety limits.
    pub limits: Limits,
    /// Consecutive failing time after which a GPU counts as not answering.
    pub unresponsive_ns: i64,
    /// Where the buffered samples also go (kept only while the driver arms it).
    pub tap: PowerTap,
    /// The live metrics' state, when served: each batch is recorded in it.
    pub live: Option<std::sync::Arc<powerlab_live::Live>>,
}

/// What a sampler tells the coordinator.
#[derive(Debug, Clone)]
pub enum SamplerMsg {
    /// Latest buffered power of a GPU (for the node-power interlock).
    Power {
        /// The GPU's index in the run.
        gpu: usize,
        /// Its latest buffered power, W.
        watts: f64,
    },
    /// An event to log; with a stop reason if the run must stop.
    Event(Box<RunEvent>, Option<StopReason>),
}

impl SamplerMsg {
    /// An event message (the event is boxed: it is far larger than a power reading).
    fn event(event: RunEvent, reason: Option<StopReason>) -> Self {
        Self::Event(Box::new(event), reason)
    }
}

/// What a sampler did, for the closing report.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct SamplerStats {
    /// GPU key.
    pub gpu: String,
    /// Rows written.
    pub rows: u64,
    /// Buffered samples captured.
    pub buffered_samples: u64,
    /// Largest gap between consecutive buffered samples, ns.
    pub max_buffered_gap_ns: i64,
    /// First and last buffered timestamps.
    pub buffered_span_ns: (i64, i64),
    /// Transient read errors (retried).
    pub transient_errors: u64,
    /// CPU time the sampler thread used is not separable here; wall time spent in reads, ns.
    pub read_time_ns: i64,
    /// Buffered readings dropped as a repeat of the previous one, handed
    /// again by the driver under a later timestamp (not in `rows`).
    #[serde(default)]
    pub buffered_repeats_dropped: u64,
}

struct State {
    idx: usize,
    key: String,
    fatal_sent: bool,
    interlocks_sent: Vec<String>,
    consecutive_fail_ns: i64,
    last_buffered_ts: Option<i64>,
}

/// Spawns the sampler of one GPU.
pub fn spawn_sampler(
    idx: usize,
    source: Box<dyn PowerSource>,
    writer: RawWriter,
    clock: RunClock,
    cfg: SamplerConfig,
    tx: mpsc::UnboundedSender<SamplerMsg>,
    mut stop: watch::Receiver<bool>,
) -> JoinHandle<SamplerStats> {
    tokio::spawn(async move {
        let mut sampler = Sampler::new(idx, source, writer, clock, cfg, tx);
        let mut poll = tokio::time::interval(Duration::from_nanos(sampler.cfg.poll_ns as u64));
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let stopping = tokio::select! {
                _ = poll.tick() => false,
                _ = stop.wait_for(|v| *v) => true,
            };
            sampler.tick(stopping);
            if stopping {
                break;
            }
        }
        sampler.stats.buffered_repeats_dropped = sampler.source.repeats_dropped();
        sampler.stats
    })
}

/// One GPU's sampler between ticks: its source and raw file, what it has
/// told the coordinator, and when each kind of read last ran.
struct Sampler {
    source: Box<dyn PowerSource>,
    writer: RawWriter,
    clock: RunClock,
    cfg: SamplerConfig,
    tx: mpsc::UnboundedSender<SamplerMsg>,
    st: State,
    stats: SamplerStats,
    last_buffer: Option<i64>,
    last_fields: Option<i64>,
    last_status: Option<i64>,
    /// False once a write failed: nothing more is written.
    write_ok: bool,
    /// Whether the latest tick drained the buffered samples.
    drained: bool,
}

impl Sampler {
    fn new(
        idx: usize,
        source: Box<dyn PowerSource>,
        writer: RawWriter,
        clock: RunClock,
        cfg: SamplerConfig,
        tx: mpsc::UnboundedSender<SamplerMsg>,
    ) -> Self {
        let key = source.identity().key.clone();
        let st = State {
            idx,
            key: key.clone(),
            fatal_sent: false,
            interlocks_sent: Vec::new(),
            consecutive_fail_ns: 0,
            last_buffered_ts: None,
        };
        let stats = SamplerStats {
            gpu: key,
            buffered_span_ns: (0, 0),
            ..Default::default()
        };
        Sampler {
            source,
            writer,
            clock,
            cfg,
            tx,
            st,
            stats,
            last_buffer: None,
            last_fields: None,
            last_status: None,
            write_ok: true,
            drained: false,
        }
    }

    /// One poll: read what is due (everything when `stopping`), forward
    /// device events, account the buffered samples, write the batch.
    fn tick(&mut self, stopping: bool) {
        let now = self.clock.now_ns();
        let t0 = std::time::Instant::now();
        let batch = self.read_due(now, stopping);
        self.forward_events(now);
        self.stats.read_time_ns += t0.elapsed().as_nanos() as i64;
        self.account_buffered(&batch);
        self.cfg.tap.feed(self.st.idx, &batch);
        if self.write_ok {
            self.write(&batch, now, stopping);
            // What the raw file holds, once written: one short lock.
            if let Some(live) = &self.cfg.live {
                live.record(self.st.idx, now, self.drained, &batch);
            }
        }
    }

    /// The instant field every poll; buffered samples, fields and status
    /// when their period has passed.
    fn read_due(&mut self, now: i64, stopping: bool) -> Vec<Sample> {
        let mut batch = Vec::new();
        match self.source.read_instant(now) {
            Ok(s) => {
                self.st.consecutive_fail_ns = 0;
                batch.push(s);
            }
            Err(e) => self.read_error(now, e),
        }
        self.drained = due(&mut self.last_buffer, now, self.cfg.buffer_ns, stopping);
        if self.drained {
            match self.source.drain_buffered(now) {
                Ok(s) => batch.extend(s),
                Err(e) => self.read_error(now, e),
            }
        }
        if due(&mut self.last_fields, now, self.cfg.fields_ns, stopping) {
            match self.source.read_fields(now) {
                Ok(s) => batch.extend(s),
                Err(e) => self.read_error(now, e),
            }
        }
        if due(&mut self.last_status, now, self.cfg.status_ns, stopping) {
            match self.source.read_status(now) {
                Ok(s) => {
                    check_status(&mut self.st, &self.cfg, &self.tx, now, &s);
                    batch.extend(s);
                }
                Err(e) => self.read_error(now, e),
            }
        }
        batch
    }

    fn read_error(&mut self, now: i64, e: HwError) {
        handle_read_error(&mut self.st, &mut self.stats, &self.cfg, &self.tx, now, e);
    }

    /// Device events (Xid, lost GPU, …) to the coordinator; a fatal one stops the run.
    fn forward_events(&mut self, now: i64) {
        for ev in self.source.drain_events(now) {
            let reason = ev
                .fatal
                .then(|| StopReason::Failed(format!("{} on {}: {}", ev.kind, ev.gpu, ev.detail)));
            let _ = self.tx.send(SamplerMsg::event(
                RunEvent::Fault {
                    ts_ns: ev.ts_ns,
                    gpu: Some(ev.gpu.clone()),
                    kind: ev.kind.clone(),
                    detail: ev.detail.clone(),
                    fatal: ev.fatal,
                },
                reason,
            ));
        }
    }

    /// Counts the buffered samples and their gaps, and sends the latest
    /// buffered power to the node-power interlock.
    fn account_buffered(&mut self, batch: &[Sample]) {
        let (st, stats) = (&mut self.st, &mut self.stats);
        let mut latest_w = None;
        for s in batch
            .iter()
            .filter(|s| s.instrument == Instrument::BufferedW)
        {
            if let Some(prev) = st.last_buffered_ts {
                stats.max_buffered_gap_ns = stats.max_buffered_gap_ns.max(s.ts_ns - prev);
            } else {
                stats.buffered_span_ns.0 = s.ts_ns;
            }
            st.last_buffered_ts = Some(s.ts_ns);
            stats.buffered_span_ns.1 = s.ts_ns;
            stats.buffered_samples += 1;
            latest_w = Some(s.value);
        }
        if let Some(w) = latest_w {
            let _ = self.tx.send(SamplerMsg::Power {
                gpu: st.idx,
                watts: w,
            });
        }
    }

    /// Appends the batch to the raw file and flushes when due (always when
    /// stopping); a failed write stops the run rather than run it blind.
    fn write(&mut self, batch: &[Sample], now: i64, stopping: bool) {
        let result = self.writer.write(batch).and_then(|_| {
            if stopping {
                self.writer.flush(now)
            } else {
                self.writer.flush_if_due(now, self.cfg.flush_ns).map(|_| ())
            }
        });
        match result {
            Ok(()) => self.stats.rows = self.writer.rows(),
            Err(e) => {
                self.write_ok = false;
                let detail = format!(
                    "writing raw samples failed: {e}; the load is stopped rather than run blind"
                );
                let _ = self.tx.send(SamplerMsg::event(
                    RunEvent::Fault {
                        ts_ns: now,
                        gpu: Some(self.st.key.clone()),
                        kind: "disk".into(),
                        detail: detail.clone(),
                        fatal: true,
                    },
                    Some(StopReason::Failed(detail)),
                ));
            }
        }
    }
}

/// Whether a read of period `period_ns` is due at `now` (always when
/// `stopping`); if so, `last` becomes `now`.
fn due(last: &mut Option<i64>, now: i64, period_ns: i64, stopping: bool) -> bool {
    let due = last.is_none_or(|t| now - t >= period_ns) || stopping;
    if due {
        *last = Some(now);
    }
    due
}

fn handle_read_error(
    st: &mut State,
    stats: &mut SamplerStats,
    cfg: &SamplerConfig,
    tx: &mpsc::UnboundedSender<SamplerMsg>,
    now: i64,
    e: HwError,
) {
    match e {
        HwError::Transient { .. } => {
            stats.transient_errors += 1;
            st.consecutive_fail_ns += cfg.poll_ns;
            if st.consecutive_fail_ns >= cfg.unresponsive_ns && !st.fatal_sent {
                st.fatal_sent = true;
                let detail = format!(
                    "NVML stopped answering for {} ms on {}: {e}",
                    st.consecutive_fail_ns / NS_PER_MS,
                    st.key
                );
                let _ = tx.send(SamplerMsg::event(
                    RunEvent::Fault {
                        ts_ns: now,
                        gpu: Some(st.key.clone()),
                        kind: "nvml_unresponsive".into(),
                        detail: detail.clone(),
                        fatal: true,
                    },
                    Some(StopReason::Failed(detail)),
                ));
            }
        }
        other => {
            if !st.fatal_sent {
                st.fatal_sent = true;
                let detail = other.to_string();
                let _ = tx.send(SamplerMsg::event(
                    RunEvent::Fault {
                        ts_ns: now,
                        gpu: Some(st.key.clone()),
                        kind: "device".into(),
                        detail: detail.clone(),
                        fatal: true,
                    },
                    Some(StopReason::Failed(format!(
                        "GPU {} (run index {}) failed: {detail}",
                        st.key, st.idx
                    ))),
                ));
            }
        }
    }
}

fn check_status(
    st: &mut State,
    cfg: &SamplerConfig,
    tx: &mpsc::UnboundedSender<SamplerMsg>,
    now: i64,
    samples: &[Sample],
) {
    for s in samples {
        let trip = match s.instrument {
            Instrument::GpuTempC if s.value > cfg.limits.max_gpu_temp_c => Some((
                "max_gpu_temp_c",
                format!(
                    "{} GPU temperature {} °C > limit {} °C",
                    st.key, s.value, cfg.limits.max_gpu_temp_c
                ),
            )),
            Instrument::MemTempC if s.value > cfg.limits.max_memory_temp_c => Some((
                "max_memory_temp_c",
                format!(
                    "{} memory temperature {} °C > limit {} °C",
                    st.key, s.value, cfg.limits.max_memory_temp_c
                ),
            )),
            Instrument::ClockEvents
                if cfg.limits.abort_on_hw_slowdown
                    && ClockEventBits(s.value as u64).any_hw_slowdown() =>
            {
                let bits = ClockEventBits(s.value as u64);
                Some((
                    "abort_on_hw_slowdown",
                    format!(
                        "{} clock-event reasons 0x{:x} ({}) assert a hardware slowdown",
                        st.key,
                        bits.0,
                        bits.names().join(", ")
                    ),
                ))
            }
            _ => None,
        };
        if let Some((limit, reading)) = trip {
            if st.interlocks_sent.iter().any(|l| l == limit) {
                continue;
            }
            st.interlocks_sent.push(limit.to_string());
            let _ = tx.send(SamplerMsg::event(
                RunEvent::Interlock {
                    ts_ns: now,
                    limit: limit.into(),
                    reading: reading.clone(),
                },
                Some(StopReason::Failed(format!("interlock {limit}: {reading}"))),
            ));
        }
    }
}
