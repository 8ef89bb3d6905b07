//! The plan as the table `powerlab plan` prints.

use super::schedule::{Plan, Rung, fmt_num};
use crate::model::PhaseKind;
use powerlab_core::smoothing::SmoothingSpec;
use powerlab_core::units::{NS_PER_S, ns_to_ms, ns_to_s};

/// Renders the plan as a table for `powerlab plan`.
pub fn render(plan: &Plan) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "campaign `{}` on {} GPU(s): {} rungs",
        plan.campaign,
        plan.gpu_count,
        plan.rungs.len()
    );
    for n in &plan.notes {
        let _ = writeln!(s, "note: {n}");
    }
    let _ = writeln!(
        s,
        "{:>4}  {:<40} {:<9} {:>10} {:>5} {:>8} {:>8} {:>8} {:>8} {:>9}  offsets (ms)",
        "id",
        "rung",
        "kind",
        "period",
        "duty",
        "warmup",
        "window",
        "settle",
        "cooldown",
        "starts at"
    );
    let mut t = 0i64;
    for r in &plan.rungs {
        // A GPU the rung leaves idle (a ramp-up step's) shows `idle`.
        let offs: Vec<String> = r
            .offsets_ns
            .iter()
            .enumerate()
            .map(|(i, o)| {
                if r.loads_gpu(i) {
                    format!("{:.3}", ns_to_ms(*o))
                } else {
                    "idle".into()
                }
            })
            .collect();
        let _ = writeln!(
            s,
            "{:>4}  {:<40} {:<9} {:>10} {:>5.2} {:>7.1}s {:>7.1}s {:>7.2}s {:>7.1}s {:>9}  [{}]",
            r.id,
            r.label,
            r.kind.as_str(),
            r.period_ms
                .map(|p| format!("{}ms", fmt_num(p.ms())))
                .unwrap_or_else(|| "-".into()),
            r.duty,
            ns_to_s(r.warmup_ns),
            ns_to_s(r.duration_ns),
            ns_to_s(r.ramp_ns + r.settle_ns),
            ns_to_s(r.cooldown_ns),
            fmt_hms(t + r.warmup_ns),
            offs.join(", ")
        );
        if let Some(words) = mitigation_line(r) {
            let _ = writeln!(s, "{:>4}  mitigation: {words}", "");
        }
        if let Some(w) = &r.workload {
            let words: Vec<String> = w.command.iter().map(|c| crate::reach::quoted(c)).collect();
            let _ = writeln!(s, "{:>4}  command: [{}]", "", words.join(", "));
        }
        t += r.nominal_ns();
    }
    legend(&mut s, plan);
    let _ = writeln!(
        s,
        "total: {} ({} s) plus barrier waits",
        fmt_hms(plan.total_ns()),
        plan.total_ns() / NS_PER_S
    );
    s
}

/// The table's legend: what its columns mean, and each kind of rung the
/// plan holds (ramp-up steps, workloads and how they stop, mitigation).
fn legend(s: &mut String, plan: &Plan) {
    use std::fmt::Write;
    let _ = writeln!(
        s,
        "period: what the GPUs run (detuned from the sampling grid where needed); settle: ramp plus the time for the rung's own pattern to hold (and to leave a whole number of cycles), left out of every figure"
    );
    if plan.rungs.iter().any(|r| r.kind == PhaseKind::RampUp) {
        let _ = writeln!(
            s,
            "ramp_up: a step of the ramp-up of swing depth (rampup/KofN: K of the N GPUs swing in phase, the GPUs shown idle run no load, warm-up included); a limit or interlock tripped in a step stops the run before the next"
        );
    }
    if plan.rungs.iter().any(|r| r.workload.is_some()) {
        let _ = writeln!(
            s,
            "workload: the user's command starts with the rung (its warm-up is the job's start-up), runs through the window, and gets SIGTERM at the window's end, SIGKILL after stop_grace_s; on the simulated node a simulated training job stands in"
        );
    }
    if plan
        .rungs
        .iter()
        .any(|r| r.workload.as_ref().is_some_and(|w| w.stop.is_lifecycle()))
    {
        let _ = writeln!(
            s,
            "workload stop: `sigkill` kills the command's process group at the window's end (a crash), `exit` waits up to stop_grace_s for it to exit on its own; its start and that stop are measured as lifecycle edges"
        );
    }
    if plan.rungs.iter().any(|r| r.smoothing.is_some()) {
        let _ = writeln!(
            s,
            "mitigation: what every GPU's power smoothing does through the rung (a floor is a share of the GPU's enforced power limit); on GPUs without hardware power smoothing the harness emulates it with calibrated load, and changes no GPU setting"
        );
    }
}

/// Formats nanoseconds as h:mm:ss.
pub fn fmt_hms(ns: i64) -> String {
    let s = ns / NS_PER_S;
    format!("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
}

/// The mitigation line of a rung: its smoothing in words, or, for the
/// plain rung of a phase with a `smoothing` list, that it is the
/// reference; None for every other rung (their table is unchanged).
fn mitigation_line(r: &Rung) -> Option<String> {
    match &r.smoothing {
        Some(spec) => Some(smoothing_words(spec)),
        // A `smoothing` list puts the entry's label after the period.
        None if r.kind == PhaseKind::Duty && r.label.split('/').nth(2) == Some("plain") => Some(
            "none (the plain rung: the reference each mitigation of this period and mode is costed against)".into(),
        ),
        None => None,
    }
}

/// A smoothing in words, per GPU: `floor at 60 % of the power limit while
/// the work is off; rises at most 50 kW/s; …`.
pub fn smoothing_words(spec: &SmoothingSpec) -> String {
    if spec.is_none() {
        return "none".into();
    }
    let rate = |w: f64| {
        if w >= 1000.0 {
            format!("{} kW/s", fmt_num(w / 1000.0))
        } else {
            format!("{} W/s", fmt_num(w))
        }
    };
    let mut parts = Vec::new();
    if spec.floor_pct > 0.0 {
        parts.push(format!(
            "floor at {} % of the power limit while the work is off",
            fmt_num(spec.floor_pct)
        ));
    }
    if let Some(r) = spec.ramp_up_w_per_s {
        parts.push(format!("rises at most {}", rate(r)));
    }
    if spec.ramp_down_hysteresis_ms > 0.0 {
        parts.push(format!(
            "holds the draw {} ms after the work stops",
            fmt_num(spec.ramp_down_hysteresis_ms)
        ));
    }
    if let Some(r) = spec.ramp_down_w_per_s {
        parts.push(format!("falls at most {}", rate(r)));
    }
    format!("{} (per GPU)", parts.join("; "))
}
