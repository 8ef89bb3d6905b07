//! Opening the real node: CUDA devices matched to NVML devices by UUID.

use crate::engine::{EngineConfig, NcclRank, VirusMode, spawn};
use crate::gpu::CudaGpu;
use crate::libs::CudaLib;
use cudarc::driver::CudaContext;
use powerlab_core::GpuSelector;
use powerlab_core::RunClock;
use powerlab_core::hw::{
    Backend, BackendInfo, Capability, Gpu, GpuIdentity, HwError, NodeHandles, PowerSource,
};
use powerlab_nvml::NvmlSource;
use std::sync::Arc;

/// Options of the real backend.
#[derive(Debug, Clone)]
pub struct CudaOptions {
    /// Which GPUs.
    pub selector: GpuSelector,
    /// Load mode.
    pub mode: VirusMode,
    /// Big GEMM size.
    pub big_n: usize,
    /// Duty chunk GEMM size.
    pub chunk_n: usize,
    /// GEMM operand type.
    pub dtype: crate::engine::GemmDtype,
    /// Across a rack: the NCCL world this node's GPUs join (None: one
    /// communicator over this node's GPUs).
    pub nccl_world: Option<NcclWorld>,
    /// The node id written into every raw row, edge and collective: the
    /// rack's node label in a rack run (several ranks may share one host),
    /// else the host name.
    pub node_id: Option<String>,
}

/// One NCCL communicator over every GPU of a rack, bootstrapped the way
/// nccl-tests does under MPI: rank 0 makes the unique id, every node
/// receives it, and a node's GPUs take consecutive global ranks.
#[derive(Debug, Clone)]
pub struct NcclWorld {
    /// The unique id from rank 0's `ncclGetUniqueId`.
    pub id: [std::ffi::c_char; 128],
    /// Global rank of this node's first GPU.
    pub first_rank: usize,
    /// GPUs in the whole rack.
    pub ranks: usize,
}

/// A fresh NCCL unique id (rank 0 of a rack), or why not.
///
/// # Errors
///
/// Returns [`HwError::Missing`] if the NCCL library cannot be loaded, and
/// [`HwError::Other`] if `ncclGetUniqueId` fails (typically no usable
/// network interface for NCCL's bootstrap).
pub fn nccl_unique_id() -> Result<[std::ffi::c_char; 128], HwError> {
    CudaLib::Nccl.require()?;
    cudarc::nccl::Id::new()
        .map(|id| *id.internal())
        .map_err(|e| HwError::Other(format!("ncclGetUniqueId failed: {e:?}")))
}

impl Default for CudaOptions {
    fn default() -> Self {
        CudaOptions {
            selector: GpuSelector::All,
            mode: VirusMode::Mixed,
            big_n: 8192,
            chunk_n: 3072,
            dtype: crate::engine::GemmDtype::Bf16,
            nccl_world: None,
            node_id: None,
        }
    }
}

/// The real node.
pub struct CudaBackend {
    opts: CudaOptions,
    clock: RunClock,
}

/// Formats a CUDA UUID the way NVML prints it (`GPU-xxxxxxxx-…`).
pub fn format_uuid(bytes: &[u8; 16]) -> String {
    let h: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        h[0..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..16].concat()
    )
}

/// Explains CUDA initialisation failures, 802 above all.
pub fn explain_cuda_init(e: &cudarc::driver::DriverError) -> String {
    let code = e.0 as i32;
    if code == 802 {
        "CUDA error 802 (system not yet initialized): on an NVSwitch node this means the GPUs are not registered with the fabric \
         (nvidia-smi -q shows Fabric State: In Progress, CliqueId N/A). nvidia-smi and NVML still look healthy; CUDA will not start \
         until the host's Fabric Manager activates the partition. Ask the provider, or use bare metal."
            .to_string()
    } else {
        format!("CUDA driver initialisation failed: {e:?}")
    }
}

impl CudaBackend {
    /// A real node on the run clock.
    pub fn new(opts: CudaOptions, clock: RunClock) -> Self {
        CudaBackend { opts, clock }
    }

    /// NCCL, and the id of one communicator over the selected GPUs, ranks
    /// in run order: made here (ncclGetUniqueId), or the rack's when the
    /// GPUs join a world across nodes; each engine joins on its first
    /// NCCL rung. Absent (no id) when NCCL is missing or the id cannot be
    /// made.
    fn nccl_communicator(&self) -> (Capability, Option<cudarc::nccl::Id>) {
        match CudaLib::Nccl.require() {
            Ok(v) if self.opts.nccl_world.is_some() => (Capability::Present(v), self.opts.nccl_world.as_ref().map(|w| cudarc::nccl::Id::uninit(w.id))),
            Ok(v) => match cudarc::nccl::Id::new() {
                Ok(id) => (Capability::Present(v), Some(id)),
                Err(e) => (
                    Capability::Absent(HwError::Missing {
                        what: "NCCL (libnccl)".into(),
                        detail: format!("{v} loaded but ncclGetUniqueId failed: {e:?}"),
                        fix: "check NCCL_SOCKET_IFNAME / NCCL_DEBUG=INFO output; NCCL needs a usable network interface for its bootstrap".into(),
                    }),
                    None,
                ),
            },
            Err(e) => (Capability::Absent(e), None),
        }
    }
}

/// Like [`visible_gpus`], with the CUDA error code kept (preflight needs it).
///
/// # Errors
///
/// Returns `(-1, message)` if `libcuda` cannot be loaded, and the CUDA
/// error code with its description if counting the devices, creating a
/// context on one of them or reading its UUID fails (802 on an NVSwitch
/// node whose fabric is not ready). Unlike [`visible_gpus`], seeing no GPU
/// at all is not an error here: it is an empty list.
pub fn visible_gpus_raw() -> Result<Vec<(usize, String)>, (i32, String)> {
    if !CudaLib::Driver.cudarc_finds() {
        return Err((-1, "libcuda cannot be loaded".into()));
    }
    let n = CudaContext::device_count().map_err(|e| (e.0 as i32, format!("{e:?}")))?;
    let mut out = Vec::new();
    for ordinal in 0..n.max(0) as usize {
        let ctx = CudaContext::new(ordinal).map_err(|e| (e.0 as i32, format!("{e:?}")))?;
        let uuid = ctx.uuid().map_err(|e| (e.0 as i32, format!("{e:?}")))?;
        out.push((ordinal, format_uuid(&uuid.bytes.map(|b| b as u8))));
    }
    Ok(out)
}

/// The GPUs CUDA can see (after `CUDA_VISIBLE_DEVICES`), by ordinal, with UUIDs.
///
/// # Errors
///
/// Returns [`HwError::Missing`] if `libcuda` cannot be loaded, and
/// [`HwError::Other`] if the CUDA driver cannot be initialised or count
/// the devices (error 802 is explained as a fabric that is not ready), if
/// CUDA sees no GPU at all (the message shows `CUDA_VISIBLE_DEVICES`), or
/// if a device's UUID cannot be read. It creates no context.
pub fn visible_gpus() -> Result<Vec<(usize, String)>, HwError> {
    CudaLib::Driver.require()?;
    let n = CudaContext::device_count().map_err(|e| HwError::Other(explain_cuda_init(&e)))?;
    if n == 0 {
        let mask = std::env::var("CUDA_VISIBLE_DEVICES")
            .map(|v| format!("CUDA_VISIBLE_DEVICES={v:?}"))
            .unwrap_or_else(|_| "CUDA_VISIBLE_DEVICES unset".into());
        return Err(HwError::Other(format!(
            "CUDA sees no GPU ({mask}); fix the device mask or the container's device mounts"
        )));
    }
    // The UUIDs from the device handles alone: no context is created here
    // (the run's first rung samples the GPUs before this process holds
    // one; the engines create theirs on their first prepare).
    let mut out = Vec::new();
    for ordinal in 0..n as usize {
        let uuid = cudarc::driver::result::device::get(ordinal as i32)
            .and_then(cudarc::driver::result::device::get_uuid)
            .map_err(|e| {
                HwError::Other(format!("reading the UUID of CUDA device {ordinal}: {e:?}"))
            })?;
        let bytes: [u8; 16] = uuid.bytes.map(|b| b as u8);
        out.push((ordinal, format_uuid(&bytes)));
    }
    Ok(out)
}

impl Backend for CudaBackend {
    fn open(&mut self) -> Result<NodeHandles, HwError> {
        CudaLib::Driver.require()?;
        CudaLib::Nvrtc.require()?;
        CudaLib::Cublas.require()?;
        CudaLib::CublasLt.require()?;
        let nvml = Arc::new(powerlab_nvml::init_nvml().map_err(|e| HwError::Other(e.to_string()))?);
        let visible = visible_gpus()?;
        let uuids: Vec<String> = visible.iter().map(|(_, u)| u.clone()).collect();
        let chosen: Vec<(usize, String)> = self
            .opts
            .selector
            .resolve(&uuids, "this node (CUDA)")
            .map_err(HwError::Other)?
            .into_iter()
            .map(|at| visible[at].clone())
            .collect();
        let (nccl, nccl_id) = self.nccl_communicator();
        let mut ids = Vec::new();
        let mut gpus: Vec<Box<dyn Gpu>> = Vec::new();
        let mut sources: Vec<Box<dyn PowerSource>> = Vec::new();
        for (k, (ordinal, uuid)) in chosen.iter().enumerate() {
            // CUDA and NVML number devices differently: match by UUID only.
            let dev = nvml.device_by_uuid(uuid.as_str()).map_err(|e| {
                HwError::Other(format!("NVML has no device with CUDA's UUID {uuid}: {e}"))
            })?;
            let id = GpuIdentity {
                key: format!("gpu{k}"),
                uuid: uuid.clone(),
                name: dev.name().unwrap_or_else(|_| "unknown".into()),
                nvml_index: dev
                    .index()
                    .map_err(|e| HwError::Other(format!("NVML index of {uuid}: {e}")))?,
                power_limit_w: dev
                    .enforced_power_limit()
                    .map(|mw| f64::from(mw) / 1000.0)
                    .unwrap_or(0.0),
                power_smoothing: powerlab_nvml::read_power_smoothing(&nvml, &dev),
            };
            let rank = nccl_id.map(|id| match &self.opts.nccl_world {
                Some(w) => NcclRank {
                    id,
                    rank: w.first_rank + k,
                    ranks: w.ranks,
                },
                None => NcclRank {
                    id,
                    rank: k,
                    ranks: chosen.len(),
                },
            });
            let cfg = EngineConfig {
                ordinal: *ordinal,
                mode: self.opts.mode,
                big_n: self.opts.big_n,
                chunk_n: self.opts.chunk_n,
                dtype: self.opts.dtype,
                nccl: rank,
            };
            gpus.push(Box::new(CudaGpu {
                id: id.clone(),
                engine: spawn(self.clock, cfg, uuid.clone()),
                feed: None,
            }));
            sources.push(Box::new(NvmlSource::new(nvml.clone(), id.clone())?));
            ids.push(id);
        }
        let host = hostname();
        Ok(NodeHandles {
            info: BackendInfo {
                backend: "cuda".into(),
                node_id: self.opts.node_id.clone().unwrap_or_else(|| host.clone()),
                host,
                gpus: ids,
                driver: format!(
                    "driver {}, CUDA {}, virus {:?}",
                    nvml.sys_driver_version().unwrap_or_default(),
                    nvml.sys_cuda_driver_version().unwrap_or(0),
                    self.opts.mode
                ),
                nccl,
            },
            gpus,
            sources,
            meters: Vec::new(),
        })
    }
}

/// The host name (`/proc/sys/kernel/hostname`, else `$HOSTNAME`, else "node").
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "node".into())
}

#[cfg(test)]
mod tests {
    #[test]
    fn uuid_format_matches_nvml() {
        let b = [
            0x8d, 0x7f, 0x4a, 0x2b, 0x3c, 0x1e, 0x4f, 0x5d, 0x9a, 0x8b, 0x7c, 0x6d, 0x5e, 0x4f,
            0x3a, 0x2b,
        ];
        assert_eq!(
            super::format_uuid(&b),
            "GPU-8d7f4a2b-3c1e-4f5d-9a8b-7c6d5e4f3a2b"
        );
    }
}
