//! The real GPU backend: the CUDA power virus and the per-GPU engine that
//! places on/off edges on the device clock.
//!
//! Each GPU gets one OS thread owning its CUDA context, streams, cuBLAS
//! handle and NVRTC-compiled helper kernels (`kernels/virus.cu`, compiled for
//! the architecture of the GPU found). Rising edges are placed on the device
//! by a kernel that holds the stream until `%globaltimer` reaches the
//! deadline; the load behind it (cuBLAS GEMM chunks by default) starts at
//! full power from the first microsecond. Achieved edges are read back from
//! device timestamps. Libraries are loaded at run time: a missing one is an
//! error that names it, never a panic.

pub mod engine;
pub mod gpu;
pub mod kernels;
// Loading shared libraries runs their initialisers; each site states its invariant.
#[allow(unsafe_code)]
pub mod libs;
pub mod node;

pub use engine::{GemmDtype, VirusMode};
pub use node::{CudaBackend, CudaOptions, NcclWorld, hostname, nccl_unique_id};
