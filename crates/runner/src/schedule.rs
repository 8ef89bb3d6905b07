//! What each GPU is told to do in a rung: its schedule (the load shape
//! over the rung's window, stagger included) and the rung's description for
//! the event log.

use powerlab_campaign::{NcclStep, PhaseKind, Rung};
use powerlab_core::collective::{FabricSpec, SweepSpec};
use powerlab_core::hw::GpuSchedule;
use powerlab_core::shape::{LoadKind, LoadShape};
use powerlab_core::smoothing::DeviceSmoothing;
use powerlab_core::units::{ms_to_ns_f64, ms_to_ns_trunc, secs_to_ns_trunc};
use powerlab_rundir::RungInfo;

/// The rung as the event log describes it; `keys` are the GPU keys by run
/// index (a ramp-up step names the GPUs that swing by key).
pub(crate) fn rung_info(r: &Rung, keys: &[String]) -> RungInfo {
    RungInfo {
        id: r.id,
        label: r.label.clone(),
        phase: r.phase.clone(),
        kind: r.kind,
        mode: r.mode,
        period_ms: r.period_ms,
        nominal_period_ms: r.nominal_period_ms,
        duty: r.duty,
        repeat: r.repeat,
        repeats: r.repeats,
        no_context: r.no_context,
        smoothing: r.smoothing,
        workload: r.workload.as_ref().map(|w| {
            Box::new(powerlab_rundir::WorkloadInfo {
                command: w.command.clone(),
                iteration_ms: w.iteration_ms,
                sim: w.sim,
                stop: w.stop,
            })
        }),
        swinging: r.swinging.as_ref().map(|s| {
            s.iter()
                .map(|i| keys.get(*i).cloned().unwrap_or_else(|| format!("#{i}")))
                .collect()
        }),
    }
}

/// The schedule of GPU `i` for a rung whose window starts at `epoch`. A
/// GPU that the rung leaves out (a ramp-up step's idle GPUs) gets no load.
/// `smoothing` is the GPU's calibrated mitigation (a mitigation rung's):
/// a square wave carries it; `None` is the plain wave.
///
/// # Errors
///
/// A duty or ramp-up rung without a period above zero (a plan edited or
/// made by another tool: the planner gives every such rung one), named by
/// its label; no period is ever assumed.
pub fn schedule_for(
    rung: &Rung,
    i: usize,
    epoch: i64,
    smoothing: Option<&DeviceSmoothing>,
) -> Result<GpuSchedule, String> {
    let shape = match rung.kind {
        _ if !rung.loads_gpu(i) => LoadShape::Idle,
        PhaseKind::Idle => LoadShape::Idle,
        PhaseKind::Sustained | PhaseKind::Soak => LoadShape::Constant {
            load: LoadKind::Virus,
        },
        PhaseKind::Nccl => nccl_shape(rung),
        PhaseKind::Workload => LoadShape::Workload {
            job: rung.workload.as_ref().map(|w| w.sim).unwrap_or_default(),
            origin_ns: epoch,
        },
        PhaseKind::Duty | PhaseKind::RampUp => LoadShape::Square {
            load: LoadKind::Virus,
            period_ns: period_ns(rung)?,
            duty: rung.duty,
            origin_ns: epoch + rung.offsets_ns.get(i).copied().unwrap_or(0),
            ramp_ns: rung.ramp_ns,
            smoothing: smoothing.cloned(),
        },
    };
    Ok(GpuSchedule {
        rung_id: rung.id,
        start_ns: epoch,
        end_ns: epoch + rung.duration_ns,
        shape,
    })
}

/// The period of a duty or ramp-up rung, ns.
fn period_ns(rung: &Rung) -> Result<i64, String> {
    let ns = rung.period_ms.map(|p| ms_to_ns_f64(p.ms()).round());
    match ns {
        Some(ns) if ns.is_finite() && ns >= 1.0 && ns < i64::MAX as f64 => Ok(ns as i64),
        _ => Err(format!(
            "rung {}: a {} rung needs a period, and the plan gives it {}; expand the plan again from the campaign file (`powerlab plan`)",
            rung.label,
            rung.kind.as_str(),
            rung.period_ms
                .map_or_else(|| "none".to_string(), |p| format!("period_ms = {p}"))
        )),
    }
}

/// The load of an NCCL rung: the sweep, or the fabric / bulk-synchronous all-reduce.
fn nccl_shape(rung: &Rung) -> LoadShape {
    let Some(n) = &rung.nccl else {
        return LoadShape::Constant {
            load: LoadKind::Fabric,
        };
    };
    let timeout_ns = secs_to_ns_trunc(n.timeout_s);
    match rung.nccl_step {
        Some(NcclStep::Sweep) => LoadShape::Sweep {
            spec: SweepSpec {
                collectives: n.collectives.clone(),
                sizes: n.sizes(),
                warmup_iters: n.warmup_iters,
                iterations: n.iterations,
                timeout_ns,
            },
        },
        Some(NcclStep::Bsp) => LoadShape::Fabric {
            spec: FabricSpec {
                bytes: n.fabric_bytes,
                compute_ns: n.bsp_compute_ms.map(ms_to_ns_trunc),
                timeout_ns,
            },
        },
        Some(NcclStep::Fabric) | None => LoadShape::Fabric {
            spec: FabricSpec {
                bytes: n.fabric_bytes,
                compute_ns: None,
                timeout_ns,
            },
        },
    }
}
