//! The tasks of a run: one sampler and one worker per GPU, and the monitor
//! over the samplers. This module starts them in order (samplers first, so
//! that every rung is sampled from its warm-up on) and stops them in the
//! reverse order: every GPU's load off first, then the samplers' final
//! drain and flush, then the monitor, then the node power pollers.

use crate::error::RunError;
use crate::meter::{MeterStats, spawn_meter};
use crate::monitor::Monitor;
use crate::sampler::{SamplerConfig, SamplerMsg, SamplerStats, spawn_sampler};
use crate::stop::StopLatch;
use crate::tap::PowerTap;
use crate::worker::{WorkerCmd, spawn_worker};
use powerlab_campaign::Campaign;
use powerlab_core::NodeMeter;
use powerlab_core::RunClock;
use powerlab_core::hw::{EdgeFeed, Gpu, PowerSource};
use powerlab_core::units::ms_to_ns_trunc;
use powerlab_rundir::{NodePowerWriter, RawWriter, RunEvent};
use std::path::Path;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

/// The running tasks of one run.
pub(crate) struct Crew {
    /// The workers' command channels, by GPU.
    pub workers: Vec<mpsc::Sender<WorkerCmd>>,
    /// Where each GPU hands over its edges as it achieves them, by GPU.
    pub feeds: Vec<EdgeFeed>,
    /// Each GPU's buffered samples, while armed (a calibration).
    pub tap: PowerTap,
    worker_handles: Vec<JoinHandle<()>>,
    stop_samplers: watch::Sender<bool>,
    sampler_handles: Vec<JoinHandle<SamplerStats>>,
    stop_meters: watch::Sender<bool>,
    meter_handles: Vec<JoinHandle<MeterStats>>,
    monitor: JoinHandle<()>,
}

/// What the crew is started on.
pub(crate) struct CrewSetup<'a> {
    /// The campaign (its sampling cadence and limits).
    pub campaign: &'a Campaign,
    /// The raw directory of the run.
    pub raw_dir: &'a Path,
    /// The run directory (node power files go under it).
    pub run_dir: &'a Path,
    /// The node id written on every raw row.
    pub node_id: &'a str,
    /// The GPU keys, by run index.
    pub keys: &'a [String],
    /// The run clock.
    pub clock: RunClock,
    /// Run start, ns (named in the raw files).
    pub start_ns: i64,
    /// The run's stop latch.
    pub stop: &'a StopLatch,
    /// The live metrics' state, when served.
    pub live: Option<std::sync::Arc<powerlab_live::Live>>,
}

impl Crew {
    /// Creates every raw file and starts the samplers, the monitor and the
    /// workers. The monitor's events arrive on the returned receiver.
    pub fn start(
        setup: CrewSetup<'_>,
        gpus: Vec<Box<dyn Gpu>>,
        sources: Vec<Box<dyn PowerSource>>,
        meters: Vec<Box<dyn NodeMeter>>,
    ) -> Result<(Crew, mpsc::UnboundedReceiver<RunEvent>), RunError> {
        let CrewSetup {
            campaign,
            raw_dir,
            run_dir,
            node_id,
            keys,
            clock,
            start_ns,
            stop,
            live,
        } = setup;
        let tap = PowerTap::new(keys.len());
        let cfg = sampler_config(campaign, tap.clone(), live);
        let (stop_samplers, stop_samplers_rx) = watch::channel(false);
        let (sampler_tx, sampler_rx) = mpsc::unbounded_channel::<SamplerMsg>();
        let mut sampler_handles = Vec::new();
        for (i, source) in sources.into_iter().enumerate() {
            let writer = RawWriter::create(raw_dir, node_id, &keys[i], start_ns)?;
            sampler_handles.push(spawn_sampler(
                i,
                source,
                writer,
                clock,
                cfg.clone(),
                sampler_tx.clone(),
                stop_samplers_rx.clone(),
            ));
        }
        drop(sampler_tx);
        let (stop_meters, stop_meters_rx) = watch::channel(false);
        let mut meter_handles = Vec::new();
        for meter in meters {
            let spec = campaign.node_power.iter().find(|s| s.name == meter.name());
            let Some(spec) = spec else {
                return Err(RunError::Internal(format!(
                    "node power meter `{}` is not in the campaign",
                    meter.name()
                )));
            };
            let writer = NodePowerWriter::create(run_dir, node_id, meter.name(), meter.kind())?;
            meter_handles.push(spawn_meter(
                meter,
                writer,
                clock,
                Duration::from_secs_f64(spec.interval_ms / 1000.0),
                stop_meters_rx.clone(),
            ));
        }
        let monitor = Monitor {
            stop: stop.clone(),
            max_node_w: campaign.limits.max_node_power_w,
            gpus: keys.len(),
            clock,
        };
        let (monitor, monitor_rx) = monitor.spawn(sampler_rx);
        let abort_rx = stop.subscribe();
        let mut workers = Vec::new();
        let mut worker_handles = Vec::new();
        let mut feeds = Vec::new();
        for mut gpu in gpus {
            let feed = EdgeFeed::new();
            gpu.set_edge_feed(feed.clone());
            feeds.push(feed);
            let (tx, h) = spawn_worker(gpu, abort_rx.clone());
            workers.push(tx);
            worker_handles.push(h);
        }
        let crew = Crew {
            workers,
            feeds,
            tap,
            worker_handles,
            stop_samplers,
            sampler_handles,
            stop_meters,
            meter_handles,
            monitor,
        };
        Ok((crew, monitor_rx))
    }

    /// Stops every GPU, then the samplers (final drain and flush), then
    /// waits briefly for the monitor. Returns each sampler's statistics (a
    /// sampler that did not end in time reports empty ones).
    pub async fn stop(&mut self) -> Vec<SamplerStats> {
        for w in &self.workers {
            let (tx, rx) = oneshot::channel();
            if w.send(WorkerCmd::Stop { reply: tx }).await.is_ok() {
                let _ = tokio::time::timeout(Duration::from_secs(2), rx).await;
            }
        }
        self.workers.clear();
        for h in self.worker_handles.drain(..) {
            let _ = tokio::time::timeout(Duration::from_secs(2), h).await;
        }
        let _ = self.stop_samplers.send(true);
        let mut samplers = Vec::new();
        for h in self.sampler_handles.drain(..) {
            match tokio::time::timeout(Duration::from_secs(5), h).await {
                Ok(Ok(s)) => samplers.push(s),
                _ => samplers.push(SamplerStats::default()),
            }
        }
        let _ = tokio::time::timeout(Duration::from_secs(1), &mut self.monitor).await;
        self.stop_meters().await;
        samplers
    }

    /// Stops the node power pollers, waiting at most 2 s in all. One still
    /// waiting on a slow answer is left to its own timeout: every row it
    /// took is on disk already (each is flushed when written), and the
    /// run does not wait for a hung BMC.
    async fn stop_meters(&mut self) {
        let _ = self.stop_meters.send(true);
        let until = tokio::time::Instant::now() + Duration::from_secs(2);
        for h in self.meter_handles.drain(..) {
            match tokio::time::timeout_at(until, h).await {
                Ok(Ok(s)) => tracing::info!(
                    source = %s.source,
                    ok = s.ok,
                    failed = s.failed,
                    "node power source stopped"
                ),
                _ => tracing::warn!(
                    "a node power source is still waiting for an answer; left to its timeout"
                ),
            }
        }
    }
}

/// The samplers' cadence and limits, from the campaign.
fn sampler_config(
    campaign: &Campaign,
    tap: PowerTap,
    live: Option<std::sync::Arc<powerlab_live::Live>>,
) -> SamplerConfig {
    SamplerConfig {
        poll_ns: ms_to_ns_trunc(campaign.sampling.poll_interval_ms),
        buffer_ns: ms_to_ns_trunc(campaign.sampling.buffer_interval_ms),
        fields_ns: ms_to_ns_trunc(campaign.sampling.field_interval_ms),
        status_ns: ms_to_ns_trunc(campaign.sampling.status_interval_ms),
        flush_ns: ms_to_ns_trunc(campaign.sampling.flush_interval_ms),
        limits: campaign.limits.clone(),
        unresponsive_ns: 2_000_000_000,
        tap,
        live,
    }
}

/// The spacing beyond which the live metrics count a gap, per instrument,
/// from the campaign's sampling periods.
pub(crate) fn gap_limits(campaign: &Campaign) -> powerlab_live::GapLimits {
    powerlab_live::GapLimits::new(
        ms_to_ns_trunc(campaign.sampling.poll_interval_ms),
        ms_to_ns_trunc(campaign.sampling.buffer_interval_ms),
        ms_to_ns_trunc(campaign.sampling.field_interval_ms),
    )
}
