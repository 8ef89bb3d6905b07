//! The checks, bottom-up along the contract chain. Only the lowest broken
//! contract carries information: the report names it first.

use crate::facts::NodeFacts;
use powerlab_core::sample::ClockEventBits;
use serde::{Deserialize, Serialize};

/// Verdict of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The contract holds.
    Pass,
    /// Holds, but worth knowing (recorded; does not block).
    Warn,
    /// Broken: blocks a campaign.
    Fail,
    /// Not checked because a lower contract is broken.
    Skipped,
}

/// One check's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Stable id (`driver`, `device_mask`, …).
    pub id: String,
    /// The contract in words.
    pub contract: String,
    /// The check's verdict.
    pub status: Status,
    /// What was read.
    pub evidence: Vec<String>,
    /// What to do (empty on pass).
    pub fix: String,
}

/// The whole preflight.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HealthReport {
    /// The host the capture was taken on.
    pub host: String,
    /// `idle` or `under_load`.
    pub phase: String,
    /// Every check, in contract order.
    pub checks: Vec<Check>,
    /// Id of the lowest failing check.
    pub lowest_broken: Option<String>,
    /// The facts the checks judged.
    pub facts: NodeFacts,
}

impl HealthReport {
    /// Whether any blocking check failed.
    pub fn failed(&self) -> bool {
        self.lowest_broken.is_some()
    }

    /// The first line of the human report.
    pub fn headline(&self) -> String {
        match self
            .lowest_broken
            .as_deref()
            .and_then(|id| self.checks.iter().find(|c| c.id == id))
        {
            Some(c) => format!(
                "PREFLIGHT FAILED — do not start the campaign: lowest broken contract `{}` ({}): {}",
                c.id,
                c.contract,
                c.evidence.join("; ")
            ),
            None => {
                let warns = self
                    .checks
                    .iter()
                    .filter(|c| c.status == Status::Warn)
                    .count();
                format!(
                    "PREFLIGHT PASSED on {} ({}, {} warnings)",
                    self.host,
                    powerlab_core::words::gpus(self.facts.gpus.len()),
                    warns
                )
            }
        }
    }
}

struct Builder {
    checks: Vec<Check>,
    blocked: bool,
}

impl Builder {
    fn add(&mut self, id: &str, contract: &str, status: Status, evidence: Vec<String>, fix: &str) {
        let status = if self.blocked {
            Status::Skipped
        } else {
            status
        };
        if status == Status::Fail {
            self.blocked = true;
        }
        self.checks.push(Check {
            id: id.into(),
            contract: contract.into(),
            status,
            evidence,
            fix: if status == Status::Pass {
                String::new()
            } else {
                fix.into()
            },
        });
    }

    /// Checks above a broken one still run but are marked skipped for blocking purposes.
    fn first_fail(&self) -> Option<String> {
        self.checks
            .iter()
            .find(|c| c.status == Status::Fail)
            .map(|c| c.id.clone())
    }
}

fn worst(items: &[(Status, String)]) -> (Status, Vec<String>) {
    let s = if items.iter().any(|i| i.0 == Status::Fail) {
        Status::Fail
    } else if items.iter().any(|i| i.0 == Status::Warn) {
        Status::Warn
    } else {
        Status::Pass
    };
    (s, items.iter().map(|i| i.1.clone()).collect())
}

/// Judges the facts. `needs_nccl`: the campaign has an NCCL phase.
pub fn run_checks(f: &NodeFacts, phase: &str, needs_nccl: bool) -> HealthReport {
    let mut b = Builder {
        checks: Vec::new(),
        blocked: false,
    };

    // 1. Kernel driver reachable.
    match &f.nvml {
        Ok(v) => b.add(
            "driver",
            "the kernel driver answers (NVML init)",
            Status::Pass,
            vec![format!("driver {v}, {} GPU(s) seen by NVML", f.gpus.len())],
            "",
        ),
        Err(e) => b.add(
            "driver",
            "the kernel driver answers (NVML init)",
            Status::Fail,
            vec![format!("NVML init failed: {e}")],
            "install or load the NVIDIA driver (nvidia-smi must work); nothing above this can help",
        ),
    }

    // 2. Device mask.
    let mask_contract = "the device mask exposes the GPUs, each ordinal mapped to a UUID";
    match f.cuda_visible_devices.as_deref() {
        Some(v) if v.trim().is_empty() => b.add(
            "device_mask",
            mask_contract,
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
            b.add("device_mask", mask_contract, Status::Pass, ev, "");
        }
    }

    // 3. CUDA init.
    let fabric_evidence: Vec<String> = f
        .gpus
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
        .collect();
    match &f.cuda_init {
        Ok(0) => b.add(
            "cuda_init",
            "the CUDA driver initialises and sees GPUs",
            Status::Fail,
            vec!["cuInit succeeded but CUDA sees no device".into()],
            "check the device mask and the container's device mounts",
        ),
        Ok(n) => b.add(
            "cuda_init",
            "the CUDA driver initialises and sees GPUs",
            Status::Pass,
            vec![format!("cuInit ok, {n} device(s)")],
            "",
        ),
        Err((802, msg)) => {
            let mut ev = vec![format!(
                "CUDA error 802 (system not yet initialized): {msg}"
            )];
            ev.extend(fabric_evidence.clone());
            b.add(
                "cuda_init",
                "the CUDA driver initialises and sees GPUs",
                Status::Fail,
                ev,
                "the GPUs are not registered with the NVSwitch fabric (state In Progress, CliqueId N/A): the host's Fabric Manager must activate the partition. NVML and nvidia-smi look healthy on such a node; CUDA will not start. Ask the provider or use bare metal",
            );
        }
        Err((code, msg)) => b.add(
            "cuda_init",
            "the CUDA driver initialises and sees GPUs",
            Status::Fail,
            vec![format!("CUDA error {code}: {msg}")],
            "read the error: permissions, device nodes, or a driver/kernel mismatch",
        ),
    }

    // 4. CUDA version.
    match f.driver_cuda_version {
        Some(v) if v >= f.bindings_cuda_version => b.add(
            "cuda_version",
            "the driver supports the CUDA version the tool is built for",
            Status::Pass,
            vec![format!(
                "driver supports CUDA {}.{}, tool built for {}.{}",
                v / 1000,
                (v % 1000) / 10,
                f.bindings_cuda_version / 1000,
                (f.bindings_cuda_version % 1000) / 10
            )],
            "",
        ),
        Some(v) => b.add(
            "cuda_version",
            "the driver supports the CUDA version the tool is built for",
            Status::Fail,
            vec![format!(
                "driver supports CUDA {}.{}, tool needs {}.{}",
                v / 1000,
                (v % 1000) / 10,
                f.bindings_cuda_version / 1000,
                (f.bindings_cuda_version % 1000) / 10
            )],
            "upgrade the driver, or deploy the cuda-compat forward-compatibility package",
        ),
        None => b.add(
            "cuda_version",
            "the driver supports the CUDA version the tool is built for",
            Status::Warn,
            vec!["driver CUDA version unknown".into()],
            "check nvidia-smi's header",
        ),
    }

    // 5. Libraries.
    let mut items = Vec::new();
    for l in &f.libs {
        let needed = l.name != "libnccl" || needs_nccl;
        match (&l.found, needed) {
            (Some(file), _) => items.push((Status::Pass, format!("{} loads ({file})", l.name))),
            (None, true) => items.push((
                Status::Fail,
                format!(
                    "{} missing: {}",
                    l.name,
                    l.error.clone().unwrap_or_default()
                ),
            )),
            (None, false) => items.push((
                Status::Warn,
                format!(
                    "{} missing (the campaign has no NCCL phase): {}",
                    l.name,
                    l.error.clone().unwrap_or_default()
                ),
            )),
        }
    }
    let (s, ev) = worst(&items);
    b.add("libraries", "NVRTC, cuBLAS(Lt) and NCCL load", s, ev, "install the missing library and put it on LD_LIBRARY_PATH (see the evidence for the names searched)");

    // 6. NVML power readable on every GPU.
    let items: Vec<(Status, String)> = f
        .gpus
        .iter()
        .map(|g| match (g.instant_power_w, g.buffered_samples) {
            (Some(w), Some(n)) if n > 0 => (
                Status::Pass,
                format!("GPU {}: instant {w:.1} W, {n} buffered samples", g.index),
            ),
            _ => (
                Status::Fail,
                format!(
                    "GPU {}: power not readable (instant: {}, buffered: {})",
                    g.index,
                    g.instant_power_error.clone().unwrap_or_else(|| g
                        .instant_power_w
                        .map(|w| format!("{w:.1} W"))
                        .unwrap_or_else(|| "none".into())),
                    g.buffered_error.clone().unwrap_or_else(|| g
                        .buffered_samples
                        .map(|n| format!("{n} samples"))
                        .unwrap_or_else(|| "none".into()))
                ),
            ),
        })
        .collect();
    let (s, ev) = worst(&items);
    b.add("nvml_power", "NVML power is readable on every GPU (instant field and buffered samples)", s, ev, "a GPU whose power cannot be read cannot be measured: check the driver version, or exclude that GPU");

    // 7. Fabric.
    let items: Vec<(Status, String)> = f
        .gpus
        .iter()
        .map(|g| match &g.fabric {
            None => (
                Status::Pass,
                format!("GPU {}: fabric info not supported (no NVSwitch)", g.index),
            ),
            Some(fb) if fb.state == "not_supported" => (
                Status::Pass,
                format!("GPU {}: fabric not supported (no NVSwitch)", g.index),
            ),
            Some(fb)
                if fb.state == "completed" && fb.status == "success" && fb.clique_id.is_some() =>
            {
                (
                    Status::Pass,
                    format!(
                        "GPU {}: fabric completed, clique id {}",
                        g.index,
                        fb.clique_id.unwrap_or(0)
                    ),
                )
            }
            Some(fb) => (
                Status::Fail,
                format!(
                    "GPU {}: fabric state {}, status {}, clique id {}",
                    g.index,
                    fb.state,
                    fb.status,
                    fb.clique_id
                        .map(|c| c.to_string())
                        .unwrap_or_else(|| "N/A".into())
                ),
            ),
        })
        .collect();
    let (s, ev) = worst(&items);
    b.add("fabric", "every NVSwitch-attached GPU is registered with the fabric (state Completed, a clique id)", s, ev, "wait for the Fabric Manager, or ask the provider to activate the partition; CUDA fails with 802 until then");

    // 8. Foreign processes.
    let procs: Vec<String> = f
        .gpus
        .iter()
        .flat_map(|g| {
            g.processes.iter().map(move |p| {
                format!(
                    "GPU {}: pid {} ({}) holds {}",
                    g.index,
                    p.pid,
                    p.name.clone().unwrap_or_else(|| "?".into()),
                    p.used_bytes
                        .map(|b| format!("{} MiB", b >> 20))
                        .unwrap_or_else(|| "unknown memory".into())
                )
            })
        })
        .collect();
    if procs.is_empty() {
        let mut evidence = vec![if f.own_processes.is_empty() {
            "no compute processes".to_string()
        } else {
            "no foreign compute processes".to_string()
        }];
        evidence.extend(f.own_processes.iter().cloned());
        b.add(
            "foreign_processes",
            "no other process holds a GPU",
            Status::Pass,
            evidence,
            "",
        );
    } else {
        let mut evidence = procs;
        evidence.extend(f.own_processes.iter().cloned());
        b.add("foreign_processes", "no other process holds a GPU", Status::Fail, evidence, "find the owner before acting (nothing is killed by this tool); another process distorts every power number");
    }

    // 9. Clock-event reasons.
    let items: Vec<(Status, String)> = f
        .gpus
        .iter()
        .map(|g| {
            let bits = ClockEventBits(g.clock_event_bits.unwrap_or(0));
            let names = bits.names().join(", ");
            if bits.contains(ClockEventBits::HW_THERMAL_SLOWDOWN) || bits.contains(ClockEventBits::HW_POWER_BRAKE_SLOWDOWN) || bits.contains(ClockEventBits::HW_SLOWDOWN) {
                (Status::Fail, format!("GPU {}: 0x{:x} ({names}): a hardware slowdown is asserted — facility problem", g.index, bits.0))
            } else if bits.contains(ClockEventBits::SW_POWER_CAP) && phase == "idle" {
                (Status::Warn, format!("GPU {}: 0x{:x} ({names}): at the power cap while idle", g.index, bits.0))
            } else {
                (Status::Pass, format!("GPU {}: 0x{:x} ({})", g.index, bits.0, if names.is_empty() { "none".into() } else { names }))
            }
        })
        .collect();
    let (s, ev) = worst(&items);
    b.add(
        "clock_events",
        "no hardware slowdown (thermal or power brake) is asserted",
        s,
        ev,
        "HW thermal slowdown or HW power brake is a facility problem: escalate before measuring",
    );

    // 10. Power limit.
    let items: Vec<(Status, String)> = f
        .gpus
        .iter()
        .map(|g| match (g.enforced_limit_w, g.default_limit_w) {
            (Some(e), Some(d)) if e + 0.5 < d => (
                Status::Fail,
                format!(
                    "GPU {}: enforced limit {e:.0} W below the default {d:.0} W",
                    g.index
                ),
            ),
            (Some(e), Some(d)) => (
                Status::Pass,
                format!("GPU {}: enforced {e:.0} W = default {d:.0} W", g.index),
            ),
            _ => (
                Status::Warn,
                format!("GPU {}: power limits not readable", g.index),
            ),
        })
        .collect();
    let (s, ev) = worst(&items);
    b.add("power_limit", "the enforced power limit is the default", s, ev, "a management agent, provider policy or stale nvidia-smi -pl lowered the ceiling: restore it (this tool never changes it) or record it as the campaign's limit");

    // 11. ECC and row remapping.
    let ecc: Vec<Option<bool>> = f.gpus.iter().map(|g| g.ecc_current).collect();
    let majority_on = ecc.iter().filter(|e| **e == Some(true)).count() * 2 >= ecc.len();
    let items: Vec<(Status, String)> = f
        .gpus
        .iter()
        .map(|g| {
            if g.remap_failure == Some(true) {
                (Status::Fail, format!("GPU {}: row-remapping failure occurred: the card has exhausted its spare rows", g.index))
            } else if g.ecc_current != Some(majority_on) && g.ecc_current.is_some() {
                (Status::Fail, format!("GPU {}: ECC {} while the other GPUs have it {}: results are not comparable", g.index, on_off(g.ecc_current), on_off(Some(majority_on))))
            } else if g.ecc_current == Some(false) {
                (Status::Warn, format!("GPU {}: ECC off", g.index))
            } else if g.remap_pending == Some(true) {
                (Status::Warn, format!("GPU {}: row remap pending (takes effect at reset)", g.index))
            } else {
                (Status::Pass, format!("GPU {}: ECC {}, no remap failure", g.index, on_off(g.ecc_current)))
            }
        })
        .collect();
    let (s, ev) = worst(&items);
    b.add("ecc", "ECC is the same on every GPU and no row-remapping failure", s, ev, "rebaseline: do not compare or sum GPUs with different ECC modes; replace a card with a remapping failure");

    // 12. Persistence and MIG.
    let items: Vec<(Status, String)> = f
        .gpus
        .iter()
        .map(|g| {
            if g.mig_enabled == Some(true) {
                (
                    Status::Fail,
                    format!(
                        "GPU {}: MIG enabled: the virus needs the whole GPU",
                        g.index
                    ),
                )
            } else if g.persistence == Some(false) {
                (
                    Status::Warn,
                    format!(
                        "GPU {}: persistence mode off (each process pays driver initialisation)",
                        g.index
                    ),
                )
            } else {
                (
                    Status::Pass,
                    format!(
                        "GPU {}: MIG off, persistence {}",
                        g.index,
                        on_off(g.persistence)
                    ),
                )
            }
        })
        .collect();
    let (s, ev) = worst(&items);
    b.add(
        "mig_persistence",
        "MIG off (whole GPUs); persistence on",
        s,
        ev,
        "ask the node owner to disable MIG; this tool never changes it",
    );

    // 13. Topology.
    let ev: Vec<String> = if f.topology.is_empty() {
        vec!["single GPU".into()]
    } else {
        f.topology
            .iter()
            .map(|(i, j, l)| format!("GPU{i}–GPU{j}: {l}"))
            .collect()
    };
    b.add(
        "topology",
        "the GPU-to-GPU links are recorded",
        Status::Pass,
        ev,
        "",
    );

    // 14. Clocks and temperatures.
    let items: Vec<(Status, String)> = f
        .gpus
        .iter()
        .map(|g| {
            let hot = matches!((g.temp_c, g.temp_slowdown_c), (Some(t), Some(s)) if t + 10 >= s);
            let text = format!(
                "GPU {}: SM {} / {} MHz, memory {} MHz, {} °C, {} W",
                g.index,
                opt(g.sm_clock_mhz),
                opt(g.sm_clock_max_mhz),
                opt(g.mem_clock_mhz),
                opt(g.temp_c),
                g.power_avg_w
                    .map(|w| format!("{w:.0}"))
                    .unwrap_or_else(|| "?".into())
            );
            (if hot { Status::Warn } else { Status::Pass }, text)
        })
        .collect();
    let (s, ev) = worst(&items);
    b.add(
        "clocks_temperatures",
        "clocks and temperatures recorded; no GPU within 10 °C of slowdown",
        s,
        ev,
        "let the GPU cool or check the airflow before a campaign",
    );

    let lowest_broken = b.first_fail();
    HealthReport {
        host: f.host.clone(),
        phase: phase.into(),
        checks: b.checks,
        lowest_broken,
        facts: f.clone(),
    }
}

fn on_off(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "on",
        Some(false) => "off",
        None => "unknown",
    }
}

fn opt(v: Option<u32>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "?".into())
}
