//! The software stack's contracts: kernel driver, device mask, CUDA init,
//! CUDA version and the libraries the load needs.

use super::{Scope, Verdict, worst};
use crate::checks::Status;
use crate::facts::NodeFacts;

/// 1. The kernel driver answers (NVML init).
pub(super) fn driver(f: &NodeFacts, _: &Scope<'_>) -> Verdict {
    match &f.nvml {
        Ok(v) => Verdict::new(
            Status::Pass,
            vec![format!("driver {v}, {} GPU(s) seen by NVML", f.gpus.len())],
            "",
        ),
        Err(e) => Verdict::new(
            Status::Fail,
            vec![format!("NVML init failed: {e}")],
            "install or load the NVIDIA driver (nvidia-smi must work); nothing above this can help",
        ),
    }
}

/// 2. The device mask exposes the GPUs, each ordinal mapped to a UUID.
pub(super) fn device_mask(f: &NodeFacts, _: &Scope<'_>) -> Verdict {
    match f.cuda_visible_devices.as_deref() {
        Some(v) if v.trim().is_empty() => Verdict::new(
            Status::Fail,
            vec!["CUDA_VISIBLE_DEVICES is set but empty: it hides every GPU".into()],
            "unset CUDA_VISIBLE_DEVICES or list the GPUs (fix the launcher or scheduler)",
        ),
        mask => {
            let mut ev = vec![match mask {
                None => "CUDA_VISIBLE_DEVICES unset: every GPU visible".to_string(),
                Some(v) => format!("CUDA_VISIBLE_DEVICES={v}"),
            }];
            ev.extend(
                f.cuda_uuids
                    .iter()
                    .enumerate()
                    .map(|(i, u)| format!("cuda:{i} = {u}")),
            );
            Verdict::new(Status::Pass, ev, "")
        }
    }
}

/// The fabric state of every GPU that reports one (evidence for a CUDA 802).
fn fabric_evidence(f: &NodeFacts) -> Vec<String> {
    f.gpus
        .iter()
        .filter_map(|g| {
            g.fabric.as_ref().map(|fb| {
                format!(
                    "GPU {} fabric state {}, status {}, clique id {}",
                    g.index,
                    fb.state,
                    fb.status,
                    fb.clique_id
                        .map(|c| c.to_string())
                        .unwrap_or_else(|| "N/A".into())
                )
            })
        })
        .collect()
}

/// 3. The CUDA driver initialises and sees GPUs.
pub(super) fn cuda_init(f: &NodeFacts, _: &Scope<'_>) -> Verdict {
    match &f.cuda_init {
        Ok(0) => Verdict::new(
            Status::Fail,
            vec!["cuInit succeeded but CUDA sees no device".into()],
            "check the device mask and the container's device mounts",
        ),
        Ok(n) => Verdict::new(Status::Pass, vec![format!("cuInit ok, {n} device(s)")], ""),
        Err((802, msg)) => {
            let mut ev = vec![format!(
                "CUDA error 802 (system not yet initialized): {msg}"
            )];
            ev.extend(fabric_evidence(f));
            Verdict::new(
                Status::Fail,
                ev,
                "the GPUs are not registered with the NVSwitch fabric (state In Progress, CliqueId N/A): the host's Fabric Manager must activate the partition. NVML and nvidia-smi look healthy on such a node; CUDA will not start. Ask the provider or use bare metal",
            )
        }
        Err((code, msg)) => Verdict::new(
            Status::Fail,
            vec![format!("CUDA error {code}: {msg}")],
            "read the error: permissions, device nodes, or a driver/kernel mismatch",
        ),
    }
}

/// 4. The driver supports the CUDA version the tool is built for.
pub(super) fn cuda_version(f: &NodeFacts, _: &Scope<'_>) -> Verdict {
    let version = |v: i32| format!("{}.{}", v / 1000, (v % 1000) / 10);
    match f.driver_cuda_version {
        Some(v) if v >= f.bindings_cuda_version => Verdict::new(
            Status::Pass,
            vec![format!(
                "driver supports CUDA {}, tool built for {}",
                version(v),
                version(f.bindings_cuda_version)
            )],
            "",
        ),
        Some(v) => Verdict::new(
            Status::Fail,
            vec![format!(
                "driver supports CUDA {}, tool needs {}",
                version(v),
                version(f.bindings_cuda_version)
            )],
            "upgrade the driver, or deploy the cuda-compat forward-compatibility package",
        ),
        None => Verdict::new(
            Status::Warn,
            vec!["driver CUDA version unknown".into()],
            "check nvidia-smi's header",
        ),
    }
}

/// 5. NVRTC, cuBLAS(Lt) and NCCL load (NCCL only matters with an NCCL phase).
pub(super) fn libraries(f: &NodeFacts, scope: &Scope<'_>) -> Verdict {
    let items: Vec<(Status, String)> = f
        .libs
        .iter()
        .map(|l| {
            let needed = l.name != "libnccl" || scope.needs_nccl;
            match (&l.found, needed) {
                (Some(file), _) => (Status::Pass, format!("{} loads ({file})", l.name)),
                (None, true) => (
                    Status::Fail,
                    format!(
                        "{} missing: {}",
                        l.name,
                        l.error.clone().unwrap_or_default()
                    ),
                ),
                (None, false) => (
                    Status::Warn,
                    format!(
                        "{} missing (the campaign has no NCCL phase): {}",
                        l.name,
                        l.error.clone().unwrap_or_default()
                    ),
                ),
            }
        })
        .collect();
    worst(
        &items,
        "install the missing library and put it on LD_LIBRARY_PATH (see the evidence for the names searched)",
    )
}
