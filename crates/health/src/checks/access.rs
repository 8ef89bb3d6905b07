//! The contracts that let a GPU be measured alone: its power is readable,
//! it is registered with the fabric, and no other process holds it.

use super::{Scope, Verdict, worst};
use crate::checks::Status;
use crate::facts::{GpuFacts, NodeFacts};

/// 6. NVML power is readable on every GPU (instant field and buffered samples).
pub(super) fn nvml_power(f: &NodeFacts, _: &Scope<'_>) -> Verdict {
    let items: Vec<(Status, String)> = f
        .gpus
        .iter()
        .map(|g| match (g.instant_power_w, g.buffered_samples) {
            (Some(w), Some(n)) if n > 0 => (
                Status::Pass,
                format!("GPU {}: instant {w:.1} W, {n} buffered samples", g.index),
            ),
            _ => (Status::Fail, power_unreadable(g)),
        })
        .collect();
    worst(
        &items,
        "a GPU whose power cannot be read cannot be measured: check the driver version, or exclude that GPU",
    )
}

/// Why a GPU's power is not readable, in words.
fn power_unreadable(g: &GpuFacts) -> String {
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
    )
}

/// 7. Every NVSwitch-attached GPU is registered with the fabric.
pub(super) fn fabric(f: &NodeFacts, _: &Scope<'_>) -> Verdict {
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
    worst(
        &items,
        "wait for the Fabric Manager, or ask the provider to activate the partition; CUDA fails with 802 until then",
    )
}

/// 8. No other process holds a GPU (this run's own processes are set aside).
pub(super) fn foreign_processes(f: &NodeFacts, _: &Scope<'_>) -> Verdict {
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
    // A pass carries no fix, not even when a broken contract below marks it skipped.
    let (status, mut evidence, fix) = if procs.is_empty() {
        let none = if f.own_processes.is_empty() {
            "no compute processes"
        } else {
            "no foreign compute processes"
        };
        (Status::Pass, vec![none.to_string()], "")
    } else {
        (
            Status::Fail,
            procs,
            "find the owner before acting (nothing is killed by this tool); another process distorts every power number",
        )
    };
    evidence.extend(f.own_processes.iter().cloned());
    Verdict::new(status, evidence, fix)
}
