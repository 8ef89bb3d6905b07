//! Device setup: the CUDA context, the load and side streams, the
//! NVRTC-compiled helper kernels, the cuBLAS handle and the buffers the load
//! runs on, all owned by [`Device`]. It also asks the OS to run the engine
//! thread in the real-time class.
#![allow(unsafe_code)] // CUDA context options and pthread scheduling are unsafe FFI; each site states its invariant.

use super::{EngineConfig, GemmDtype};
use crate::kernels;
use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream};
use half::{bf16, f16};
use powerlab_core::hw::HwError;
use std::sync::Arc;

/// The operands of the GEMMs of one unit size, in the configured type.
pub(super) enum Operands {
    /// IEEE half-precision operands.
    Fp16 {
        a: CudaSlice<f16>,
        b: CudaSlice<f16>,
        c: CudaSlice<f16>,
    },
    /// bfloat16 operands.
    Bf16 {
        a: CudaSlice<bf16>,
        b: CudaSlice<bf16>,
        c: CudaSlice<bf16>,
    },
}

/// The device side of one unit size: its square GEMM operands and their size.
pub(super) struct Unit {
    /// The n × n inputs and output.
    pub(super) ops: Operands,
    /// The side of the square matrices.
    pub(super) n: usize,
}

/// The helper kernels compiled from `kernels/virus.cu`.
pub(super) struct Kernels {
    /// `spin_until`: holds the stream until a device-clock deadline.
    pub(super) spin: CudaFunction,
    /// `stamp`: records the device clock in one slot.
    pub(super) stamp: CudaFunction,
    /// `burn_until`: HBM streaming and mma.sync until a device-clock deadline.
    pub(super) burn: CudaFunction,
    /// `hbm_stream`: one HBM streaming unit.
    pub(super) hbm: CudaFunction,
    /// `mma_regs`: the register-only mma.sync unit.
    pub(super) mma: CudaFunction,
    /// `fill_random`: fills a buffer with random floats.
    pub(super) fill: CudaFunction,
}

/// One GPU's CUDA resources: streams, kernels, cuBLAS and the load's buffers.
pub(super) struct Device {
    /// The load stream: every unit, edge kernel and collective runs on it.
    pub(super) stream: Arc<CudaStream>,
    /// The side stream: the HBM half of mixed mode.
    pub(super) side: Arc<CudaStream>,
    /// The cuBLAS handle, bound to the load stream.
    pub(super) blas: CudaBlas,
    /// The helper kernels.
    pub(super) kernels: Kernels,
    /// The operands of a constant-load unit.
    pub(super) big: Unit,
    /// The operands of a duty chunk.
    pub(super) chunk: Unit,
    /// Source of HBM streaming (also read by `burn_until`).
    pub(super) hbm_src: CudaSlice<f32>,
    /// Destination of HBM streaming (also written by `burn_until`).
    pub(super) hbm_dst: CudaSlice<f32>,
    /// Output of the mma kernel, one float per thread.
    pub(super) mma_out: CudaSlice<f32>,
    /// The GPU's multiprocessor count.
    pub(super) sms: u32,
}

/// Wraps a CUDA error as a device failure of `gpu`, naming what failed.
pub(super) fn dev_err(gpu: &str, what: &str, e: impl std::fmt::Debug) -> HwError {
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

impl Device {
    /// Creates the context of `cfg.ordinal`, compiles and loads the kernels,
    /// and allocates and initialises the load's buffers.
    pub(super) fn new(cfg: &EngineConfig, gpu: &str) -> Result<Device, HwError> {
        let e = |w: &str| {
            let gpu = gpu.to_string();
            let w = w.to_string();
            move |err: cudarc::driver::DriverError| dev_err(&gpu, &w, err)
        };
        let ctx = CudaContext::new(cfg.ordinal).map_err(e("creating the CUDA context"))?;
        // Streams are ordered explicitly here (one load stream, the side
        // stream only for mixed mode with its own buffers): no implicit
        // cross-stream events on every launch.
        // SAFETY: cudarc stops ordering buffers across streams, so the engine
        // must. Every buffer but the HBM pair and the edge slots is used only
        // on the stream it was allocated on, where allocation, use and free
        // are stream-ordered. The edge slots are allocated, zeroed and read
        // on their readback stream, synchronised before any edge kernel that
        // writes them is queued on the load stream (see `edges::Stamps`).
        // The HBM pair is allocated on the load stream, which is synchronised
        // before the side stream first uses it, and is freed when the engine
        // ends, after both streams are synchronised. Mixed-mode units on the
        // side stream and `burn_until` on the load stream may write its
        // destination at once: a race on scratch data that is never read back.
        unsafe { ctx.disable_event_tracking() };
        let (major, minor) = ctx.compute_capability().map_err(e("compute capability"))?;
        let ptx = kernels::compile(kernels::arch_for(major, minor)?)?;
        let module = ctx.load_module(ptx).map_err(e("loading kernels"))?;
        let f = |name: &str| {
            module
                .load_function(name)
                .map_err(|er| dev_err(gpu, &format!("kernel {name}"), er))
        };
        let kernels = Kernels {
            spin: f("spin_until")?,
            stamp: f("stamp")?,
            burn: f("burn_until")?,
            hbm: f("hbm_stream")?,
            mma: f("mma_regs")?,
            fill: f("fill_random")?,
        };
        let stream = ctx.new_stream().map_err(e("stream"))?;
        let side = ctx.new_stream().map_err(e("side stream"))?;
        let blas = CudaBlas::new(stream.clone()).map_err(|er| dev_err(gpu, "cuBLAS handle", er))?;
        let sms = ctx
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
            .map_err(e("SM count"))? as u32;
        let unit = |n: usize, seed: u64| -> Result<Unit, HwError> {
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
            Ok(Unit { ops, n })
        };
        let big = unit(cfg.big_n, 11)?;
        let chunk = unit(cfg.chunk_n, 23)?;
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
        Ok(Device {
            stream,
            side,
            blas,
            kernels,
            big,
            chunk,
            hbm_src,
            hbm_dst,
            mma_out,
            sms,
        })
    }

    /// Waits until the load stream, then the side stream, has run dry.
    pub(super) fn synchronize(&self, gpu: &str) -> Result<(), HwError> {
        self.stream
            .synchronize()
            .map_err(|e| dev_err(gpu, "stream", e))?;
        self.side
            .synchronize()
            .map_err(|e| dev_err(gpu, "side stream", e))
    }
}

/// Asks the OS to run the calling (engine) thread ahead of ordinary
/// processes (SCHED_FIFO, priority 10), so that a host whose cores are all
/// busy still feeds its GPU on time. Needs CAP_SYS_NICE (root, or an rtprio
/// limit); without it the thread stays where it was. Returns whether it was
/// granted. The Linux default keeps 5 % of every second for ordinary tasks.
pub(super) fn request_realtime() -> bool {
    let param = libc::sched_param { sched_priority: 10 };
    // SAFETY: pthread_self() names the calling thread, which is alive, and
    // param is a valid sched_param for SCHED_FIFO.
    unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) == 0 }
}
