//! The load units: one cuBLAS GEMM, HBM streaming or mma kernel launch (or
//! a GEMM and HBM streaming at once in mixed mode) per unit, big for
//! constant load and small for duty chunks. Timing the units is pacing's job.
#![allow(unsafe_code)] // cuBLAS calls and kernel launches are unsafe FFI; each site states its invariant.

use super::VirusMode;
use super::setup::{Device, Operands, Unit, dev_err};
use cudarc::cublas::{CudaBlas, Gemm, GemmConfig, sys::cublasOperation_t};
use cudarc::driver::{LaunchConfig, PushKernelArg};
use half::{bf16, f16};
use powerlab_core::hw::HwError;
use powerlab_core::shape::LoadKind;

impl Device {
    /// Enqueues one unit of load: a duty chunk if `small`, else a
    /// constant-load unit, of the kind `load` and the configured `mode` call for.
    pub(super) fn launch_unit(
        &mut self,
        mode: VirusMode,
        small: bool,
        load: LoadKind,
        gpu: &str,
    ) -> Result<(), HwError> {
        let mode = match (load, mode) {
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
        let gemm = |blas: &CudaBlas, w: &mut Unit| -> Result<(), HwError> {
            let n = w.n as i32;
            let op = cublasOperation_t::CUBLAS_OP_N;
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
                    let mut b = on.launch_builder(&self.kernels.mma);
                    b.arg(&mut self.mma_out).arg(&iters);
                    // SAFETY: mma_out holds grid*block floats; the kernel writes at most one per thread.
                    unsafe { b.launch(cfg) }.map_err(|e| dev_err(gpu, "mma kernel", e))?;
                } else {
                    let n4: u64 = (self.hbm_src.len() / 4) as u64 / if small { 16 } else { 1 };
                    let passes: i32 = 1;
                    let mut b = on.launch_builder(&self.kernels.hbm);
                    b.arg(&self.hbm_src)
                        .arg(&mut self.hbm_dst)
                        .arg(&n4)
                        .arg(&passes);
                    // SAFETY: both buffers hold at least n4 float4 elements.
                    unsafe { b.launch(cfg) }.map_err(|e| dev_err(gpu, "HBM kernel", e))?;
                }
            }
        }
        Ok(())
    }
}
