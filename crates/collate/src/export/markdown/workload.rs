//! The "Workload" section of `report.md`: per workload rung the iteration
//! its samples show (period ±, jitter, cycles, on-fraction) and the folded
//! iteration's node figures, or why no period was found and the flat
//! figures.

use super::cells::{o, text};
use crate::report::workload::{WorkloadRow, WorkloadStatus};
use std::fmt::Write;

/// A figure with its 95 % interval as ± the interval's half-width.
fn pm_of(v: Option<f64>, lo: Option<f64>, hi: Option<f64>) -> String {
    match (v, lo.zip(hi)) {
        (Some(v), Some((lo, hi))) => format!("{v:.1} ± {:.1}", 0.5 * (hi - lo)),
        (v, _) => o(v),
    }
}

/// A rate cell, W/s: `≥` for a lower bound, `±` where stated.
fn rate(v: Option<f64>, pm: Option<f64>, lower: bool) -> String {
    match (v, pm) {
        (Some(v), _) if lower => format!("≥ {v:.0}"),
        (Some(v), Some(p)) => format!("{v:.0} ± {p:.0}"),
        (Some(v), None) => format!("{v:.0}"),
        (None, _) => "–".into(),
    }
}

/// Appends the section (nothing without workload rungs).
pub fn write_section(s: &mut String, rows: &[WorkloadRow]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## Workload (node power, GPU draw only)\n");
    let _ = writeln!(
        s,
        "A workload rung runs the user's own job, whose iterations the harness does not time: they are found in each GPU's buffered samples (each at the middle of its averaging window). Period: the strongest early peak of the samples' autocorrelation, refined on the rising crossings of the mid-level (halfway between p10 and p90) by a least-squares fit of t0 + k·P; ± its 95 % interval, never tighter than the sample spacing over the cycles fitted. Jitter: the crossings' standard deviation about the fit (their own placement error included), ms and % of the period. Cycles: the iterations seen. On-fraction: the share of an iteration above the mid-level. Each crossing, less the time the rise takes from a tenth of the range to the mid-level, starts an iteration; the iterations are folded each at its own start and composed as a duty rung's cycle is (the sample window undone, the GPUs summed at their offsets): mean and swing (p90 − p10) of the node's iteration ± their 95 % half-width (a bootstrap over whole iterations), peak, the fastest 10–90 % ramps (`≥`: faster than the resolution) and the share of the fluctuation's energy in the grid band, as in the grid metrics. Without a period: why, in words, and the flat figures (the sample-and-hold mean, peak and p90 − p10). Every mean weighs each sample by the time it stands for (half the gap to each neighbour): NVML samples faster at high power, and a mean counting every sample once leans high. Energy counter: the mean the GPUs' energy counters show over the window (between their first and last reading in it, about one a second), and the mean's gap to it.\n"
    );
    let _ = writeln!(
        s,
        "| rung | period ms | jitter ms (%) | cycles | on-fraction | mean W | energy counter W (gap) | swing W | peak W | ramp up W/s | ramp down W/s | band share % | resolution ms | note |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for r in rows {
        write_row(s, r);
    }
}

/// The phase's declared iteration beside what the samples show: a found
/// period off it by more than 5 % (near a multiple or a fraction of it,
/// the samples may have beaten with the job), or no period at all.
fn declared_note(r: &WorkloadRow) -> String {
    let Some(d) = r.declared_iteration_ms else {
        return String::new();
    };
    match r.period_ms {
        Some(p) if (p / d - 1.0).abs() <= 0.05 => format!("; declared {d} ms"),
        Some(p) => format!(
            "; **declared {d} ms, found {p:.2} ms ({:.2} ×): check which the job runs; a period near a multiple or a fraction of the true one is the samples beating with it**",
            p / d
        ),
        None => format!("; declared {d} ms, none found in the samples"),
    }
}

/// One rung's row.
fn write_row(s: &mut String, r: &WorkloadRow) {
    let period = match (r.period_ms, r.period_ci95_ms) {
        (Some(p), Some(c)) => format!("{p:.2} ± {c:.2}"),
        (p, _) => o(p),
    };
    let jitter = match (r.jitter_ms, r.jitter_pct) {
        (Some(j), Some(p)) => format!("{j:.1} ({p:.1} %)"),
        (j, _) => o(j),
    };
    let band = match (r.band_share_pct, r.band_share_upper_pct) {
        (Some(lo), Some(hi)) => format!("{lo:.1}–{hi:.1}"),
        (v, _) => o(v),
    };
    let mut note = match (r.status, &r.verdict) {
        (WorkloadStatus::Folded, _) if r.jitter_ms.is_none() => format!(
            "folded iteration ({}); its period is its spectrum's line (a back-to-back job: its shallow dips cross the mid-level at any phase), the iterations placed at t0 + k·P, so no jitter is measured",
            r.method
        ),
        (WorkloadStatus::Folded, _) => format!("folded iteration ({})", r.method),
        (WorkloadStatus::NoPeriod, Some(v)) => format!("**{v}**; flat figures ({})", r.method),
        (_, Some(v)) => format!("**{v}**; {}", r.method),
        (_, None) => r.method.to_string(),
    };
    if let Some(i) = &r.incomplete {
        note = format!("**{i}** — {note}");
    }
    note.push_str(&declared_note(r));
    let counter = match (r.counter_mean_w, r.counter_gap_pct) {
        (Some(c), Some(g)) => format!("{c:.1} ({g:+.2} %)"),
        (c, _) => o(c),
    };
    let _ = writeln!(
        s,
        "| {} | {period} | {jitter} | {} | {} | {} | {counter} | {} | {} | {} | {} | {band} | {} | {} |",
        text(&r.label),
        r.cycles.map_or_else(|| "–".into(), |c| c.to_string()),
        r.on_fraction
            .map_or_else(|| "–".into(), |f| format!("{f:.2}")),
        pm_of(r.mean_w, r.mean_ci95_lo_w, r.mean_ci95_hi_w),
        pm_of(r.swing_w, r.swing_ci95_lo_w, r.swing_ci95_hi_w),
        o(r.peak_w),
        rate(
            r.ramp_up_w_per_s,
            r.ramp_up_pm_w_per_s,
            r.ramp_up_lower_bound
        ),
        rate(
            r.ramp_down_w_per_s,
            r.ramp_down_pm_w_per_s,
            r.ramp_down_lower_bound
        ),
        r.resolution_ms
            .map_or_else(|| "–".into(), |v| format!("{v:.2}")),
        // The collator's own words, with its bold marks (as the rung
        // table's method cell); only a cell boundary is escaped.
        note.replace('|', "\\|"),
    );
}

#[cfg(test)]
mod declared_tests {
    use super::*;

    #[test]
    fn a_declared_iteration_off_the_found_one_is_said_in_bold() {
        let row = |found: Option<f64>, declared: Option<f64>| WorkloadRow {
            period_ms: found,
            declared_iteration_ms: declared,
            ..crate::report::workload::tests_support::empty_row()
        };
        assert_eq!(declared_note(&row(Some(241.7), None)), "");
        assert_eq!(
            declared_note(&row(Some(241.7), Some(240.0))),
            "; declared 240 ms"
        );
        let off = declared_note(&row(Some(259.7), Some(129.5)));
        assert!(
            off.contains("**declared 129.5 ms, found 259.70 ms (2.01 ×)"),
            "{off}"
        );
        assert!(declared_note(&row(None, Some(129.5))).contains("none found"));
    }
}
