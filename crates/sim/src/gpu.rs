//! The simulated node's implementations of the hardware seams.

use crate::device::{Demand, SimDevice};
use async_trait::async_trait;
use powerlab_core::collective::CollectiveTiming;
use powerlab_core::hw::{
    DeviceClock, DeviceEvent, EdgeFeed, EdgeRecord, Gpu, GpuIdentity, GpuSchedule, HwError,
    PowerSource, Readiness, RungOutcome,
};
use powerlab_core::job::JobEvent;
use powerlab_core::shape::EdgeKind;
use powerlab_core::shape::{LoadKind, LoadShape};
use powerlab_core::units::{ms_to_ns_f64, ms_to_ns_trunc, ns_to_s, us_to_ns_trunc};
use powerlab_core::{EpochNs, RunClock, Sample};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::{Arc, Mutex, MutexGuard};

/// Locks a device; a poisoned lock still holds valid physics state.
pub(crate) fn lock(dev: &Arc<Mutex<SimDevice>>) -> MutexGuard<'_, SimDevice> {
    dev.lock().unwrap_or_else(|p| p.into_inner())
}

/// A simulated GPU that runs load.
pub struct SimGpu {
    pub(crate) dev: Arc<Mutex<SimDevice>>,
    pub(crate) id: GpuIdentity,
    pub(crate) clock: RunClock,
    pub(crate) warmed: bool,
    /// Position in the communicator and its size.
    pub(crate) rank: usize,
    pub(crate) ranks: usize,
    pub(crate) cold_start_ns: i64,
    pub(crate) rng: ChaCha8Rng,
    /// The edges of the window in flight (until it reaches its end).
    pub(crate) window: Option<Vec<EdgeRecord>>,
    /// The edges a stopped window achieved before its stop.
    pub(crate) stopped: Vec<EdgeRecord>,
    /// Where achieved edges are handed over while a window runs.
    pub(crate) feed: Option<EdgeFeed>,
}

/// How often a running window hands over the edges achieved meanwhile, ns.
const FEED_EVERY_NS: i64 = 250_000_000;

impl SimGpu {
    pub(crate) fn new(
        dev: Arc<Mutex<SimDevice>>,
        id: GpuIdentity,
        clock: RunClock,
        cold_start_ns: i64,
        seed: u64,
        (rank, ranks): (usize, usize),
    ) -> Self {
        SimGpu {
            dev,
            id,
            clock,
            warmed: false,
            rank,
            ranks,
            cold_start_ns,
            rng: ChaCha8Rng::seed_from_u64(seed),
            window: None,
            stopped: Vec::new(),
            feed: None,
        }
    }

    /// Waits for the window's end, handing over each edge once the run
    /// clock has passed its achieved time (every [`FEED_EVERY_NS`], the way
    /// a real GPU's edges become known as they happen); fails when the GPU
    /// is lost first.
    async fn hold_window(
        &self,
        rung_id: u32,
        edges: &[EdgeRecord],
        end: EpochNs,
    ) -> Result<(), HwError> {
        let Some(feed) = &self.feed else {
            return self.sleep_or_lost(end).await;
        };
        let mut fed = 0;
        loop {
            let now = self.clock.now_ns();
            let due = edges[fed..].partition_point(|e| e.achieved_ns <= now);
            if due > 0 {
                feed.push(rung_id, &edges[fed..fed + due]);
                fed += due;
            }
            if now >= end {
                return Ok(());
            }
            self.sleep_or_lost((now + FEED_EVERY_NS).min(end)).await?;
        }
    }

    /// Sets the demand of a sweep or fabric rung and returns what its
    /// collectives measured (None for other shapes). A GPU whose collectives
    /// hang fails after the rung's timeout, naming its rank, the way the
    /// real engine does after aborting its communicator.
    async fn start_collectives(
        &self,
        s: &GpuSchedule,
        start: EpochNs,
    ) -> Result<Option<Vec<CollectiveTiming>>, HwError> {
        let (timeout_ns, what) = match &s.shape {
            LoadShape::Sweep { spec } => (spec.timeout_ns, "the sweep's collectives".to_string()),
            LoadShape::Fabric { spec } => (
                spec.timeout_ns,
                format!("all_reduce of {} bytes", spec.bytes),
            ),
            _ => return Ok(None),
        };
        let (profile, hang_at) = {
            let d = lock(&self.dev);
            (d.profile.clone(), d.nccl_hang_at())
        };
        if let Some(h) = hang_at.filter(|h| *h < s.end_ns) {
            let h = h.max(start);
            lock(&self.dev).set_demand(h, Demand::Idle);
            self.sleep_or_lost(h + timeout_ns).await?;
            return Err(HwError::DeviceFailed {
                gpu: self.id.uuid.clone(),
                detail: format!(
                    "NCCL: {what} did not complete within {:.0} s on rank {} of {} ({}); its communicator was aborted (simulated hang)",
                    ns_to_s(timeout_ns),
                    self.rank,
                    self.ranks,
                    self.id.key
                ),
            });
        }
        let mut d = lock(&self.dev);
        let out = match &s.shape {
            LoadShape::Sweep { spec } => {
                let (timings, ended) =
                    crate::collectives::run_sweep(&profile, spec, self.ranks, start, s.end_ns);
                d.set_demand(start, Demand::KeepWarm(LoadKind::Fabric));
                d.set_demand(ended, Demand::Idle);
                timings
            }
            LoadShape::Fabric { spec } => {
                match spec.compute_ns {
                    Some(compute_ns) => {
                        let comm_ns = crate::collectives::op_ns(
                            &profile,
                            powerlab_core::Collective::AllReduce,
                            spec.bytes,
                            self.ranks,
                        );
                        d.set_demand(
                            start,
                            Demand::Bsp {
                                start,
                                end: s.end_ns,
                                compute_ns,
                                comm_ns,
                            },
                        );
                    }
                    None => d.set_demand(
                        start,
                        Demand::Run {
                            shape: s.shape.clone(),
                            start: s.start_ns,
                            end: s.end_ns,
                        },
                    ),
                }
                crate::collectives::run_fabric(&profile, spec, self.ranks, start, s.end_ns)
            }
            _ => Vec::new(),
        };
        Ok(Some(out))
    }

    fn lost_error(&self, at: EpochNs) -> HwError {
        HwError::DeviceFailed {
            gpu: self.id.uuid.clone(),
            detail: format!(
                "CUDA_ERROR_ILLEGAL_STATE: device fell off the bus at {at} ns (simulated lost GPU)"
            ),
        }
    }

    /// Sleeps until `t`, or fails when the GPU is lost first.
    async fn sleep_or_lost(&self, t: EpochNs) -> Result<(), HwError> {
        let lost_at = lock(&self.dev).lost_at();
        match lost_at {
            Some(l) if l <= t => {
                self.clock.sleep_until(l).await;
                Err(self.lost_error(l))
            }
            _ => {
                self.clock.sleep_until(t).await;
                Ok(())
            }
        }
    }
}

#[async_trait]
impl Gpu for SimGpu {
    fn identity(&self) -> &GpuIdentity {
        &self.id
    }

    async fn prepare(
        &mut self,
        warmup_ns: i64,
        warm_load: Option<LoadKind>,
    ) -> Result<Readiness, HwError> {
        let now = self.clock.now_ns();
        if !self.warmed {
            // Cold start: the context, module load and JIT, no load on the
            // GPU yet.
            lock(&self.dev).create_context(now);
            self.sleep_or_lost(now + self.cold_start_ns).await?;
            self.warmed = true;
        } else if !lock(&self.dev).job_running() {
            // The context again, where a workload's process that took the
            // GPU over has ended (its module stays loaded: no delay).
            lock(&self.dev).create_context(now);
        }
        let t = self.clock.now_ns();
        match warm_load {
            Some(load) => lock(&self.dev).set_demand(t, Demand::KeepWarm(load)),
            // A workload's process holds the GPU: its start-up is the
            // warm-up.
            None if lock(&self.dev).job_running() => {}
            None => lock(&self.dev).set_demand(t, Demand::Idle),
        }
        // An idle rung's warm-up is idle time: what ran before settles.
        self.sleep_or_lost(t + warmup_ns).await?;
        let (arm_ms, offset_us) = {
            let d = lock(&self.dev);
            (d.profile.arm_latency_ms, d.profile.clock_offset_us)
        };
        let arm_latency_ns = (ms_to_ns_f64(arm_ms) * (1.0 + 0.2 * self.rng.random::<f64>())) as i64;
        Ok(Readiness {
            ready_at_ns: self.clock.now_ns(),
            arm_latency_ns,
            device_clock_offset_ns: Some(us_to_ns_trunc(offset_us)),
            realtime_thread: None,
        })
    }

    async fn run(&mut self, s: &GpuSchedule) -> Result<RungOutcome, HwError> {
        let t_call = self.clock.now_ns();
        self.stopped.clear();
        let (arm_ms, jitter_us, offset_us, late_falls) = {
            let d = lock(&self.dev);
            (
                d.profile.arm_latency_ms,
                d.profile.edge_jitter_us,
                d.profile.clock_offset_us,
                d.late_falls(),
            )
        };
        let armed_at = t_call + ms_to_ns_trunc(arm_ms);
        let actual_start = s.start_ns.max(armed_at);
        let collectives = self.start_collectives(s, actual_start).await?;
        // A lifecycle rung's process draws on its own (from its spawn to
        // its kill or exit), whatever the window.
        let job = lock(&self.dev).job_running();
        if collectives.is_none() && !job {
            lock(&self.dev).set_demand(
                actual_start,
                Demand::Run {
                    shape: s.shape.clone(),
                    start: s.start_ns,
                    end: s.end_ns,
                },
            );
        }
        let edges = s
            .shape
            .edges(s.start_ns, s.end_ns)
            .into_iter()
            .enumerate()
            .map(|(i, (kind, intended))| {
                // Device-placed edges spin on the deadline: never early, a few µs late.
                let mut late = us_to_ns_trunc(self.rng.random::<f64>() * 2.0 * jitter_us);
                if let Some((from, by)) = late_falls
                    && kind == EdgeKind::Fall
                    && intended >= from
                {
                    late += by;
                }
                let achieved = if intended < armed_at {
                    armed_at
                } else {
                    intended + late
                };
                EdgeRecord {
                    index: i as u32,
                    kind,
                    intended_ns: intended,
                    achieved_ns: achieved,
                }
            })
            .collect::<Vec<_>>();
        // Kept until the window ends: a stop meanwhile keeps those achieved by then.
        self.window = Some(edges.clone());
        self.hold_window(s.rung_id, &edges, s.end_ns).await?;
        self.window = None;
        if !job {
            lock(&self.dev).set_demand(s.end_ns, Demand::Idle);
        }
        // The simulated device clock keeps a fixed offset (the probes find it to ~10 µs).
        let offset = us_to_ns_trunc(offset_us);
        let clock = DeviceClock {
            begin_ns: t_call,
            offset_begin_ns: offset,
            end_ns: s.end_ns,
            offset_end_ns: offset,
            probe_rtt_ns: 20_000,
        };
        Ok(RungOutcome {
            edges,
            work_items: 0,
            collectives: collectives.unwrap_or_default(),
            clock: Some(clock),
        })
    }

    async fn stop(&mut self) -> Result<(), HwError> {
        let now = self.clock.now_ns();
        if let Some(edges) = self.window.take() {
            self.stopped = edges.into_iter().filter(|e| e.achieved_ns <= now).collect();
        }
        lock(&self.dev).set_demand(now, Demand::Idle);
        Ok(())
    }

    async fn stopped_edges(&mut self) -> Vec<EdgeRecord> {
        std::mem::take(&mut self.stopped)
    }

    fn set_edge_feed(&mut self, feed: EdgeFeed) {
        self.feed = Some(feed);
    }

    async fn job(&mut self, event: JobEvent) -> Result<Option<EpochNs>, HwError> {
        let mut d = lock(&self.dev);
        if let Some(l) = d.lost_at().filter(|l| *l <= self.clock.now_ns()) {
            drop(d);
            return Err(self.lost_error(l));
        }
        Ok(match event {
            JobEvent::Spawned { at_ns, job } => {
                d.job_spawned(at_ns, job);
                None
            }
            JobEvent::Killed { at_ns } => {
                d.job_killed(at_ns);
                None
            }
            JobEvent::Finish { at_ns } => d.job_finish(at_ns),
            JobEvent::Exited { at_ns } => {
                d.job_exited(at_ns);
                None
            }
        })
    }
}

/// The simulated instruments of one GPU.
pub struct SimPowerSource {
    pub(crate) dev: Arc<Mutex<SimDevice>>,
    pub(crate) id: GpuIdentity,
}

impl PowerSource for SimPowerSource {
    fn identity(&self) -> &GpuIdentity {
        &self.id
    }

    fn drain_buffered(&mut self, now_ns: EpochNs) -> Result<Vec<Sample>, HwError> {
        lock(&self.dev).drain_buffered(now_ns)
    }

    fn read_instant(&mut self, now_ns: EpochNs) -> Result<Sample, HwError> {
        lock(&self.dev).read_instant(now_ns)
    }

    fn read_fields(&mut self, now_ns: EpochNs) -> Result<Vec<Sample>, HwError> {
        lock(&self.dev).read_fields(now_ns)
    }

    fn read_status(&mut self, now_ns: EpochNs) -> Result<Vec<Sample>, HwError> {
        lock(&self.dev).read_status(now_ns)
    }

    fn drain_events(&mut self, now_ns: EpochNs) -> Vec<DeviceEvent> {
        let mut d = lock(&self.dev);
        d.take_xid(now_ns)
            .map(|(at, code)| DeviceEvent {
                ts_ns: at,
                gpu: self.id.key.clone(),
                kind: "xid".into(),
                detail: format!("Xid {code} on {} (simulated)", self.id.uuid),
                fatal: true,
            })
            .into_iter()
            .collect()
    }
}
