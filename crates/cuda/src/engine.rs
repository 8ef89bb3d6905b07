//! The per-GPU engine: one OS thread that owns the CUDA context and turns
//! schedules into device work.
//!
//! Edges: a rising edge (and every rung start) is a `spin_until` kernel that
//! holds the stream until `%globaltimer` reaches the deadline and records
//! when it let go; the load queued behind it starts there. A falling edge is
//! a `burn_until` kernel queued after the last GEMM chunk that fits before
//! the deadline: it keeps the GPU busy until `%globaltimer` reaches the
//! deadline and records when it let go, so the load stops at the deadline
//! and not at the end of a chunk. The next rise's `spin_until` and the first
//! chunks behind it are queued as soon as the fall is, so a host that is
//! late during the off-phase cannot move the rise. The host keeps a few ms
//! of chunks queued; it never times an edge by sleeping.
//!
//! Clocks: deadlines are converted to `%globaltimer` with the device clock's
//! offset predicted at the deadline: the latest probe (taken as the rung
//! begins) carried forward at the drift rate fitted to the recent probes
//! (the two clocks drift by 2–3 µs per second on an H200). Achieved edges are
//! converted back with the offset interpolated between probes taken just
//! before and just after the rung, so an error of the prediction shows up
//! as an edge error; each rung's probes are reported with the outcome.

mod nccl;

pub use nccl::NcclRank;

use crate::kernels;
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, sys::cublasOperation_t};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use half::{bf16, f16};
use powerlab_core::RunClock;
use powerlab_core::hw::{DeviceClock, EdgeRecord, GpuSchedule, HwError, Readiness, RungOutcome};
use powerlab_core::shape::{EdgeKind, LoadKind, LoadShape};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;
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
    /// IEEE half precision.
    Fp16,
    /// bfloat16.
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
        /// Warm-up length.
        warmup_ns: i64,
        /// Load to keep running afterwards.
        load: Option<LoadKind>,
        /// Answer.
        reply: oneshot::Sender<Result<Readiness, HwError>>,
    },
    /// Execute a schedule.
    Run {
        /// The schedule.
        schedule: GpuSchedule,
        /// Answer.
        reply: oneshot::Sender<Result<RungOutcome, HwError>>,
    },
    /// Stop all load.
    Stop {
        /// Answer.
        reply: oneshot::Sender<()>,
    },
}

/// Sizes of the work units.
#[derive(Debug, Clone, Copy)]
pub struct EngineConfig {
    /// CUDA ordinal (in the visible set).
    pub ordinal: usize,
    /// Load mode.
    pub mode: VirusMode,
    /// Square GEMM size for constant load.
    pub big_n: usize,
    /// Square GEMM size for duty chunks (small: a fall lands within half a chunk).
    pub chunk_n: usize,
    /// GEMM operand type.
    pub dtype: GemmDtype,
    /// This GPU's rank in the node's NCCL communicator (None without NCCL).
    pub nccl: Option<NcclRank>,
}

/// How much work the host keeps queued: it needs to run only this often.
const MAX_QUEUED_NS: i64 = 4_000_000;
/// How much it keeps queued in the last few ms before a fall: a GEMM
/// chunk's duration follows the clocks the power controller allows, so the
/// further ahead the last chunk is planned, the further it can overrun.
const NEAR_FALL_QUEUED_NS: i64 = 500_000;
/// GEMM chunks stop at least this long before a fall; `burn_until` holds
/// the load from there to the deadline.
const MIN_FALL_TAIL_NS: i64 = 400_000;
/// Offset probes older than this are left out of the drift fit (the
/// drift rate itself changes: 2.2 to 2.9 µs/s over minutes on an H200).
const DRIFT_SPAN_NS: i64 = 30_000_000_000;

/// GEMM operands, in the configured type.
enum Operands {
    Fp16 {
        a: CudaSlice<f16>,
        b: CudaSlice<f16>,
        c: CudaSlice<f16>,
    },
    Bf16 {
        a: CudaSlice<bf16>,
        b: CudaSlice<bf16>,
        c: CudaSlice<bf16>,
    },
}

struct Work {
    ops: Operands,
    n: usize,
    ns: i64,
}

struct Engine {
    clock: RunClock,
    cfg: EngineConfig,
    gpu: String,
    stop: Arc<AtomicBool>,
    stream: Arc<CudaStream>,
    side: Arc<CudaStream>,
    blas: CudaBlas,
    spin: CudaFunction,
    stamp: CudaFunction,
    burn: CudaFunction,
    hbm: CudaFunction,
    mma: CudaFunction,
    fill: CudaFunction,
    comm: Option<cudarc::nccl::Comm>,
    big: Work,
    chunk: Work,
    hbm_src: CudaSlice<f32>,
    hbm_dst: CudaSlice<f32>,
    mma_out: CudaSlice<f32>,
    sms: u32,
    slots: CudaSlice<u64>,
    probe_stream: Arc<CudaStream>,
    probe_slot: CudaSlice<u64>,
    offset_ns: i64,
    /// Recent offset probes: (run clock, device − run, round trip), ns.
    probes: VecDeque<(i64, i64, i64)>,
    queued: VecDeque<Queued>,
    last_done: Option<(bool, CudaEvent)>,
    last_launch: Option<bool>,
    predicted_end: i64,
    warm: Option<LoadKind>,
    /// This thread runs in the real-time class.
    realtime: bool,
}

/// A unit of load in flight.
struct Queued {
    small: bool,
    est_ns: i64,
    /// The unit ran right after another unit of the same size (no spin or
    /// stamp between), so the time between their completions is its duration.
    chained: bool,
    ev: CudaEvent,
}

fn dev_err(gpu: &str, what: &str, e: impl std::fmt::Debug) -> HwError {
    HwError::DeviceFailed {
        gpu: gpu.to_string(),
        detail: format!("{what}: {e:?}"),
    }
}

fn random_f32(n: usize, seed: u64) -> impl Iterator<Item = f32> {
    // Random data, never zeros: zeros draw less power and hide bugs.
    let mut x = seed | 1;
    (0..n).map(move |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ((x >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    })
}

/// Random n×n inputs and a zeroed output on the device.
#[allow(clippy::type_complexity)]
fn operands<T>(
    stream: &Arc<CudaStream>,
    n: usize,
    seed: u64,
    conv: fn(f32) -> T,
) -> Result<(CudaSlice<T>, CudaSlice<T>, CudaSlice<T>), cudarc::driver::DriverError>
where
    T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits,
{
    let a = stream.clone_htod(&random_f32(n * n, seed).map(conv).collect::<Vec<T>>())?;
    let b = stream.clone_htod(&random_f32(n * n, seed + 1).map(conv).collect::<Vec<T>>())?;
    let c = stream.alloc_zeros::<T>(n * n)?;
    Ok((a, b, c))
}

impl Engine {
    fn new(
        clock: RunClock,
        cfg: EngineConfig,
        gpu: String,
        stop: Arc<AtomicBool>,
    ) -> Result<Engine, HwError> {
        let e = |w: &str| {
            let gpu = gpu.clone();
            let w = w.to_string();
            move |err: cudarc::driver::DriverError| dev_err(&gpu, &w, err)
        };
        let ctx = CudaContext::new(cfg.ordinal).map_err(e("creating the CUDA context"))?;
        // Streams are ordered explicitly here (one load stream, the side
        // stream only for mixed mode with its own buffers): no implicit
        // cross-stream events on every launch.
        // SAFETY: no buffer below is shared between streams without ordering.
        unsafe { ctx.disable_event_tracking() };
        let (major, minor) = ctx.compute_capability().map_err(e("compute capability"))?;
        let ptx = kernels::compile(kernels::arch_for(major, minor)?)?;
        let module = ctx.load_module(ptx).map_err(e("loading kernels"))?;
        let f = |name: &str| {
            module
                .load_function(name)
                .map_err(|er| dev_err(&gpu, &format!("kernel {name}"), er))
        };
        let (spin, stamp, burn, hbm, mma, fill) = (
            f("spin_until")?,
            f("stamp")?,
            f("burn_until")?,
            f("hbm_stream")?,
            f("mma_regs")?,
            f("fill_random")?,
        );
        let stream = ctx.new_stream().map_err(e("stream"))?;
        let side = ctx.new_stream().map_err(e("side stream"))?;
        let blas =
            CudaBlas::new(stream.clone()).map_err(|er| dev_err(&gpu, "cuBLAS handle", er))?;
        let sms = ctx
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
            .map_err(e("SM count"))? as u32;
        let work = |n: usize, seed: u64| -> Result<Work, HwError> {
            let ops = match cfg.dtype {
                GemmDtype::Fp16 => {
                    let (a, b, c) = operands(&stream, n, seed, f16::from_f32)
                        .map_err(e("allocating GEMM operands"))?;
                    Operands::Fp16 { a, b, c }
                }
                GemmDtype::Bf16 => {
                    let (a, b, c) = operands(&stream, n, seed, bf16::from_f32)
                        .map_err(e("allocating GEMM operands"))?;
                    Operands::Bf16 { a, b, c }
                }
            };
            Ok(Work { ops, n, ns: 0 })
        };
        let big = work(cfg.big_n, 11)?;
        let chunk = work(cfg.chunk_n, 23)?;
        let hbm_len = 256 * 1024 * 1024; // 1 GiB of f32 each way
        let hbm_src = stream
            .alloc_zeros::<f32>(hbm_len)
            .map_err(e("allocating HBM buffers"))?;
        let hbm_dst = stream
            .alloc_zeros::<f32>(hbm_len)
            .map_err(e("allocating HBM buffers"))?;
        stream.synchronize().map_err(e("initialising buffers"))?;
        let mma_out = stream
            .alloc_zeros::<f32>((sms * 4 * 256) as usize)
            .map_err(e("allocating"))?;
        let slots = stream
            .alloc_zeros::<u64>(1024)
            .map_err(e("allocating edge slots"))?;
        // Clock probes run on their own stream so they never wait behind load.
        let probe_stream = ctx.new_stream().map_err(e("probe stream"))?;
        let probe_slot = probe_stream
            .alloc_zeros::<u64>(1)
            .map_err(e("allocating the probe slot"))?;
        let mut eng = Engine {
            clock,
            cfg,
            gpu,
            stop,
            stream,
            side,
            blas,
            spin,
            stamp,
            burn,
            hbm,
            mma,
            fill,
            comm: None,
            big,
            chunk,
            hbm_src,
            hbm_dst,
            mma_out,
            sms,
            slots,
            probe_stream,
            probe_slot,
            offset_ns: 0,
            probes: VecDeque::new(),
            queued: VecDeque::new(),
            last_done: None,
            last_launch: None,
            predicted_end: 0,
            warm: None,
            realtime: request_realtime(),
        };
        eng.big.ns = eng.time_unit(false)?;
        eng.chunk.ns = eng.time_unit(true)?;
        eng.offset_ns = eng.measure_offset()?.0;
        Ok(eng)
    }

    fn sync(&mut self) -> Result<(), HwError> {
        self.queued.clear();
        self.last_done = None;
        self.last_launch = None;
        self.stream
            .synchronize()
            .map_err(|e| dev_err(&self.gpu, "stream", e))?;
        self.side
            .synchronize()
            .map_err(|e| dev_err(&self.gpu, "side stream", e))
    }

    /// Enqueues one unit of load; returns its expected duration.
    fn launch_unit(&mut self, small: bool, load: LoadKind) -> Result<i64, HwError> {
        let mode = match (load, self.cfg.mode) {
            (LoadKind::Fabric, _) => VirusMode::Hbm,
            // Duty chunks stay on one stream, so a stamp after the last chunk
            // really is the moment the GPU went idle.
            (LoadKind::Virus, VirusMode::Mixed) if small => VirusMode::Gemm,
            (LoadKind::Virus, m) => m,
        };
        let w = if small {
            &mut self.chunk
        } else {
            &mut self.big
        };
        let gemm = |blas: &CudaBlas, w: &mut Work| -> Result<(), HwError> {
            let n = w.n as i32;
            let op = cublasOperation_t::CUBLAS_OP_N;
            // SAFETY: a, b, c each hold n*n elements, matching m, n, k and the leading dimensions.
            let r = match &mut w.ops {
                Operands::Fp16 { a, b, c } => {
                    let cfg = GemmConfig {
                        transa: op,
                        transb: op,
                        m: n,
                        n,
                        k: n,
                        alpha: f16::ONE,
                        lda: n,
                        ldb: n,
                        beta: f16::ZERO,
                        ldc: n,
                    };
                    // SAFETY: a, b and c are n × n device buffers allocated for this
                    // config on the engine's stream, and cuBLAS is bound to that stream.
                    unsafe { blas.gemm(cfg, &*a, &*b, c) }
                }
                Operands::Bf16 { a, b, c } => {
                    let cfg = GemmConfig {
                        transa: op,
                        transb: op,
                        m: n,
                        n,
                        k: n,
                        alpha: bf16::ONE,
                        lda: n,
                        ldb: n,
                        beta: bf16::ZERO,
                        ldc: n,
                    };
                    // SAFETY: a, b and c are n × n device buffers allocated for this
                    // config on the engine's stream, and cuBLAS is bound to that stream.
                    unsafe { blas.gemm(cfg, &*a, &*b, c) }
                }
            };
            r.map_err(|e| HwError::Other(format!("cuBLAS GEMM failed: {e:?}")))
        };
        let ns = w.ns.max(1000);
        match mode {
            VirusMode::Gemm => gemm(&self.blas, w)?,
            VirusMode::Hbm | VirusMode::Mixed | VirusMode::Mma => {
                if mode == VirusMode::Mixed {
                    gemm(&self.blas, w)?;
                }
                let cfg = LaunchConfig {
                    grid_dim: (self.sms * 4, 1, 1),
                    block_dim: (256, 1, 1),
                    shared_mem_bytes: 0,
                };
                let on = if mode == VirusMode::Mixed {
                    &self.side
                } else {
                    &self.stream
                };
                if mode == VirusMode::Mma {
                    let iters: i32 = if small { 2000 } else { 40_000 };
                    let mut b = on.launch_builder(&self.mma);
                    b.arg(&mut self.mma_out).arg(&iters);
                    // SAFETY: mma_out holds grid*block floats; the kernel writes at most one per thread.
                    unsafe { b.launch(cfg) }.map_err(|e| dev_err(&self.gpu, "mma kernel", e))?;
                } else {
                    let n4: u64 = (self.hbm_src.len() / 4) as u64 / if small { 16 } else { 1 };
                    let passes: i32 = 1;
                    let mut b = on.launch_builder(&self.hbm);
                    b.arg(&self.hbm_src)
                        .arg(&mut self.hbm_dst)
                        .arg(&n4)
                        .arg(&passes);
                    // SAFETY: both buffers hold at least n4 float4 elements.
                    unsafe { b.launch(cfg) }.map_err(|e| dev_err(&self.gpu, "HBM kernel", e))?;
                }
            }
        }
        Ok(ns)
    }

    /// Measures the duration of a load unit with device events.
    fn time_unit(&mut self, small: bool) -> Result<i64, HwError> {
        let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        for _ in 0..3 {
            self.launch_unit(small, LoadKind::Virus)?;
        }
        let reps = if small { 40 } else { 6 };
        let start = self
            .stream
            .record_event(timing)
            .map_err(|e| dev_err(&self.gpu, "event", e))?;
        for _ in 0..reps {
            self.launch_unit(small, LoadKind::Virus)?;
        }
        let end = self
            .stream
            .record_event(timing)
            .map_err(|e| dev_err(&self.gpu, "event", e))?;
        end.synchronize()
            .map_err(|e| dev_err(&self.gpu, "event", e))?;
        self.sync()?;
        let ms = start
            .elapsed_ms(&end)
            .map_err(|e| dev_err(&self.gpu, "event timing", e))?;
        Ok(((ms as f64) * 1e6 / reps as f64) as i64)
    }

    fn launch_stamp(&mut self, slot: usize) -> Result<(), HwError> {
        let mut view = self.slots.slice_mut(slot..slot + 1);
        let mut b = self.stream.launch_builder(&self.stamp);
        b.arg(&mut view);
        // SAFETY: one thread writes one u64 into a one-element view.
        unsafe {
            b.launch(LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (1, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .map_err(|e| dev_err(&self.gpu, "stamp kernel", e))?;
        self.last_launch = None;
        Ok(())
    }

    fn launch_spin(&mut self, deadline_run_ns: i64, slot: usize) -> Result<(), HwError> {
        let deadline_dev = (deadline_run_ns + self.predicted_offset(deadline_run_ns)).max(0) as u64;
        let mut view = self.slots.slice_mut(slot..slot + 1);
        let mut b = self.stream.launch_builder(&self.spin);
        b.arg(&deadline_dev).arg(&mut view);
        // SAFETY: one thread spins on the clock and writes one u64.
        unsafe {
            b.launch(LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (1, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .map_err(|e| dev_err(&self.gpu, "spin kernel", e))?;
        self.last_launch = None;
        self.predicted_end = self.predicted_end.max(deadline_run_ns);
        Ok(())
    }

    /// Queues the end of an on-phase: HBM streaming that stops when the
    /// device clock reaches the deadline and records that moment in `slot`.
    fn launch_burn(&mut self, deadline_run_ns: i64, slot: usize) -> Result<(), HwError> {
        let deadline_dev = (deadline_run_ns + self.predicted_offset(deadline_run_ns)).max(0) as u64;
        let n4: u64 = (self.hbm_src.len() / 4) as u64;
        let mut view = self.slots.slice_mut(slot..slot + 1);
        let cfg = LaunchConfig {
            grid_dim: (self.sms * 4, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.stream.launch_builder(&self.burn);
        b.arg(&deadline_dev)
            .arg(&self.hbm_src)
            .arg(&mut self.hbm_dst)
            .arg(&n4)
            .arg(&mut view);
        // SAFETY: src and dst hold n4 float4 elements each and every index stays
        // below n4; one thread writes one u64 into a one-element view.
        unsafe { b.launch(cfg) }.map_err(|e| dev_err(&self.gpu, "burn kernel", e))?;
        self.last_launch = None;
        self.predicted_end = self.predicted_end.max(deadline_run_ns);
        Ok(())
    }

    /// Device clock minus run clock, from the round trip with the least
    /// delay, and that round trip; recorded for the drift fit.
    fn measure_offset(&mut self) -> Result<(i64, i64), HwError> {
        let mut best = (i64::MAX, 0i64, 0i64);
        for _ in 0..15 {
            let h0 = self.clock.now_ns();
            let mut b = self.probe_stream.launch_builder(&self.stamp);
            b.arg(&mut self.probe_slot);
            // SAFETY: one thread writes one u64 into a one-element buffer.
            unsafe {
                b.launch(LaunchConfig {
                    grid_dim: (1, 1, 1),
                    block_dim: (1, 1, 1),
                    shared_mem_bytes: 0,
                })
            }
            .map_err(|e| dev_err(&self.gpu, "stamp kernel", e))?;
            self.probe_stream
                .synchronize()
                .map_err(|e| dev_err(&self.gpu, "probe stream", e))?;
            let h1 = self.clock.now_ns();
            let gt = self
                .probe_stream
                .clone_dtoh(&self.probe_slot)
                .map_err(|e| dev_err(&self.gpu, "reading the probe", e))?[0]
                as i64;
            if h1 - h0 < best.0 {
                best = (h1 - h0, gt - (h0 + h1) / 2, (h0 + h1) / 2);
            }
        }
        let (rtt, offset, at) = best;
        self.probes.push_back((at, offset, rtt));
        while self
            .probes
            .front()
            .is_some_and(|p| at - p.0 > DRIFT_SPAN_NS)
        {
            self.probes.pop_front();
        }
        Ok((offset, rtt))
    }

    /// The device clock's offset predicted at run-clock time `t`: the last
    /// probe, carried forward at the drift rate of a least-squares line
    /// through the recent probes (no drift until they span a second).
    fn predicted_offset(&self, t: i64) -> i64 {
        let Some(&(t_last, o_last, _)) = self.probes.back() else {
            return self.offset_ns;
        };
        let first = self.probes.front().map(|p| p.0).unwrap_or(t_last);
        if self.probes.len() < 2 || t_last - first < 1_000_000_000 {
            return o_last;
        }
        let n = self.probes.len() as f64;
        let (mt, mo) = (
            self.probes
                .iter()
                .map(|p| (p.0 - t_last) as f64)
                .sum::<f64>()
                / n,
            self.probes
                .iter()
                .map(|p| (p.1 - o_last) as f64)
                .sum::<f64>()
                / n,
        );
        let (mut sxy, mut sxx) = (0.0, 0.0);
        for p in &self.probes {
            let (x, y) = ((p.0 - t_last) as f64 - mt, (p.1 - o_last) as f64 - mo);
            sxy += x * y;
            sxx += x * x;
        }
        let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
        o_last + (slope * (t - t_last) as f64).round() as i64
    }

    /// Keeps at most a few ms of work queued: waits on the oldest event. Each
    /// completed unit that ran back to back with the previous one updates
    /// the duration estimate, so the estimate follows the clocks the power
    /// cap allows (an H200 at its 700 W cap runs ~1400 MHz, not 1980).
    fn throttle(&mut self, limit_ns: i64) -> Result<(), HwError> {
        loop {
            let queued: i64 = self.queued.iter().map(|q| q.est_ns).sum();
            if queued <= limit_ns || self.queued.len() <= 1 {
                return Ok(());
            }
            if let Some(q) = self.queued.pop_front() {
                q.ev.synchronize()
                    .map_err(|e| dev_err(&self.gpu, "event", e))?;
                if let Some((prev_small, prev)) = &self.last_done
                    && q.chained
                    && *prev_small == q.small
                    && let Ok(ms) = prev.elapsed_ms(&q.ev)
                {
                    let ns = (f64::from(ms) * 1e6) as i64;
                    let w = if q.small {
                        &mut self.chunk
                    } else {
                        &mut self.big
                    };
                    // Exponential average; absurd samples (preemption)
                    // ignored. Taking slowdowns at once was tried: the
                    // time between two units' events includes any gap
                    // in which the queue ran dry, so the estimate
                    // ratcheted up, the host queued less, the queue ran
                    // dry more, and on-phases of 500 ms and longer fell
                    // to the burn kernel's ~375 W (H200, device call 14).
                    if ns > w.ns / 4 && ns < w.ns * 4 {
                        w.ns = (w.ns * 7 + ns) / 8;
                    }
                }
                self.last_done = Some((q.small, q.ev));
                // The host has seen this unit finish: what is still queued
                // ends no earlier than now plus its estimates. Without this
                // the plan drifted early whenever units ran longer than
                // estimated, and the last chunk before a fall overran it.
                let rest: i64 = self.queued.iter().map(|q| q.est_ns).sum();
                self.predicted_end = self.predicted_end.max(self.clock.now_ns() + rest);
            }
        }
    }

    fn push_unit(&mut self, small: bool, load: LoadKind, limit_ns: i64) -> Result<(), HwError> {
        self.throttle(limit_ns)?;
        let ns = self.launch_unit(small, load)?;
        let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let ev = self
            .stream
            .record_event(timing)
            .map_err(|e| dev_err(&self.gpu, "event", e))?;
        let chained = self.last_launch == Some(small);
        self.last_launch = Some(small);
        self.queued.push_back(Queued {
            small,
            est_ns: ns,
            chained,
            ev,
        });
        self.predicted_end = self.predicted_end.max(self.clock.now_ns()) + ns;
        Ok(())
    }

    /// Queues load so that the device finishes it as close to `t` as a unit allows.
    fn fill_until(&mut self, t: i64, small: bool, load: LoadKind) -> Result<(), HwError> {
        let unit = if small { self.chunk.ns } else { self.big.ns }.max(1000);
        while self.predicted_end.max(self.clock.now_ns()) + unit / 2 < t {
            if self.stop.load(Ordering::Relaxed) {
                return Err(HwError::Other("stopped".into()));
            }
            // Big units near the edge would overshoot it: finish with small ones.
            let left = t - self.predicted_end.max(self.clock.now_ns());
            let near = left < 2 * self.big.ns;
            let limit = if t - self.clock.now_ns() < MAX_QUEUED_NS + NEAR_FALL_QUEUED_NS {
                NEAR_FALL_QUEUED_NS
            } else {
                MAX_QUEUED_NS
            };
            self.push_unit(small || near, load, limit)?;
        }
        Ok(())
    }

    fn host_wait_until(&self, t: i64) {
        let now = self.clock.now_ns();
        if t > now {
            std::thread::sleep(Duration::from_nanos((t - now) as u64));
        }
    }

    fn prepare(&mut self, warmup_ns: i64, load: Option<LoadKind>) -> Result<Readiness, HwError> {
        let until = self.clock.now_ns() + warmup_ns;
        match load {
            Some(l) => self.fill_until(until, false, l)?,
            // An idle rung's warm-up is idle: the power of whatever ran
            // before (the cold start's timing GEMMs) settles before its window.
            None => {
                while self.clock.now_ns() < until && !self.stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        }
        self.warm = load;
        let h0 = self.clock.now_ns();
        self.offset_ns = self.measure_offset()?.0;
        let probe_ns = self.clock.now_ns() - h0;
        // Arming needs the queued keep-warm work to drain before the first
        // deadline: count it in, with the probe time, and double it.
        let queued: i64 = self.queued.iter().map(|q| q.est_ns).sum::<i64>() + self.big.ns;
        Ok(Readiness {
            ready_at_ns: self.clock.now_ns(),
            arm_latency_ns: (2 * (probe_ns / 15 + queued)).max(1_000_000),
            device_clock_offset_ns: Some(self.offset_ns),
            realtime_thread: Some(self.realtime),
        })
    }

    fn run(&mut self, s: &GpuSchedule) -> Result<RungOutcome, HwError> {
        let edges = s.shape.edges(s.start_ns, s.end_ns);
        let t_begin = self.clock.now_ns();
        let (o_begin, rtt_begin) = self.measure_offset()?;
        self.offset_ns = o_begin;
        if self.slots.len() < edges.len() + 1 {
            self.slots = self
                .stream
                .alloc_zeros::<u64>(edges.len() + 1)
                .map_err(|e| dev_err(&self.gpu, "edge slots", e))?;
        }
        let mut collectives = Vec::new();
        match &s.shape {
            LoadShape::Sweep { .. } | LoadShape::Fabric { .. } => {
                // Collectives start on the device clock at the window start,
                // behind whatever keep-warm work is still queued.
                self.warm = None;
                self.launch_spin(s.start_ns, 0)?;
                collectives = match &s.shape {
                    LoadShape::Sweep { spec } => self.sweep(spec, s.start_ns, s.end_ns)?,
                    LoadShape::Fabric { spec } => self.fabric(spec, s.start_ns, s.end_ns)?,
                    _ => Vec::new(),
                };
            }
            _ => self.run_edges(s, &edges)?,
        }
        self.sync()?;
        // The window lasts until its end whatever the load (an idle rung too).
        self.host_wait_until(s.end_ns);
        self.warm = None;
        let achieved = self
            .stream
            .clone_dtoh(&self.slots.slice(0..edges.len()))
            .map_err(|e| dev_err(&self.gpu, "reading edges", e))?;
        // Device time back to run time with the offset interpolated between
        // the probes before and after the rung (the two clocks drift).
        let t_end = self.clock.now_ns();
        let (o_end, rtt_end) = self.measure_offset()?;
        let span = (t_end - t_begin).max(1) as f64;
        let offset_at = |t: i64| {
            o_begin
                + (((o_end - o_begin) as f64) * ((t - t_begin) as f64 / span).clamp(0.0, 1.0))
                    as i64
        };
        let out = edges
            .iter()
            .zip(achieved)
            .enumerate()
            .map(|(i, ((kind, t), gt))| EdgeRecord {
                index: i as u32,
                kind: *kind,
                intended_ns: *t,
                achieved_ns: gt as i64 - offset_at(*t),
            })
            .collect();
        let clock = DeviceClock {
            begin_ns: t_begin,
            offset_begin_ns: o_begin,
            end_ns: t_end,
            offset_end_ns: o_end,
            probe_rtt_ns: rtt_begin.max(rtt_end),
        };
        Ok(RungOutcome {
            edges: out,
            work_items: 0,
            collectives,
            clock: Some(clock),
        })
    }

    /// Queues the load of a constant, idle or square-wave rung edge by edge.
    fn run_edges(&mut self, s: &GpuSchedule, edges: &[(EdgeKind, i64)]) -> Result<(), HwError> {
        let load = s.shape.load().unwrap_or(LoadKind::Virus);
        let small = matches!(s.shape, LoadShape::Square { .. });
        let mut on = self.warm.is_some();
        let warm_small = false;
        // GEMM chunks stop this long before a fall; burn_until covers the
        // rest. A chunk planned up to 0.5 ms ahead can take 30-50 % longer
        // than planned when the power controller pulls the clocks down
        // (H200, 50 and 100 ms periods): the tail covers that.
        let tail_ns = (2 * self.chunk.ns).max(MIN_FALL_TAIL_NS);
        for (i, (kind, t)) in edges.iter().copied().enumerate() {
            if self.stop.load(Ordering::Relaxed) {
                return Err(HwError::Other("stopped".into()));
            }
            let next_on = match kind {
                EdgeKind::Start => s.shape.is_on(s.start_ns, s.start_ns),
                EdgeKind::Rise => true,
                EdgeKind::Fall => false,
            };
            if kind == EdgeKind::Fall {
                if on {
                    self.fill_until(t - tail_ns, small, load)?;
                }
                self.launch_burn(t, i)?;
            } else {
                if on {
                    let kind_small = if i == 0 { warm_small } else { small };
                    self.fill_until(t, kind_small, self.warm.filter(|_| i == 0).unwrap_or(load))?;
                }
                // Armed at once, also after a fall: the rise waits on the
                // device, and the host need not be on time for it.
                self.launch_spin(t, i)?;
            }
            on = next_on;
            self.warm = None;
        }
        if on {
            self.fill_until(s.end_ns, small, load)?;
        }
        self.launch_stamp(edges.len())
    }
}

/// Asks the OS to run the calling (engine) thread ahead of ordinary
/// processes (SCHED_FIFO, priority 10), so that a host whose cores are all
/// busy still feeds its GPU on time. Needs CAP_SYS_NICE (root, or an rtprio
/// limit); without it the thread stays where it was. Returns whether it was
/// granted. The Linux default keeps 5 % of every second for ordinary tasks.
fn request_realtime() -> bool {
    let param = libc::sched_param { sched_priority: 10 };
    // SAFETY: pthread_self() names the calling thread, which is alive, and
    // param is a valid sched_param for SCHED_FIFO.
    unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) == 0 }
}

/// Handle to an engine thread.
pub struct EngineHandle {
    /// Commands.
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
                    Cmd::Run { schedule, reply } => {
                        let r = match &mut engine {
                            Some(e) => {
                                let r = e.run(&schedule);
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
