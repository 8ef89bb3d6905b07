//! The real probe: reads the node through NVML and the CUDA driver. It only
//! reads; it never changes a clock, limit, mode or anything else.
#![allow(unsafe_code)] // one raw NVML call (fabric info) that nvml-wrapper does not wrap

use crate::facts::{FabricFacts, GpuFacts, LibFacts, NodeFacts, ProcessFacts};
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{
    Clock, Sampling, TemperatureSensor, TemperatureThreshold,
};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::struct_wrappers::device::ProcessInfo;
use nvml_wrapper::structs::device::FieldId;
use powerlab_core::units::Watts;
use powerlab_cuda::libs::CudaLib;

fn fabric(nvml: &Nvml, dev: &nvml_wrapper::Device<'_>) -> Option<FabricFacts> {
    use nvml_wrapper_sys::bindings::*;
    let lib = nvml.lib();
    let f = lib.nvmlDeviceGetGpuFabricInfoV.as_ref().ok()?;
    // SAFETY: a plain C struct of integers and arrays, for which all-zero bytes are valid.
    let mut info: nvmlGpuFabricInfoV_t = unsafe { std::mem::zeroed() };
    info.version = (std::mem::size_of::<nvmlGpuFabricInfoV_t>() as u32) | (3 << 24);
    // SAFETY: the symbol exists (checked above); `info` is a zeroed struct of the versioned size.
    let rc = unsafe { f(dev.handle(), &mut info) };
    if rc == nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED {
        return None;
    }
    if rc != nvmlReturn_enum_NVML_SUCCESS {
        return Some(FabricFacts {
            state: format!("unreadable (NVML return {rc})"),
            status: "unknown".into(),
            clique_id: None,
        });
    }
    let state = match u32::from(info.state) {
        NVML_GPU_FABRIC_STATE_NOT_SUPPORTED => "not_supported",
        NVML_GPU_FABRIC_STATE_NOT_STARTED => "not_started",
        NVML_GPU_FABRIC_STATE_IN_PROGRESS => "in_progress",
        NVML_GPU_FABRIC_STATE_COMPLETED => "completed",
        _ => "unknown",
    };
    let status = if info.status == nvmlReturn_enum_NVML_SUCCESS {
        "success".to_string()
    } else {
        format!("nvml_return_{}", info.status)
    };
    let clique_id = (state == "completed" && info.status == nvmlReturn_enum_NVML_SUCCESS)
        .then_some(info.cliqueId);
    Some(FabricFacts {
        state: state.into(),
        status,
        clique_id,
    })
}

/// Row-remapping state (pending, failure occurred), where supported.
fn remapped_rows(nvml: &Nvml, dev: &nvml_wrapper::Device<'_>) -> Option<(bool, bool)> {
    let f = nvml.lib().nvmlDeviceGetRemappedRows.as_ref().ok()?;
    let (mut corr, mut unc, mut pending, mut failure) = (0u32, 0u32, 0u32, 0u32);
    // SAFETY: the symbol exists; the four out-pointers are valid for the call.
    let rc = unsafe {
        f(
            dev.handle(),
            &mut corr,
            &mut unc,
            &mut pending,
            &mut failure,
        )
    };
    (rc == nvml_wrapper_sys::bindings::nvmlReturn_enum_NVML_SUCCESS)
        .then_some((pending != 0, failure != 0))
}

/// The CUDA toolkit version the tool's bindings are built for.
const BINDINGS_CUDA_VERSION: i32 = 13000;

/// Reads everything preflight judges.
pub fn probe() -> NodeFacts {
    let host = powerlab_cuda::node::hostname();
    let libs = lib_facts();
    let cuda_visible_devices = std::env::var("CUDA_VISIBLE_DEVICES").ok();
    let (cuda_init, cuda_uuids) = match powerlab_cuda::node::visible_gpus_raw() {
        Ok(v) => (Ok(v.len()), v.into_iter().map(|(_, u)| u).collect()),
        Err(e) => (Err(e), Vec::new()),
    };
    let nvml = match Nvml::init() {
        Ok(n) => n,
        Err(e) => {
            return NodeFacts {
                host,
                nvml: Err(e.to_string()),
                cuda_visible_devices,
                cuda_init,
                cuda_uuids,
                driver_cuda_version: None,
                bindings_cuda_version: BINDINGS_CUDA_VERSION,
                libs,
                gpus: Vec::new(),
                topology: Vec::new(),
                own_processes: Vec::new(),
            };
        }
    };
    let count = nvml.device_count().unwrap_or(0);
    let gpus: Vec<GpuFacts> = (0..count)
        .filter_map(|i| {
            let d = nvml.device_by_index(i).ok()?;
            Some(gpu_facts(&nvml, i, &d))
        })
        .collect();
    let topology = topology(&nvml, count, &gpus);
    NodeFacts {
        host,
        nvml: Ok(nvml.sys_driver_version().unwrap_or_default()),
        cuda_visible_devices,
        cuda_init,
        cuda_uuids,
        driver_cuda_version: nvml.sys_cuda_driver_version().ok(),
        bindings_cuda_version: BINDINGS_CUDA_VERSION,
        libs,
        gpus,
        topology,
        own_processes: Vec::new(),
    }
}

/// Whether each library the load needs loads, and from where.
fn lib_facts() -> Vec<LibFacts> {
    [
        ("libcuda", CudaLib::Driver),
        ("libnvrtc", CudaLib::Nvrtc),
        ("libcublas", CudaLib::Cublas),
        ("libcublasLt", CudaLib::CublasLt),
        ("libnccl", CudaLib::Nccl),
    ]
    .into_iter()
    .map(|(name, l)| match l.require() {
        Ok(f) => LibFacts {
            name: name.into(),
            found: Some(f),
            error: None,
        },
        Err(e) => LibFacts {
            name: name.into(),
            found: None,
            error: Some(e.to_string()),
        },
    })
    .collect()
}

/// Everything read from GPU `i` (NVML index).
fn gpu_facts(nvml: &Nvml, i: u32, d: &nvml_wrapper::Device<'_>) -> GpuFacts {
    let mut g = GpuFacts {
        index: i,
        uuid: d.uuid().unwrap_or_default(),
        name: d.name().unwrap_or_default(),
        ..Default::default()
    };
    read_power(d, &mut g);
    g.fabric = fabric(nvml, d);
    if let Ok(ps) = d.running_compute_processes() {
        g.processes = processes(nvml, ps);
    }
    g.clock_event_bits = d.current_throttle_reasons().ok().map(|r| r.bits());
    g.enforced_limit_w = d.enforced_power_limit().ok().map(watts);
    g.default_limit_w = d.power_management_limit_default().ok().map(watts);
    read_modes(nvml, d, &mut g);
    g.sm_clock_mhz = d.clock_info(Clock::SM).ok();
    g.sm_clock_max_mhz = d.max_clock_info(Clock::SM).ok();
    g.mem_clock_mhz = d.clock_info(Clock::Memory).ok();
    g.temp_c = d.temperature(TemperatureSensor::Gpu).ok();
    g.temp_slowdown_c = d.temperature_threshold(TemperatureThreshold::Slowdown).ok();
    g.power_avg_w = d.power_usage().ok().map(watts);
    g.power_smoothing = powerlab_nvml::read_power_smoothing(nvml, d);
    g.nvlinks_active = Some(
        (0..18)
            .filter(|l| d.link_wrapper_for(*l).is_active().unwrap_or(false))
            .count() as u32,
    );
    g
}

/// NVML milliwatts as watts.
fn watts(mw: u32) -> f64 {
    Watts::from_mw(mw).0
}

/// The instant power field (field 186) and the driver's buffered samples.
fn read_power(d: &nvml_wrapper::Device<'_>, g: &mut GpuFacts) {
    match d
        .field_values_for(&[FieldId(186)])
        .map(|v| v.into_iter().next())
    {
        Ok(Some(Ok(s))) => match s.value {
            Ok(v) => g.instant_power_w = Some(sample_f64(&v) / 1000.0),
            Err(e) => g.instant_power_error = Some(e.to_string()),
        },
        Ok(Some(Err(e))) | Err(e) => g.instant_power_error = Some(e.to_string()),
        Ok(None) => g.instant_power_error = Some("no value".into()),
    }
    match d.samples(Sampling::Power, None) {
        Ok(s) => g.buffered_samples = Some(s.len()),
        Err(e) => g.buffered_error = Some(e.to_string()),
    }
}

/// The compute processes on a GPU, this one left out.
fn processes(nvml: &Nvml, ps: Vec<ProcessInfo>) -> Vec<ProcessFacts> {
    ps.into_iter()
        .map(|p| ProcessFacts {
            pid: p.pid,
            used_bytes: match p.used_gpu_memory {
                UsedGpuMemory::Used(b) => Some(b),
                UsedGpuMemory::Unavailable => None,
            },
            name: nvml.sys_process_name(p.pid, 64).ok(),
        })
        .filter(|p| p.pid != std::process::id())
        .collect()
}

/// ECC, row remapping, persistence and MIG modes.
fn read_modes(nvml: &Nvml, d: &nvml_wrapper::Device<'_>, g: &mut GpuFacts) {
    if let Ok(e) = d.is_ecc_enabled() {
        g.ecc_current = Some(e.currently_enabled);
        g.ecc_pending = Some(e.pending_enabled);
    }
    if let Some((pending, failure)) = remapped_rows(nvml, d) {
        g.remap_pending = Some(pending);
        g.remap_failure = Some(failure);
    }
    g.persistence = d.is_in_persistent_mode().ok();
    g.mig_enabled = d.mig_mode().ok().map(|m| m.current == 1);
}

/// The link between every pair of GPUs (i < j).
fn topology(nvml: &Nvml, count: u32, gpus: &[GpuFacts]) -> Vec<(u32, u32, String)> {
    let mut topology = Vec::new();
    for i in 0..count {
        for j in (i + 1)..count {
            let (Ok(a), Ok(b)) = (nvml.device_by_index(i), nvml.device_by_index(j)) else {
                continue;
            };
            let link = match a.topology_common_ancestor(b) {
                Ok(t) => format!("{t:?}"),
                Err(e) => format!("unknown ({e})"),
            };
            let nv = gpus
                .get(i as usize)
                .and_then(|g| g.nvlinks_active)
                .unwrap_or(0);
            topology.push((
                i,
                j,
                if nv > 0 {
                    format!("NVLink ({nv} active links on GPU{i}); PCIe ancestor {link}")
                } else {
                    format!("PCIe, common ancestor {link}")
                },
            ));
        }
    }
    topology
}

fn sample_f64(v: &nvml_wrapper::enums::device::SampleValue) -> f64 {
    use nvml_wrapper::enums::device::SampleValue::*;
    match v {
        F64(x) => *x,
        U32(x) => f64::from(*x),
        U64(x) => *x as f64,
        I64(x) => *x as f64,
    }
}
