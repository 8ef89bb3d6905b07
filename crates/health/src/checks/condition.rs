//! The contracts on each GPU's condition: no hardware slowdown, the default
//! power limit, matching ECC, whole GPUs, recorded links, clocks and
//! temperatures, and the power smoothing recorded.

use super::{Scope, Verdict, on_off, opt, worst};
use crate::checks::Status;
use crate::facts::{GpuFacts, NodeFacts};
use powerlab_core::sample::ClockEventBits;
use powerlab_core::smoothing_state::PowerSmoothing;

/// 9. No hardware slowdown (thermal or power brake) is asserted.
pub(super) fn clock_events(f: &NodeFacts, scope: &Scope<'_>) -> Verdict {
    let items: Vec<(Status, String)> = f
        .gpus
        .iter()
        .map(|g| {
            let bits = ClockEventBits(g.clock_event_bits.unwrap_or(0));
            let names = bits.names().join(", ");
            if bits.contains(ClockEventBits::HW_THERMAL_SLOWDOWN) || bits.contains(ClockEventBits::HW_POWER_BRAKE_SLOWDOWN) || bits.contains(ClockEventBits::HW_SLOWDOWN) {
                (Status::Fail, format!("GPU {}: 0x{:x} ({names}): a hardware slowdown is asserted — facility problem", g.index, bits.0))
            } else if bits.contains(ClockEventBits::SW_POWER_CAP) && scope.phase == "idle" {
                (Status::Warn, format!("GPU {}: 0x{:x} ({names}): at the power cap while idle", g.index, bits.0))
            } else {
                (Status::Pass, format!("GPU {}: 0x{:x} ({})", g.index, bits.0, if names.is_empty() { "none".into() } else { names }))
            }
        })
        .collect();
    worst(
        &items,
        "HW thermal slowdown or HW power brake is a facility problem: escalate before measuring",
    )
}

/// 10. The enforced power limit is the default.
pub(super) fn power_limit(f: &NodeFacts, _: &Scope<'_>) -> Verdict {
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
    worst(
        &items,
        "a management agent, provider policy or stale nvidia-smi -pl lowered the ceiling: restore it (this tool never changes it) or record it as the campaign's limit",
    )
}

/// 11. ECC is the same on every GPU and no row-remapping failure.
pub(super) fn ecc(f: &NodeFacts, _: &Scope<'_>) -> Verdict {
    let ecc: Vec<Option<bool>> = f.gpus.iter().map(|g| g.ecc_current).collect();
    let majority_on = ecc.iter().filter(|e| **e == Some(true)).count() * 2 >= ecc.len();
    let items: Vec<(Status, String)> = f.gpus.iter().map(|g| ecc_item(g, majority_on)).collect();
    worst(
        &items,
        "rebaseline: do not compare or sum GPUs with different ECC modes; replace a card with a remapping failure",
    )
}

/// One GPU's ECC and row-remapping verdict, against the node's majority ECC mode.
fn ecc_item(g: &GpuFacts, majority_on: bool) -> (Status, String) {
    if g.remap_failure == Some(true) {
        (
            Status::Fail,
            format!(
                "GPU {}: row-remapping failure occurred: the card has exhausted its spare rows",
                g.index
            ),
        )
    } else if g.ecc_current != Some(majority_on) && g.ecc_current.is_some() {
        (
            Status::Fail,
            format!(
                "GPU {}: ECC {} while the other GPUs have it {}: results are not comparable",
                g.index,
                on_off(g.ecc_current),
                on_off(Some(majority_on))
            ),
        )
    } else if g.ecc_current == Some(false) {
        (Status::Warn, format!("GPU {}: ECC off", g.index))
    } else if g.remap_pending == Some(true) {
        (
            Status::Warn,
            format!("GPU {}: row remap pending (takes effect at reset)", g.index),
        )
    } else {
        (
            Status::Pass,
            format!(
                "GPU {}: ECC {}, no remap failure",
                g.index,
                on_off(g.ecc_current)
            ),
        )
    }
}

/// 12. MIG off (whole GPUs); persistence on.
pub(super) fn mig_persistence(f: &NodeFacts, _: &Scope<'_>) -> Verdict {
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
    worst(
        &items,
        "ask the node owner to disable MIG; this tool never changes it",
    )
}

/// 13. The GPU-to-GPU links are recorded.
pub(super) fn topology(f: &NodeFacts, _: &Scope<'_>) -> Verdict {
    let ev: Vec<String> = if f.topology.is_empty() {
        vec!["single GPU".into()]
    } else {
        f.topology
            .iter()
            .map(|(i, j, l)| format!("GPU{i}–GPU{j}: {l}"))
            .collect()
    };
    Verdict::new(Status::Pass, ev, "")
}

/// 14. Clocks and temperatures recorded; no GPU within 10 °C of slowdown.
pub(super) fn clocks_temperatures(f: &NodeFacts, _: &Scope<'_>) -> Verdict {
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
    worst(
        &items,
        "let the GPU cool or check the airflow before a campaign",
    )
}

/// Check 15: power smoothing recorded (read only, never set). It is
/// informational: it warns where smoothing is on or could not be read.
pub(super) fn power_smoothing(f: &NodeFacts, _: &Scope<'_>) -> Verdict {
    let items: Vec<(Status, String)> = f
        .gpus
        .iter()
        .map(|g| {
            let s = &g.power_smoothing;
            let status = match s {
                PowerSmoothing::On(_) | PowerSmoothing::Unknown { .. } => Status::Warn,
                _ => Status::Pass,
            };
            let mut text = format!("GPU {}: power smoothing {}", g.index, s.describe());
            if s.is_on() {
                text.push_str(": the figures will show the hardware's smoothed draw, not the load's raw swing");
            }
            (status, text)
        })
        .collect();
    worst(
        &items,
        "this tool never changes power smoothing: to measure the raw swing, ask the node owner to turn it off (nvidia-smi power-smoothing), or keep it on and report the figures as smoothed",
    )
}
