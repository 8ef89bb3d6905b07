//! "What each mitigation buys and what it costs" in `report.md`: one row
//! per mitigation rung against its plain rung (the swing it cut, the
//! energy it cost, by the energy counters and, as a cross-check, by the
//! buffered samples), then each GPU's floor and ramp rates, asked against
//! achieved.

use super::cells::{o, pm, signed, text};
use powerlab_analysis::mitigation::{Mitigation, MitigationGpuRow, MitigationRow};
use powerlab_core::smoothing::SmoothingSpec;
use std::fmt::Write;

/// The mitigation in words: `floor 60 %`, `up 12 kW/s, down 12 kW/s`.
pub fn in_words(s: &SmoothingSpec) -> String {
    let mut parts = Vec::new();
    if s.floor_pct > 0.0 {
        parts.push(format!("floor {} %", s.floor_pct));
    }
    if let Some(r) = s.ramp_up_w_per_s {
        parts.push(format!("up {}", kw_per_s(r)));
    }
    if let Some(r) = s.ramp_down_w_per_s {
        parts.push(format!("down {}", kw_per_s(r)));
    }
    if s.ramp_down_hysteresis_ms > 0.0 {
        parts.push(format!("hysteresis {} ms", s.ramp_down_hysteresis_ms));
    }
    parts.join(", ")
}

/// A rate in kW/s, one decimal at most.
fn kw_per_s(w_per_s: f64) -> String {
    format!("{} kW/s", (w_per_s / 100.0).round() / 10.0)
}

/// Appends the section (nothing without mitigation rungs).
pub fn write_section(s: &mut String, m: &Mitigation) {
    if m.rows.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## What each mitigation buys and what it costs\n");
    let _ = writeln!(
        s,
        "Each mitigation rung against the plain rung of the same period, mode and repeat. Swing: p90 − p10 of the node's composed cycle, ± its 95 % half-width. Energy: the extra mean node power over the measured window (the composed cycles' means), ± the larger of the composed means' intervals in quadrature and the GPUs' energy counters' disagreement; the counters' figure beside it (over the span between their first and last readings inside the window, which need not hold whole cycles). On GPUs without hardware power smoothing the harness emulates it with calibrated load (a level load on the device clock); a ramp-up runs the ramp instead of the work for its first milliseconds, so its energy is not the cost of the same work done slower.\n"
    );
    let _ = writeln!(
        s,
        "| rung | mitigation | swing W (plain → this) | swing cut | extra W | extra energy | extra W (energy counter) | note |\n|---|---|---|---|---|---|---|---|"
    );
    for r in &m.rows {
        write_row(s, r);
    }
    write_gpus(s, &m.gpus);
}

/// One mitigation rung's row.
fn write_row(s: &mut String, r: &MitigationRow) {
    let swing = format!(
        "{} → {}",
        pm(r.plain_swing_w, r.plain_swing_ci95_w),
        pm(r.swing_w, r.swing_ci95_w)
    );
    let cut = match (r.swing_cut_pct, r.swing_cut_ci95_pct) {
        (Some(c), Some(h)) => format!("{c:.0} ± {h:.0} %"),
        (Some(c), None) => format!("{c:.0} %"),
        _ => "–".into(),
    };
    let energy = r.energy_pct.map_or("–".into(), |e| format!("{e:+.1} %"));
    let _ = writeln!(
        s,
        "| {} | {} | {swing} | {cut} | {} | {energy} | {} | {} |",
        text(&r.label),
        in_words(&r.spec),
        signed(r.extra_w, r.extra_ci95_w),
        signed(r.extra_counter_w, None),
        text(&r.note)
    );
}

/// A rate cell: `≥ 41.2` (kW/s) for a lower bound, `± x` where stated.
fn rate_cell(v: Option<f64>, pm_w: Option<f64>, lower: bool) -> String {
    match v {
        None => "–".into(),
        Some(v) if lower => format!("≥ {:.1}", v / 1000.0),
        Some(v) => pm(Some(v / 1000.0), pm_w.map(|p| p / 1000.0)),
    }
}

/// Each GPU's floor and rates, asked against achieved.
fn write_gpus(s: &mut String, gpus: &[MitigationGpuRow]) {
    let _ = writeln!(
        s,
        "\nPer GPU: the floor held (the mean of the second half of the off-phase left after the hysteresis and the ramp down, from the GPU's own folded cycle) against the floor asked (the share of its limit, never below its idle draw); the lowest 10 ms mean anywhere in the off-phase (the foot of the step the supply sees: a sag after the fall, or the work's tail still decaying); and the fastest 10–90 % rise and fall of its cycle against the rates asked (kW/s; ≥: faster than the cycle resolves).\n"
    );
    let _ = writeln!(
        s,
        "| rung | GPU | floor asked W | floor held W | error | lowest 10 ms W | up asked | up held | down asked | down held | resolution ms | notes |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for g in gpus {
        let err = g
            .floor_error_pct
            .map_or("–".into(), |e| format!("{e:+.1} %"));
        let notes: Vec<&str> = [g.calibration_notes.as_str(), g.note.as_str()]
            .into_iter()
            .filter(|n| !n.is_empty())
            .collect();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {err} | {} | {} | {} | {} | {} | {} | {} |",
            text(&g.label),
            text(&g.gpu),
            o(g.asked_floor_w),
            o(g.achieved_floor_w),
            o(g.off_trough_w),
            o(g.asked_up_w_per_s.map(|v| v / 1000.0)),
            rate_cell(
                g.achieved_up_w_per_s,
                g.achieved_up_pm_w_per_s,
                g.up_lower_bound
            ),
            o(g.asked_down_w_per_s.map(|v| v / 1000.0)),
            rate_cell(
                g.achieved_down_w_per_s,
                g.achieved_down_pm_w_per_s,
                g.down_lower_bound
            ),
            o(g.rate_resolution_ms),
            text(&notes.join("; "))
        );
    }
}
