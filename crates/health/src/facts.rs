//! What a probe reads off a node: plain, serializable data.

use powerlab_core::smoothing_state::{NVML_NOT_SUPPORTED, PowerSmoothing};
use serde::{Deserialize, Serialize};

/// NVSwitch fabric state of one GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FabricFacts {
    /// `not_supported`, `not_started`, `in_progress`, `completed`.
    pub state: String,
    /// NVML status of the registration (`success` or an error name).
    pub status: String,
    /// Clique id (None where N/A).
    pub clique_id: Option<u32>,
}

/// One process holding a GPU context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessFacts {
    /// PID (0 when hidden in another namespace).
    pub pid: u32,
    /// Memory in use, bytes (None when not reported).
    pub used_bytes: Option<u64>,
    /// Process name, if readable.
    pub name: Option<String>,
}

/// One GPU as NVML sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct GpuFacts {
    /// NVML index.
    pub index: u32,
    /// The GPU's UUID (its identity between CUDA and NVML).
    pub uuid: String,
    /// The device name NVML reports.
    pub name: String,
    /// Instant power field (186), W, or the error.
    pub instant_power_w: Option<f64>,
    /// Error reading the instant field.
    pub instant_power_error: Option<String>,
    /// Buffered power samples available.
    pub buffered_samples: Option<usize>,
    /// Error reading buffered samples.
    pub buffered_error: Option<String>,
    /// Fabric state, None where the call is unsupported.
    pub fabric: Option<FabricFacts>,
    /// Compute processes.
    pub processes: Vec<ProcessFacts>,
    /// Clock-event-reason bits (raw).
    pub clock_event_bits: Option<u64>,
    /// Enforced power limit, W.
    pub enforced_limit_w: Option<f64>,
    /// Default power limit, W.
    pub default_limit_w: Option<f64>,
    /// ECC enabled now.
    pub ecc_current: Option<bool>,
    /// ECC enabled after reboot.
    pub ecc_pending: Option<bool>,
    /// Row remapping: pending remaps.
    pub remap_pending: Option<bool>,
    /// Row remapping: failure occurred.
    pub remap_failure: Option<bool>,
    /// Persistence mode.
    pub persistence: Option<bool>,
    /// MIG mode enabled.
    pub mig_enabled: Option<bool>,
    /// SM clock now / max, MHz.
    pub sm_clock_mhz: Option<u32>,
    /// Max SM clock, MHz.
    pub sm_clock_max_mhz: Option<u32>,
    /// Memory clock now, MHz.
    pub mem_clock_mhz: Option<u32>,
    /// GPU temperature, °C.
    pub temp_c: Option<u32>,
    /// Slowdown threshold, °C.
    pub temp_slowdown_c: Option<u32>,
    /// Active NVLinks.
    pub nvlinks_active: Option<u32>,
    /// Current power draw (1 s average), W — for the idle/load comparison only.
    pub power_avg_w: Option<f64>,
    /// Power smoothing (Blackwell), read only; `not_recorded` in captures
    /// written before it was read.
    #[serde(default)]
    pub power_smoothing: PowerSmoothing,
}

/// A library and what loaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LibFacts {
    /// `libnvrtc`, …
    pub name: String,
    /// The loadable file name, or None.
    pub found: Option<String>,
    /// Why not, when absent.
    pub error: Option<String>,
}

/// Everything a probe read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeFacts {
    /// Host name.
    pub host: String,
    /// NVML init result: Ok(driver version) or the error.
    pub nvml: Result<String, String>,
    /// `CUDA_VISIBLE_DEVICES` (None: unset).
    pub cuda_visible_devices: Option<String>,
    /// CUDA init: Ok(device count) or Err((code, message)).
    pub cuda_init: Result<usize, (i32, String)>,
    /// UUIDs of the CUDA-visible devices, in ordinal order.
    pub cuda_uuids: Vec<String>,
    /// CUDA version the driver supports (e.g. 13000).
    pub driver_cuda_version: Option<i32>,
    /// CUDA version the tool's bindings need.
    pub bindings_cuda_version: i32,
    /// The CUDA, NVML and NCCL libraries found (or not) on the loader path.
    pub libs: Vec<LibFacts>,
    /// GPUs by NVML index.
    pub gpus: Vec<GpuFacts>,
    /// Link between every pair (i, j, description).
    pub topology: Vec<(u32, u32, String)>,
    /// GPU processes that belong to this run (the other ranks of its rack
    /// on this host), set aside from the foreign-process check and named
    /// in its evidence.
    #[serde(default)]
    pub own_processes: Vec<String>,
}

impl NodeFacts {
    /// Sets aside the GPU processes with these pids (`why` says whose they
    /// are, e.g. "rank 1 of this rack"): they are not foreign to this run.
    pub fn set_aside_processes(&mut self, pids: &[(u32, String)]) {
        for g in &mut self.gpus {
            let index = g.index;
            g.processes
                .retain(|p| match pids.iter().find(|(pid, _)| *pid == p.pid) {
                    Some((pid, why)) => {
                        self.own_processes.push(format!(
                            "GPU {index}: pid {pid} ({why}) is part of this run"
                        ));
                        false
                    }
                    None => true,
                });
        }
    }

    /// A healthy node of `n` H200s as measured on the lent machines
    /// (2026-11-29): the baseline the tests break one contract at a time.
    pub fn healthy_h200(n: u32) -> NodeFacts {
        let gpus: Vec<GpuFacts> = (0..n)
            .map(|i| GpuFacts {
                index: i,
                uuid: format!("GPU-0000000{i}-aaaa-bbbb-cccc-dddddddddddd"),
                name: "NVIDIA H200".into(),
                instant_power_w: Some(95.0),
                buffered_samples: Some(119),
                fabric: Some(FabricFacts {
                    state: "completed".into(),
                    status: "success".into(),
                    clique_id: Some(0),
                }),
                clock_event_bits: Some(0x1),
                enforced_limit_w: Some(700.0),
                default_limit_w: Some(700.0),
                ecc_current: Some(true),
                ecc_pending: Some(true),
                remap_pending: Some(false),
                remap_failure: Some(false),
                persistence: Some(true),
                mig_enabled: Some(false),
                sm_clock_mhz: Some(345),
                sm_clock_max_mhz: Some(1980),
                mem_clock_mhz: Some(3201),
                temp_c: Some(32),
                temp_slowdown_c: Some(87),
                nvlinks_active: Some(18),
                power_avg_w: Some(95.0),
                power_smoothing: PowerSmoothing::NotSupported {
                    code: NVML_NOT_SUPPORTED,
                },
                ..Default::default()
            })
            .collect();
        let mut topology = Vec::new();
        for i in 0..n {
            for j in (i + 1)..n {
                topology.push((i, j, "NV18".to_string()));
            }
        }
        NodeFacts {
            host: "h200-test".into(),
            nvml: Ok("580.159.04".into()),
            cuda_visible_devices: None,
            cuda_init: Ok(n as usize),
            cuda_uuids: gpus.iter().map(|g| g.uuid.clone()).collect(),
            driver_cuda_version: Some(13000),
            bindings_cuda_version: 13000,
            libs: ["libcuda", "libnvrtc", "libcublas", "libcublasLt", "libnccl"]
                .iter()
                .map(|l| LibFacts {
                    name: l.to_string(),
                    found: Some(format!("{l}.so")),
                    error: None,
                })
                .collect(),
            gpus,
            topology,
            own_processes: Vec::new(),
        }
    }
}

impl Default for crate::facts::FabricFacts {
    fn default() -> Self {
        FabricFacts {
            state: "not_supported".into(),
            status: "not_supported".into(),
            clique_id: None,
        }
    }
}
