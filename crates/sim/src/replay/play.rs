//! The replayed node: one [`PowerSource`] per recorded GPU that hands
//! over each of its rows once the run clock has reached it, and one
//! [`Gpu`] that runs nothing.

use super::{RecordedGpu, Recording};
use async_trait::async_trait;
use powerlab_core::hw::{
    Backend, BackendInfo, Capability, DeviceEvent, EdgeRecord, Gpu, GpuIdentity, GpuSchedule,
    HwError, NodeHandles, PowerSource, Readiness, RungOutcome,
};
use powerlab_core::shape::LoadKind;
use powerlab_core::units::{NS_PER_MS, NS_PER_S, ns_to_s};
use powerlab_core::{EpochNs, RunClock, Sample};
use std::sync::Arc;

/// Rows stamped more than this before the run clock's start when the
/// node is opened are not replayed (the run's files may not hold rows
/// far outside its span); `observe` hands over the driver's last ~2.4 s
/// at its start.
pub const PRE_RUN_NS: i64 = 10 * NS_PER_S;

/// How far past the run clock an instant reading may be handed over when
/// none is due yet: `observe` polls every 20 ms plus its own time, the
/// replayed sampler every 20 ms exactly, so now and then a poll comes a
/// fraction of a millisecond before the reading it stands for.
pub const LOOKAHEAD_NS: i64 = 25 * NS_PER_MS;

impl Recording {
    /// The node the recording replays, on the run clock `clock` (virtual,
    /// started at or before [`Recording::span`]'s start): every GPU is
    /// ready at `ready_at_ns` (or at once, if later) and runs nothing;
    /// every power source hands over its GPU's rows as the clock reaches
    /// them (see [`PowerSource`] below). NCCL is absent.
    pub fn open(&self, clock: RunClock, ready_at_ns: EpochNs) -> NodeHandles {
        let from_ns = clock.now_ns() - PRE_RUN_NS;
        let ids = self.identities();
        let mut gpus: Vec<Box<dyn Gpu>> = Vec::new();
        let mut sources: Vec<Box<dyn PowerSource>> = Vec::new();
        for (g, id) in self.gpus.iter().zip(&ids) {
            gpus.push(Box::new(ReplayGpu {
                id: id.clone(),
                clock,
                ready_at_ns,
                covers: (
                    g.buffered.first().map_or(0, |s| s.ts_ns),
                    g.buffered.last().map_or(0, |s| s.ts_ns),
                ),
                file: self.path.display().to_string(),
            }));
            sources.push(Box::new(ReplaySource::new(id.clone(), g.clone(), from_ns)));
        }
        let span = self.span();
        NodeHandles {
            info: BackendInfo {
                backend: "replay".into(),
                node_id: self.node.clone(),
                host: self.node.clone(),
                gpus: ids,
                driver: format!(
                    "replay of {} ({}, {:.1} s read together, recorded by powerlab observe --csv)",
                    self.path.display(),
                    powerlab_core::words::gpus(self.gpus.len()),
                    ns_to_s(span.len_ns())
                ),
                nccl: Capability::Absent(HwError::Missing {
                    what: "NCCL".into(),
                    detail: "a recording replays readings; it runs no load".into(),
                    fix: "run NCCL phases on the GPUs themselves (powerlab run)".into(),
                }),
            },
            gpus,
            sources,
            meters: Vec::new(),
        }
    }
}

/// A backend over a recording (see [`Recording::open`]).
pub struct ReplayBackend {
    recording: Recording,
    clock: RunClock,
    ready_at_ns: EpochNs,
}

impl ReplayBackend {
    /// The recording, replayed on `clock`, its GPUs ready at `ready_at_ns`.
    pub fn new(recording: Recording, clock: RunClock, ready_at_ns: EpochNs) -> Self {
        ReplayBackend {
            recording,
            clock,
            ready_at_ns,
        }
    }
}

impl Backend for ReplayBackend {
    fn open(&mut self) -> Result<NodeHandles, HwError> {
        Ok(self.recording.open(self.clock, self.ready_at_ns))
    }
}

/// A recorded GPU: it runs nothing, is ready at once (no later than the
/// moment it was given) and waits out each window. A window outside its
/// recorded samples is refused.
struct ReplayGpu {
    id: GpuIdentity,
    clock: RunClock,
    ready_at_ns: EpochNs,
    /// Its first and last buffered sample.
    covers: (EpochNs, EpochNs),
    /// The recording, for errors.
    file: String,
}

#[async_trait]
impl Gpu for ReplayGpu {
    fn identity(&self) -> &GpuIdentity {
        &self.id
    }

    async fn prepare(
        &mut self,
        warmup_ns: i64,
        _warm_load: Option<LoadKind>,
    ) -> Result<Readiness, HwError> {
        let until = (self.clock.now_ns() + warmup_ns).max(self.ready_at_ns);
        self.clock.sleep_until(until).await;
        Ok(Readiness {
            ready_at_ns: self.clock.now_ns(),
            arm_latency_ns: 0,
            device_clock_offset_ns: None,
            realtime_thread: None,
        })
    }

    async fn run(&mut self, s: &GpuSchedule) -> Result<RungOutcome, HwError> {
        let (first, last) = self.covers;
        if s.start_ns < first || s.end_ns > last {
            return Err(HwError::Other(format!(
                "rung {}'s window ({:.3} s to {:.3} s into the recording) reaches beyond {}'s samples in {} (0 to {:.3} s); the window must lie within the recording",
                s.rung_id,
                ns_to_s(s.start_ns - first),
                ns_to_s(s.end_ns - first),
                self.id.key,
                self.file,
                ns_to_s(last - first)
            )));
        }
        self.clock.sleep_until(s.end_ns).await;
        // Nothing ran: every edge (a workload's start) is where it was meant to be.
        let edges = s
            .shape
            .edges(s.start_ns, s.end_ns)
            .into_iter()
            .enumerate()
            .map(|(i, (kind, at))| EdgeRecord {
                index: i as u32,
                kind,
                intended_ns: at,
                achieved_ns: at,
            })
            .collect();
        Ok(RungOutcome {
            edges,
            ..RungOutcome::default()
        })
    }

    async fn stop(&mut self) -> Result<(), HwError> {
        Ok(())
    }
}

/// Where each kind of a GPU's rows has been handed over up to.
#[derive(Debug, Default, Clone, Copy)]
struct Cursors {
    buffered: usize,
    instant: usize,
    fields: usize,
    status: usize,
}

/// A recorded GPU's readings handed over as the run clock reaches them:
/// each row once, with its own timestamp and value, as the raw file had
/// it. The instant field (one reading per poll) is the latest one due;
/// others due with it follow with the next buffered drain.
struct ReplaySource {
    id: GpuIdentity,
    gpu: Arc<RecordedGpu>,
    next: Cursors,
    /// Instant readings passed over by a poll (more than one was due).
    spill: Vec<Sample>,
}

/// The rows of `rows` from `*next` stamped at or before `now_ns`;
/// `*next` moves past them.
fn due<'a>(rows: &'a [Sample], next: &mut usize, now_ns: EpochNs) -> &'a [Sample] {
    let rest = &rows[(*next).min(rows.len())..];
    let n = rest.partition_point(|s| s.ts_ns <= now_ns);
    *next += n;
    &rest[..n]
}

impl ReplaySource {
    /// A source over `gpu`'s rows from `from_ns` on.
    fn new(id: GpuIdentity, gpu: Arc<RecordedGpu>, from_ns: EpochNs) -> Self {
        let skip = |rows: &[Sample]| rows.partition_point(|s| s.ts_ns < from_ns);
        let next = Cursors {
            buffered: skip(&gpu.buffered),
            instant: skip(&gpu.instant),
            fields: skip(&gpu.fields),
            status: skip(&gpu.status),
        };
        ReplaySource {
            id,
            gpu,
            next,
            spill: Vec::new(),
        }
    }
}

impl PowerSource for ReplaySource {
    fn identity(&self) -> &GpuIdentity {
        &self.id
    }

    fn drain_buffered(&mut self, now_ns: EpochNs) -> Result<Vec<Sample>, HwError> {
        let mut out = std::mem::take(&mut self.spill);
        out.extend_from_slice(due(&self.gpu.buffered, &mut self.next.buffered, now_ns));
        Ok(out)
    }

    fn read_instant(&mut self, now_ns: EpochNs) -> Result<Sample, HwError> {
        let rows = &self.gpu.instant;
        if let Some((latest, passed)) = due(rows, &mut self.next.instant, now_ns).split_last() {
            self.spill.extend_from_slice(passed);
            return Ok(*latest);
        }
        match rows.get(self.next.instant) {
            Some(s) if s.ts_ns <= now_ns + LOOKAHEAD_NS => {
                self.next.instant += 1;
                Ok(*s)
            }
            next => Err(HwError::Transient {
                gpu: self.id.key.clone(),
                detail: match next {
                    Some(s) => format!(
                        "the recording has no instant_w reading for {:.1} ms (the next is {:.1} ms ahead)",
                        (now_ns - self.last_instant_ns().unwrap_or(now_ns)) as f64
                            / NS_PER_MS as f64,
                        (s.ts_ns - now_ns) as f64 / NS_PER_MS as f64
                    ),
                    None => "the recording's instant_w readings have ended".into(),
                },
            }),
        }
    }

    fn read_fields(&mut self, now_ns: EpochNs) -> Result<Vec<Sample>, HwError> {
        Ok(due(&self.gpu.fields, &mut self.next.fields, now_ns).to_vec())
    }

    fn read_status(&mut self, now_ns: EpochNs) -> Result<Vec<Sample>, HwError> {
        Ok(due(&self.gpu.status, &mut self.next.status, now_ns).to_vec())
    }

    fn drain_events(&mut self, _now_ns: EpochNs) -> Vec<DeviceEvent> {
        Vec::new()
    }
}

impl ReplaySource {
    /// The last instant reading handed over.
    fn last_instant_ns(&self) -> Option<EpochNs> {
        self.next
            .instant
            .checked_sub(1)
            .and_then(|i| self.gpu.instant.get(i))
            .map(|s| s.ts_ns)
    }
}
