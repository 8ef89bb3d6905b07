//! The per-GPU engine: one OS thread that owns the CUDA context and turns
//! schedules into device work.
//!
//! Edges: a rising edge (and every rung start) is a `spin_until` kernel that
//! holds the stream until `%globaltimer` reaches the deadline and records
//! when it let go; the load queued behind it starts there. A falling edge is
//! a `burn_until` kernel queued after the last GEMM chunk that fits before
//! the deadline: it keeps the GPU busy until `%globaltimer` reaches the
//! deadline and records when it let go, so the load stops at the deadline
//! and not at the end of a chunk. The next rise's `spin_until` is queued as
//! soon as the fall is, so a host that is late during the off-phase cannot
//! move the rise. The host keeps up to 10 ms of chunks queued through a long
//! on-phase and queues the last 20 ms before each fall (its chunks, planned
//! as if they and the unfinished chunks ahead of them ran 1.25 times slower
//! than measured, the `burn_until` and the next rise) in one go, about 20 ms
//! ahead and never more than 40: a host descheduled for less than that moves
//! neither the fall nor the rise, and a short on-phase is queued whole. It
//! never times an edge by sleeping.
//!
//! Clocks: deadlines are converted to `%globaltimer` with the device clock's
//! offset predicted at the deadline: the latest probe (taken as the rung
//! begins) carried forward at the drift rate fitted to the recent probes
//! (the two clocks drift by 2–3 µs per second on an H200). Achieved edges are
//! converted back with the offset interpolated between probes taken just
//! before and just after the rung, so an error of the prediction shows up
//! as an edge error; each rung's probes are reported with the outcome.
//!
//! Edges as they happen: while a window runs, the host reads the edge
//! slots on a stream of their own (never waiting behind load) about every
//! 500 ms, at moments it has time to spare, and hands the edges achieved
//! so far to the run (converted with the predicted offset: provisional,
//! replaced by the outcome's). A window the run's stop cuts short keeps the
//! edges achieved before the stop, converted with a probe taken then.
//!
//! Layout: `setup` owns the device (context, streams, kernels, cuBLAS,
//! buffers), `load` launches load units, `pacing` keeps the queue of units
//! and their duration estimates, `clock` probes the device clock, `edges`
//! places the edge kernels, `smooth` the level load of power smoothing
//! (and its calibration staircase), `rung` runs the two commands and `nccl` the
//! collectives. This file holds the public API and the command
//! loop of the engine thread.

mod clock;
mod edges;
mod load;
mod nccl;
mod pacing;
mod rung;
mod setup;
mod smooth;

pub use nccl::NcclRank;

use clock::ClockProbe;
use edges::Stamps;
use pacing::{MAX_QUEUED_NS, Pacing};
use powerlab_core::RunClock;
use powerlab_core::hw::{EdgeFeed, EdgeRecord, GpuSchedule, HwError, Readiness, RungOutcome};
use powerlab_core::shape::LoadKind;
use serde::{Deserialize, Serialize};
use setup::{Device, request_realtime};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use tokio::sync::oneshot;

/// Which load the virus runs while "on".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VirusMode {
    /// cuBLAS GEMM stream (operand type: [`GemmDtype`]).
    Gemm,
    /// HBM streaming kernel.
    Hbm,
    /// GEMM and HBM streaming on two streams at once (the default: on H200
    /// it held 99.0–99.1% of the 700 W limit over 60 s with bf16 operands,
    /// against 98.8–98.9% for GEMM alone).
    Mixed,
    /// Register-only bf16 mma.sync kernel (reference; ~75% on H200).
    Mma,
}

impl VirusMode {
    /// Parses a CLI name.
    pub fn parse(s: &str) -> Option<VirusMode> {
        match s {
            "gemm" => Some(VirusMode::Gemm),
            "hbm" => Some(VirusMode::Hbm),
            "mixed" => Some(VirusMode::Mixed),
            "mma" => Some(VirusMode::Mma),
            _ => None,
        }
    }
}

/// Element type of the GEMM operands (FP32 accumulation either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GemmDtype {
    /// IEEE 754 half precision.
    Fp16,
    /// The bfloat16 format (8-bit exponent, 7-bit mantissa).
    Bf16,
}

impl GemmDtype {
    /// Parses a CLI name.
    pub fn parse(s: &str) -> Option<GemmDtype> {
        match s {
            "fp16" => Some(GemmDtype::Fp16),
            "bf16" => Some(GemmDtype::Bf16),
            _ => None,
        }
    }
}

/// A command to an engine thread.
pub enum Cmd {
    /// Cold start (first time) and warm-up.
    Prepare {
        /// How long the warm-up lasts, ns.
        warmup_ns: i64,
        /// The load to run during the warm-up and keep running afterwards.
        load: Option<LoadKind>,
        /// Where the readiness (or the start-up error) is sent.
        reply: oneshot::Sender<Result<Readiness, HwError>>,
    },
    /// Execute a schedule.
    Run {
        /// The schedule of this GPU's rung.
        schedule: GpuSchedule,
        /// Where its edges are handed over as they are achieved.
        feed: Option<EdgeFeed>,
        /// Where the rung's outcome is sent.
        reply: oneshot::Sender<Result<RungOutcome, HwError>>,
    },
    /// The edges the last window achieved before a stop cut it short.
    StoppedEdges {
        /// Where they are sent (taken: a second ask gets none).
        reply: oneshot::Sender<Vec<EdgeRecord>>,
    },
    /// Stop all load.
    Stop {
        /// Signalled once the load has stopped.
        reply: oneshot::Sender<()>,
    },
}

/// How an engine drives its GPU: which device, which load, and the sizes
/// of the work units.
#[derive(Debug, Clone, Copy)]
pub struct EngineConfig {
    /// CUDA ordinal (in the visible set).
    pub ordinal: usize,
    /// The load the virus runs while on.
    pub mode: VirusMode,
    /// Square GEMM size for constant load.
    pub big_n: usize,
    /// Square GEMM size for duty chunks (small: a fall lands within half a chunk).
    pub chunk_n: usize,
    /// The element type of the GEMM operands.
    pub dtype: GemmDtype,
    /// This GPU's rank in the node's NCCL communicator (None without NCCL).
    pub nccl: Option<NcclRank>,
}

/// One GPU's engine, owned by its thread: a composition of the layers.
struct Engine {
    /// The run's clock, which every deadline is on.
    clock: RunClock,
    /// What the engine was started with.
    cfg: EngineConfig,
    /// The GPU's name in errors.
    gpu: String,
    /// Set from outside to make the engine stop whatever it is doing.
    stop: Arc<AtomicBool>,
    /// The CUDA context's streams, kernels and buffers.
    dev: Device,
    /// The NCCL communicator, created on the first collective rung.
    comm: Option<cudarc::nccl::Comm>,
    /// The device slots the edge kernels write.
    stamps: Stamps,
    /// The device clock's offset from the run clock.
    probe: ClockProbe,
    /// The queue of load units and their duration estimates.
    pace: Pacing,
    /// The load kept running between commands, if any.
    warm: Option<LoadKind>,
    /// The running window's edges handed over as they are achieved.
    feeding: Option<rung::Feeding>,
    /// The edges a window stopped before its end achieved before the stop.
    stopped: Vec<EdgeRecord>,
    /// This thread runs in the real-time class.
    realtime: bool,
}

impl Engine {
    fn new(
        clock: RunClock,
        cfg: EngineConfig,
        gpu: String,
        stop: Arc<AtomicBool>,
    ) -> Result<Engine, HwError> {
        let dev = Device::new(&cfg, &gpu)?;
        let stamps = Stamps::new(&dev.stream, &gpu)?;
        let probe = ClockProbe::new(dev.stream.context(), &gpu)?;
        let mut eng = Engine {
            clock,
            cfg,
            gpu,
            stop,
            dev,
            comm: None,
            stamps,
            probe,
            pace: Pacing::new(),
            warm: None,
            feeding: None,
            stopped: Vec::new(),
            realtime: request_realtime(),
        };
        eng.pace.big_ns = eng.time_unit(false)?;
        eng.pace.chunk_ns = eng.time_unit(true)?;
        eng.probe.offset_ns = eng.measure_offset()?.0;
        Ok(eng)
    }

    /// Forgets the queue and waits until the device has run dry.
    fn sync(&mut self) -> Result<(), HwError> {
        self.pace.clear();
        self.dev.synchronize(&self.gpu)
    }
}

/// Handle to an engine thread.
pub struct EngineHandle {
    /// Sends commands to the engine thread.
    pub tx: mpsc::Sender<Cmd>,
    /// Set to make the engine stop whatever it is doing.
    pub stop: Arc<AtomicBool>,
}

/// Starts the engine thread of one GPU. Initialisation (context, kernels,
/// buffers, unit timing, clock offset) happens on the thread; its result is
/// the first reply to the first `Prepare`.
pub fn spawn(clock: RunClock, cfg: EngineConfig, gpu: String) -> EngineHandle {
    let (tx, rx) = mpsc::channel::<Cmd>();
    let stop = Arc::new(AtomicBool::new(false));
    let stop2 = stop.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("engine-{gpu}"))
        .spawn(move || {
            let mut engine: Option<Engine> = None;
            let mut init_error: Option<HwError> = None;
            loop {
                // While warm, keep the GPU loaded between commands.
                let cmd = match engine.as_mut().and_then(|e| e.warm.map(|l| (e, l))) {
                    Some((e, load)) => loop {
                        match rx.try_recv() {
                            Ok(c) => break Some(c),
                            Err(mpsc::TryRecvError::Empty) => {
                                if e.stop.load(Ordering::Relaxed)
                                    || e.push_unit(false, load, MAX_QUEUED_NS).is_err()
                                {
                                    e.warm = None;
                                    let _ = e.sync();
                                    break rx.recv().ok();
                                }
                            }
                            Err(mpsc::TryRecvError::Disconnected) => break None,
                        }
                    },
                    None => rx.recv().ok(),
                };
                let Some(cmd) = cmd else { break };
                match cmd {
                    Cmd::Prepare {
                        warmup_ns,
                        load,
                        reply,
                    } => {
                        stop2.store(false, Ordering::Relaxed);
                        if engine.is_none() && init_error.is_none() {
                            match Engine::new(clock, cfg, gpu.clone(), stop2.clone()) {
                                Ok(e) => engine = Some(e),
                                Err(e) => init_error = Some(e),
                            }
                        }
                        let r = match (&mut engine, &init_error) {
                            (Some(e), _) => e.prepare(warmup_ns, load),
                            (None, Some(err)) => Err(err.clone()),
                            (None, None) => Err(HwError::Other("engine did not start".into())),
                        };
                        let _ = reply.send(r);
                    }
                    Cmd::Run {
                        schedule,
                        feed,
                        reply,
                    } => {
                        let r = match &mut engine {
                            Some(e) => {
                                let r = e.run(&schedule, feed);
                                if r.is_err() {
                                    e.warm = None;
                                    e.abort_comm();
                                    let _ = e.sync();
                                }
                                r
                            }
                            None => Err(HwError::Other("run before prepare".into())),
                        };
                        let _ = reply.send(r);
                    }
                    Cmd::StoppedEdges { reply } => {
                        let edges = engine
                            .as_mut()
                            .map(|e| std::mem::take(&mut e.stopped))
                            .unwrap_or_default();
                        let _ = reply.send(edges);
                    }
                    Cmd::Stop { reply } => {
                        if let Some(e) = &mut engine {
                            e.warm = None;
                            let _ = e.sync();
                        }
                        stop2.store(false, Ordering::Relaxed);
                        let _ = reply.send(());
                    }
                }
            }
            if let Some(e) = &mut engine {
                let _ = e.sync();
            }
        });
    if let Err(e) = spawned {
        tracing::error!("cannot start the engine thread: {e}");
    }
    EngineHandle { tx, stop }
}
