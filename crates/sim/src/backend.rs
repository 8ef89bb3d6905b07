//! Opening a simulated node.

use crate::device::{DeviceSetup, SimDevice, Truth};
use crate::faults::FaultPlan;
use crate::gpu::{SimGpu, SimPowerSource, lock};
use crate::profile::Profile;
use powerlab_core::GpuSelector;
use powerlab_core::RunClock;
use powerlab_core::hw::{
    Backend, BackendInfo, Capability, Gpu, GpuIdentity, HwError, NodeHandles, PowerSource,
};
use powerlab_core::units::ms_to_ns_trunc;
use std::sync::{Arc, Mutex};

/// How to build the simulated node.
#[derive(Debug, Clone)]
pub struct SimOptions {
    /// GPU model.
    pub profile: Profile,
    /// GPUs on the node.
    pub gpu_count: usize,
    /// Seed for every random choice.
    pub seed: u64,
    /// Injected faults.
    pub faults: FaultPlan,
    /// Physics step, µs (250 resolves a 5 ms duty cycle; 1000 is fine for long runs).
    pub step_us: i64,
    /// Keep the true waveform (1 ms resolution) in memory.
    pub record_truth: bool,
    /// Node id written on every raw row.
    pub node_id: String,
    /// Which GPUs the campaign selects.
    pub selector: GpuSelector,
}

impl SimOptions {
    /// Defaults: `gpu_count` GPUs of `profile`, seed 1, no faults.
    pub fn new(profile: Profile, gpu_count: usize) -> Self {
        SimOptions {
            profile,
            gpu_count,
            seed: 1,
            faults: FaultPlan::default(),
            step_us: 250,
            record_truth: false,
            node_id: "sim-node-0".into(),
            selector: GpuSelector::All,
        }
    }
}

/// The simulated node backend.
pub struct SimBackend {
    opts: SimOptions,
    clock: RunClock,
    devices: Vec<Arc<Mutex<SimDevice>>>,
}

/// A deterministic UUID for simulated GPU `i`.
pub fn sim_uuid(seed: u64, i: usize) -> String {
    let h = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(i as u64 * 0x1000_0001);
    format!(
        "GPU-51m{:05x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        h & 0xfffff,
        (h >> 20) & 0xffff,
        i & 0xfff,
        (h >> 36) & 0xfff,
        (h >> 8) & 0xffff_ffff_ffff
    )
}

impl SimBackend {
    /// A simulated node on the run clock `clock`.
    pub fn new(opts: SimOptions, clock: RunClock) -> Self {
        SimBackend {
            opts,
            clock,
            devices: Vec::new(),
        }
    }

    /// The true waveforms recorded so far (empty unless `record_truth`).
    pub fn truths(&self) -> Vec<Truth> {
        self.devices
            .iter()
            .map(|d| lock(d).truth().cloned().unwrap_or_default())
            .collect()
    }

    /// Every workload process each GPU ran (a lifecycle rung's), by GPU.
    pub fn jobs(&self) -> Vec<Vec<crate::device::job::JobTruth>> {
        self.devices
            .iter()
            .map(|d| lock(d).jobs().to_vec())
            .collect()
    }

    /// Buffered samples lost per GPU because nobody read them in time.
    pub fn buffered_lost(&self) -> Vec<u64> {
        self.devices.iter().map(|d| lock(d).buffered_lost).collect()
    }

    fn select(&self) -> Result<Vec<usize>, HwError> {
        let uuids: Vec<String> = (0..self.opts.gpu_count)
            .map(|i| sim_uuid(self.opts.seed, i))
            .collect();
        self.opts
            .selector
            .resolve(&uuids, "the simulated node")
            .map_err(HwError::Other)
    }
}

impl Backend for SimBackend {
    fn open(&mut self) -> Result<NodeHandles, HwError> {
        let selected = self.select()?;
        let start = self.clock.now_ns();
        let mut gpus: Vec<Box<dyn Gpu>> = Vec::new();
        let mut sources: Vec<Box<dyn PowerSource>> = Vec::new();
        let mut ids = Vec::new();
        for (run_idx, &phys) in selected.iter().enumerate() {
            let faults = self.opts.faults.gpu(run_idx);
            let cold_start_ns = faults
                .cold_start_ns
                .unwrap_or(ms_to_ns_trunc(self.opts.profile.cold_start_ms));
            let dev = SimDevice::new(DeviceSetup {
                profile: self.opts.profile.clone(),
                index: run_idx,
                faults,
                run_start_ns: start,
                seed: self.opts.seed.wrapping_add(phys as u64),
                node_seed: self.opts.seed,
                step_us: self.opts.step_us,
                record_truth: self.opts.record_truth,
            });
            let id = GpuIdentity {
                key: format!("gpu{run_idx}"),
                uuid: sim_uuid(self.opts.seed, phys),
                name: self.opts.profile.device_name.clone(),
                nvml_index: phys as u32,
                power_limit_w: dev.power_limit_w(),
                power_smoothing: self.opts.faults.gpu(run_idx).power_smoothing_state(),
            };
            let dev = Arc::new(Mutex::new(dev));
            self.devices.push(dev.clone());
            gpus.push(Box::new(SimGpu::new(
                dev.clone(),
                id.clone(),
                self.clock,
                cold_start_ns,
                self.opts.seed ^ (phys as u64 + 77),
                (run_idx, selected.len()),
            )));
            sources.push(Box::new(SimPowerSource {
                dev,
                id: id.clone(),
            }));
            ids.push(id);
        }
        let nccl = if self.opts.faults.no_nccl {
            Capability::Absent(HwError::Missing {
                what: "NCCL (libnccl)".into(),
                detail: "searched libnccl.so, libnccl.so.2 on the simulated node: not installed (--sim-fault node:no_nccl)".into(),
                fix: "install NCCL (e.g. apt install libnccl2, or the nvidia-nccl-cu13 wheel) and put it on LD_LIBRARY_PATH, or remove the nccl phase".into(),
            })
        } else {
            Capability::Present("simulated NCCL 2.28".into())
        };
        Ok(NodeHandles {
            info: BackendInfo {
                backend: "sim".into(),
                node_id: self.opts.node_id.clone(),
                host: self.opts.node_id.clone(),
                gpus: ids,
                driver: format!(
                    "simulated {} node, {}, seed {}, step {} µs",
                    self.opts.profile.name,
                    powerlab_core::words::gpus(self.opts.gpu_count),
                    self.opts.seed,
                    self.opts.step_us
                ),
                nccl,
            },
            gpus,
            sources,
            meters: Vec::new(),
        })
    }
}
