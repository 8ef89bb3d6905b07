//! `report.md`'s "The answer": the job as predicted (its shape, the
//! headline scenario's mean, swing and peak), the run report's own supply
//! and grid lines for the headline, and what each other scenario buys
//! and costs against the plain wave.

use super::super::figures::Estimate;
use super::super::{Prediction, Scenario, VsPlain};
use super::units::{fmt_energy_mwh, fmt_energy_mwh_signed};
use powerlab_collate::render::code;
use powerlab_samples::format::{fmt_ms, fmt_power, fmt_power_pm, fmt_power_signed};
use std::fmt::Write;

/// A figure and its ±, at its scale.
fn est(e: Estimate) -> String {
    fmt_power_pm(e.value, e.plus_minus)
}

/// Appends "The answer".
pub(super) fn write_answer(s: &mut String, p: &Prediction) {
    let _ = writeln!(s, "\n## The answer\n");
    let Some(h) = p.scenarios.first() else {
        let _ = writeln!(s, "No scenario was predicted.");
        return;
    };
    job_lines(s, p, h);
    // The supply and the grid are the verdict table's rows, above.
    withheld_line(s, p, h.id);
    super::study::answer_line(s, p);
    mitigation_lines(s, p);
}

/// The headline's grid metrics without a figure, each with why: a limit
/// that cannot be judged is said, never left out.
fn withheld_line(s: &mut String, p: &Prediction, id: u32) {
    let Some(r) = p.grid.rungs.iter().find(|r| r.rung_id == id) else {
        return;
    };
    let why: Vec<String> = r
        .figures
        .iter()
        .filter_map(|f| {
            Some(format!(
                "{} {}",
                f.metric.name().replace('_', " "),
                f.withheld?
            ))
        })
        .collect();
    if !why.is_empty() {
        let _ = writeln!(s, "- **Grid, not stated:** {}.", why.join("; "));
    }
}

/// The job's shape and the headline's figures.
fn job_lines(s: &mut String, p: &Prediction, h: &Scenario) {
    let job = &p.schedule.job;
    let _ = writeln!(
        s,
        "- **Job:** {} GPUs in {} nodes of {}; iteration {} ms, compute fraction {:.2}.",
        job.gpus,
        p.nodes,
        p.gpus_per_node,
        fmt_ms(job.iteration_ms),
        job.compute_fraction
    );
    let _ = writeln!(s, "- **Communication:** {}.", p.comm.1);
    let _ = writeln!(s, "- **Spread:** {}.", p.spread);
    let stragglers = p.schedule.stragglers.map_or_else(
        || "none".to_string(),
        |x| {
            format!(
                "each node late by {} ms with probability {} each iteration",
                fmt_ms(x.delay_ms),
                x.share
            )
        },
    );
    let _ = writeln!(s, "- **Stragglers:** {stragglers}.");
    let stagger = if h.stagger_groups > 1 {
        format!(", nodes in {} stagger groups", h.stagger_groups)
    } else {
        ", nodes not staggered".to_string()
    };
    let vs = h.vs_plain.map_or_else(String::new, |v| {
        format!(
            "; against the plain wave {}",
            vs_words(h, v, p.schedule.output.span_s)
        )
    });
    let _ = writeln!(
        s,
        "- **Mitigation:** `{}`{stagger} (scenario `{}`){vs}.",
        code(&h.profile),
        code(&h.label)
    );
    let _ = writeln!(
        s,
        "- **Power (over the {} s drawn):** mean **{}**, swing p90 − p10 **{}**, spread p99 − p1 {}, peak {}, lowest {}; {}.",
        fmt_ms(p.schedule.output.span_s),
        est(h.mean_w),
        est(h.swing_w),
        est(h.spread_w),
        fmt_power(h.levels.peak_w),
        fmt_power(h.levels.min_w),
        fmt_energy_mwh(h.energy_mwh)
    );
}

/// What `sc` buys and costs against the plain wave, in words.
fn vs_words(sc: &Scenario, v: VsPlain, span_s: f64) -> String {
    format!(
        "swing {} (cut {}, {:.0} %), mean {} ({}), energy {} over the {} s",
        est(sc.swing_w),
        fmt_power_signed(v.swing_cut_w.value, v.swing_cut_w.plus_minus),
        v.swing_cut_pct,
        est(sc.mean_w),
        fmt_power_signed(v.extra_mean_w.value, v.extra_mean_w.plus_minus),
        fmt_energy_mwh_signed(v.extra_energy_mwh),
        fmt_ms(span_s)
    )
}

/// One line per scenario after the headline that has a comparison with
/// the plain wave.
fn mitigation_lines(s: &mut String, p: &Prediction) {
    for sc in p.scenarios.iter().skip(1) {
        let Some(v) = sc.vs_plain else {
            continue;
        };
        let _ = writeln!(
            s,
            "- **Mitigations, `{}`** (against the plain wave): {}.",
            code(&sc.label),
            vs_words(sc, v, p.schedule.output.span_s)
        );
    }
}
