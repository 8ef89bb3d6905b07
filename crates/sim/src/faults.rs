//! Fault injection for the simulated node, written on the command line as
//! `--sim-fault gpu1:cold_start=10s`, `--sim-fault gpu0:lost_at=30s`,
//! `--sim-fault node:no_nccl`. Times are measured from the run start.

use powerlab_core::smoothing_state::{NVML_NOT_SUPPORTED, PowerSmoothing, SmoothingProfile};
use powerlab_core::units::{NS_PER_MS, NS_PER_S, NS_PER_US};
use serde::{Deserialize, Serialize};

/// Faults of one simulated GPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuFaults {
    /// Overrides the profile's cold-start delay, ns.
    pub cold_start_ns: Option<i64>,
    /// The GPU falls off the bus at this time after start, ns.
    pub lost_at_ns: Option<i64>,
    /// An Xid event (code) at this time after start.
    pub xid_at_ns: Option<(i64, u32)>,
    /// HW power brake asserted from this time after start, ns.
    pub power_brake_at_ns: Option<i64>,
    /// Every Nth NVML read fails transiently (0 = never).
    pub nvml_error_every: u32,
    /// Extra heating, °C per W above the profile (drives temperature limits).
    pub extra_c_per_w: f64,
    /// Power limit override, W (a capped GPU).
    pub power_limit_w: Option<f64>,
    /// Short bursts of this many W between the buffered samples' windows
    /// (4 ms of every 20 ms sample period, right after the 6 ms window
    /// closes): energy the buffered samples miss and the energy counter sees.
    pub spikes_w: Option<f64>,
    /// This GPU's NCCL collectives stop progressing at this time after start, ns.
    pub nccl_hang_at_ns: Option<i64>,
    /// From this time after start (ns), every falling edge is recorded this
    /// much late (ns): a device whose falls slip (a host that stopped
    /// feeding it late, a chunk that overran its deadline).
    pub late_falls: Option<(i64, i64)>,
    /// The GPU slows down above this temperature, °C (a thermal slowdown:
    /// `sw_thermal_slowdown` read, the thermal-cap counter runs, power and
    /// SM clock fall until the temperature holds there).
    pub thermal_limit_c: Option<f64>,
    /// Under load the demand drifts by this much per 10 min from the run's
    /// start, W (signed), as leakage that grows with time: it shows in the
    /// power of a GPU below its limit (one held at its cap absorbs it, and
    /// its clocks move instead).
    pub drift_w_per_10min: Option<f64>,
    /// The power smoothing this GPU reports (`power_smoothing=on`,
    /// `on@PROFILE`, `off`); None: not supported, as on an H200. Only
    /// reported: the simulated power is not smoothed.
    #[serde(default)]
    pub power_smoothing: Option<PowerSmoothing>,
}

/// Faults of the whole node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultPlan {
    /// Per-GPU faults by run-local index.
    pub gpus: std::collections::BTreeMap<usize, GpuFaults>,
    /// NCCL is not installed on this node.
    pub no_nccl: bool,
    /// CUDA initialisation fails with this code (802: fabric not ready) —
    /// seen by the preflight, which then refuses the node.
    pub cuda_init_error: Option<i32>,
    /// The NVSwitch fabric reports this state instead of `completed`.
    pub fabric_state: Option<String>,
    /// The node's realtime clock is off by this much, ns (seen by the rack's
    /// cross-node clock check).
    pub clock_offset_ns: i64,
    /// The whole process dies (SIGABRT) at this time after start, ns — a
    /// node lost mid-run.
    pub die_at_ns: Option<i64>,
}

fn parse_signed_duration_ns(s: &str) -> Result<i64, String> {
    match s.trim().strip_prefix('-') {
        Some(rest) => parse_duration_ns(rest).map(|v| -v),
        None => parse_duration_ns(s),
    }
}

/// Latest fault time accepted: one year, ns.
const MAX_FAULT_TIME_NS: i64 = 366 * 86_400_000_000_000;

fn parse_duration_ns(s: &str) -> Result<i64, String> {
    let s = s.trim();
    let (num, mult) = if let Some(v) = s.strip_suffix("ms") {
        (v, NS_PER_MS as f64)
    } else if let Some(v) = s.strip_suffix("us").or_else(|| s.strip_suffix("µs")) {
        (v, NS_PER_US as f64)
    } else if let Some(v) = s.strip_suffix('s') {
        (v, NS_PER_S as f64)
    } else {
        return Err(format!("`{s}` needs a unit: s, ms or us"));
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a duration"))?;
    if !(v >= 0.0 && v.is_finite()) {
        return Err(format!("`{s}` is not a duration"));
    }
    let ns = v * mult;
    if ns > MAX_FAULT_TIME_NS as f64 {
        return Err(format!("`{s}` is longer than a year"));
    }
    Ok(ns.round() as i64)
}

/// The index of `gpuN`, written canonically: decimal digits, no sign, no
/// leading zero (`gpu00` is not read as `gpu0`, nor `gpu+1` as `gpu1`).
fn gpu_index(target: &str) -> Option<usize> {
    let digits = target.strip_prefix("gpu")?;
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    canonical.then(|| digits.parse().ok()).flatten()
}

/// The node fault written without a value: NCCL is not installed.
const NODE_FLAG_NO_NCCL: &str = "no_nccl";

/// Sets one fault from its value (the text after `=`); an error says what
/// is wrong with the value.
type SetNode = fn(&mut FaultPlan, &str) -> Result<(), String>;

/// The node faults written `node:key=value`: key, how it is written, setter.
const NODE_FAULTS: &[(&str, &str, SetNode)] = &[
    ("cuda_init", "cuda_init=CODE", |p, v| {
        p.cuda_init_error = Some(
            v.trim()
                .parse()
                .map_err(|_| format!("`{v}` is not a CUDA error code"))?,
        );
        Ok(())
    }),
    ("fabric", "fabric=STATE", |p, v| {
        p.fabric_state = Some(v.trim().to_string());
        Ok(())
    }),
    ("clock_offset", "clock_offset=±TIME", |p, v| {
        p.clock_offset_ns = parse_signed_duration_ns(v)?;
        Ok(())
    }),
    ("die_at", "die_at=TIME", |p, v| {
        p.die_at_ns = Some(parse_duration_ns(v)?);
        Ok(())
    }),
];

/// Sets one GPU fault from its value (the text after `=`).
type SetGpu = fn(&mut GpuFaults, &str) -> Result<(), String>;

/// The GPU faults written `gpuN:key=value`, in the order the error for an
/// unknown key lists them.
const GPU_FAULTS: &[(&str, SetGpu)] = &[
    ("cold_start", |f, v| {
        f.cold_start_ns = Some(parse_duration_ns(v)?);
        Ok(())
    }),
    ("lost_at", |f, v| {
        f.lost_at_ns = Some(parse_duration_ns(v)?);
        Ok(())
    }),
    ("xid_at", |f, v| {
        let (t, code) = v
            .split_once('@')
            .ok_or_else(|| "xid_at needs TIME@CODE, e.g. 30s@79".to_string())?;
        let code: u32 = code
            .parse()
            .map_err(|_| format!("`{code}` is not an Xid code"))?;
        f.xid_at_ns = Some((parse_duration_ns(t)?, code));
        Ok(())
    }),
    ("power_brake_at", |f, v| {
        f.power_brake_at_ns = Some(parse_duration_ns(v)?);
        Ok(())
    }),
    ("nccl_hang_at", |f, v| {
        f.nccl_hang_at_ns = Some(parse_duration_ns(v)?);
        Ok(())
    }),
    ("late_falls_at", |f, v| {
        let (t, late) = v
            .split_once('@')
            .ok_or_else(|| "late_falls_at needs TIME@LATENESS, e.g. 20s@300us".to_string())?;
        f.late_falls = Some((parse_duration_ns(t)?, parse_duration_ns(late)?));
        Ok(())
    }),
    ("nvml_error_every", |f, v| {
        f.nvml_error_every = v
            .parse()
            .ok()
            .filter(|n: &u32| *n >= 1)
            .ok_or_else(|| format!("`{v}` is not a count of reads of 1 or more"))?;
        Ok(())
    }),
    ("extra_c_per_w", |f, v| {
        f.extra_c_per_w = ranged(v, 0.0..=1.0, "a heating coefficient between 0 and 1 °C/W")?;
        Ok(())
    }),
    ("power_limit_w", |f, v| {
        f.power_limit_w = Some(ranged(
            v,
            50.0..=5000.0,
            "a power limit a GPU can have (50 to 5000 W)",
        )?);
        Ok(())
    }),
    ("spikes_w", |f, v| {
        f.spikes_w = Some(ranged(v, 1.0..=2000.0, "a burst of 1 to 2000 W")?);
        Ok(())
    }),
    ("thermal_limit_c", |f, v| {
        f.thermal_limit_c = Some(ranged(
            v,
            20.0..=120.0,
            "a slowdown temperature (20 to 120 °C)",
        )?);
        Ok(())
    }),
    ("power_smoothing", |f, v| {
        f.power_smoothing = Some(parse_smoothing(v)?);
        Ok(())
    }),
    ("drift_w_per_10min", |f, v| {
        f.drift_w_per_10min = Some(ranged(
            v,
            -500.0..=500.0,
            "a drift of −500 to 500 W per 10 min",
        )?);
        Ok(())
    }),
];

/// A simulated power-smoothing state: `off`, `on` (profile 0) or
/// `on@PROFILE` (0 to 4), with the simulated profile's floor and ramps.
fn parse_smoothing(v: &str) -> Result<PowerSmoothing, String> {
    let profile = match v.trim() {
        "off" => return Ok(PowerSmoothing::Off),
        "on" => 0,
        other => other
            .strip_prefix("on@")
            .and_then(|p| p.parse().ok())
            .filter(|p: &u32| *p <= 4)
            .ok_or_else(|| {
                format!(
                    "`{v}` is not a power-smoothing state: write off, on or on@PROFILE (0 to 4)"
                )
            })?,
    };
    Ok(PowerSmoothing::On(SmoothingProfile {
        profile,
        floor_pct: 65.0 - 5.0 * f64::from(profile),
        ramp_up_w_per_s: 1000.0,
        ramp_down_w_per_s: 500.0,
        ramp_down_hysteresis_ms: 1000.0,
        applied_floor_w: None,
    }))
}

impl GpuFaults {
    /// The power smoothing this GPU reports: not supported unless a fault
    /// says otherwise.
    pub fn power_smoothing_state(&self) -> PowerSmoothing {
        self.power_smoothing
            .clone()
            .unwrap_or(PowerSmoothing::NotSupported {
                code: NVML_NOT_SUPPORTED,
            })
    }
}

/// A finite number within `range`; otherwise "`value` is not `what`".
fn ranged(value: &str, range: std::ops::RangeInclusive<f64>, what: &str) -> Result<f64, String> {
    value
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && range.contains(v))
        .ok_or_else(|| format!("`{value}` is not {what}"))
}

impl FaultPlan {
    /// Parses fault specs. Each is `node:no_nccl`, `node:key=value` with keys
    /// cuda_init, fabric, clock_offset, die_at, or `gpuN:key=value` with
    /// keys cold_start, lost_at, xid_at (`30s@79`), power_brake_at, nccl_hang_at,
    /// late_falls_at (`20s@300us`),
    /// nvml_error_every, extra_c_per_w, power_limit_w, spikes_w,
    /// thermal_limit_c, drift_w_per_10min, power_smoothing (`on`,
    /// `on@PROFILE`, `off`).
    ///
    /// # Errors
    ///
    /// Returns a message naming the offending spec if it has no `:`, if its
    /// target is neither `node` nor `gpuN`, if a GPU fault is not
    /// `key=value`, or if a key is unknown. It also fails on a bad value: a
    /// time without a unit (s, ms or us), not a number, negative (only
    /// `clock_offset` may be) or longer than a year; an `xid_at` or `late_falls_at` without its `@` part; an
    /// Xid or CUDA error code that is not a number; an `nvml_error_every`
    /// below 1; an `extra_c_per_w` outside 0 to 1 °C/W; or a
    /// `power_limit_w` outside 50 to 5000 W.
    pub fn parse(specs: &[String]) -> Result<FaultPlan, String> {
        let mut plan = FaultPlan::default();
        for spec in specs {
            let (target, rest) = spec.split_once(':').ok_or_else(|| {
                format!("fault `{spec}`: expected `node:no_nccl` or `gpuN:key=value`")
            })?;
            let bad = |e: String| format!("fault `{spec}`: {e}");
            if target == "node" {
                plan.set_node_fault(rest).map_err(bad)?;
                continue;
            }
            let idx = gpu_index(target).ok_or_else(|| {
                format!(
                    "fault `{spec}`: `{target}` is not gpuN (N a GPU index written plainly: gpu0, gpu1, …, gpu12; no sign or leading zero)"
                )
            })?;
            let (key, value) = rest
                .split_once('=')
                .ok_or_else(|| format!("fault `{spec}`: expected key=value"))?;
            let f = plan.gpus.entry(idx).or_default();
            let set = GPU_FAULTS
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, set)| set)
                .ok_or_else(|| {
                    let allowed: Vec<&str> = GPU_FAULTS.iter().map(|(k, _)| *k).collect();
                    bad(format!(
                        "unknown key `{key}` (allowed: {})",
                        allowed.join(", ")
                    ))
                })?;
            set(f, value).map_err(bad)?;
        }
        Ok(plan)
    }

    /// Sets one node fault, written `no_nccl` or `key=value` (the part of
    /// the spec after `node:`).
    fn set_node_fault(&mut self, rest: &str) -> Result<(), String> {
        if rest == NODE_FLAG_NO_NCCL {
            self.no_nccl = true;
            return Ok(());
        }
        let set = rest.split_once('=').and_then(|(key, value)| {
            NODE_FAULTS
                .iter()
                .find(|(k, _, _)| *k == key)
                .map(|(_, _, set)| (set, value))
        });
        match set {
            Some((set, value)) => set(self, value),
            None => {
                let allowed: Vec<&str> = NODE_FAULTS.iter().map(|(_, usage, _)| *usage).collect();
                Err(format!(
                    "unknown node fault `{rest}` (allowed: {NODE_FLAG_NO_NCCL}, {})",
                    allowed.join(", ")
                ))
            }
        }
    }

    /// Refuses faults aimed at GPUs the node does not have (they would
    /// silently inject nothing).
    ///
    /// # Errors
    ///
    /// Returns a message if any GPU fault targets an index of `gpu_count`
    /// or more, i.e. a GPU the simulated node does not have.
    pub fn check_targets(&self, gpu_count: usize) -> Result<(), String> {
        match self.gpus.keys().find(|i| **i >= gpu_count) {
            Some(i) => Err(format!(
                "a --sim-fault names gpu{i}, but the simulated node has {gpu_count} GPUs (gpu0..gpu{})",
                gpu_count.saturating_sub(1)
            )),
            None => Ok(()),
        }
    }

    /// Faults of GPU `idx` (default: none).
    pub fn gpu(&self, idx: usize) -> GpuFaults {
        self.gpus.get(&idx).cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        let p = FaultPlan::parse(&[
            "gpu2:cold_start=10s".into(),
            "node:no_nccl".into(),
            "gpu0:xid_at=1.5s@79".into(),
        ])
        .unwrap();
        assert!(p.no_nccl);
        assert_eq!(p.gpu(2).cold_start_ns, Some(10_000_000_000));
        assert_eq!(p.gpu(0).xid_at_ns, Some((1_500_000_000, 79)));
        let l = FaultPlan::parse(&["gpu1:late_falls_at=20s@300us".into()]).unwrap();
        assert_eq!(l.gpu(1).late_falls, Some((20_000_000_000, 300_000)));
        let s = FaultPlan::parse(&["gpu1:power_smoothing=on@2".into()]).unwrap();
        assert!(s.gpu(1).power_smoothing_state().is_on());
        assert_eq!(
            s.gpu(0).power_smoothing_state(),
            PowerSmoothing::NotSupported { code: 3 }
        );
        assert!(
            FaultPlan::parse(&["gpu0:power_smoothing=yes".into()])
                .unwrap_err()
                .contains("on@PROFILE")
        );
        assert!(
            FaultPlan::parse(&["gpu0:cold_start=10".into()])
                .unwrap_err()
                .contains("unit")
        );
        assert!(
            FaultPlan::parse(&["gpuX:lost_at=1s".into()])
                .unwrap_err()
                .contains("gpuN")
        );
        assert!(
            FaultPlan::parse(&["gpu0:melt=1".into()])
                .unwrap_err()
                .contains("unknown key")
        );
        let n = FaultPlan::parse(&[
            "node:cuda_init=802".into(),
            "node:clock_offset=-5ms".into(),
            "node:die_at=20s".into(),
            "node:fabric=in_progress".into(),
        ])
        .unwrap();
        assert_eq!(
            (n.cuda_init_error, n.clock_offset_ns, n.die_at_ns),
            (Some(802), -5_000_000, Some(20_000_000_000))
        );
        assert_eq!(n.fabric_state.as_deref(), Some("in_progress"));
        assert!(
            FaultPlan::parse(&["node:melt".into()])
                .unwrap_err()
                .contains("unknown node fault")
        );
    }

    /// Issue 31, defect 12: `gpu00` was read as `gpu0`.
    #[test]
    fn defect12_a_gpu_is_named_in_one_way_only() {
        for bad in ["gpu00", "gpu01", "gpu+1", "gpu-0", "gpu", "gpu 1", "gpu1x"] {
            let e = FaultPlan::parse(&[format!("{bad}:lost_at=1s")]).unwrap_err();
            assert!(e.contains("is not gpuN"), "{bad}: {e}");
        }
        let p = FaultPlan::parse(&["gpu0:lost_at=1s".into(), "gpu10:lost_at=2s".into()]).unwrap();
        assert_eq!(p.gpu(0).lost_at_ns, Some(NS_PER_S));
        assert_eq!(p.gpu(10).lost_at_ns, Some(2_000_000_000));
    }
}
