//! The rung sections of a node run's `report.md`: the per-rung node power
//! table, the edges per rung, the figures across repeats, and in phase vs
//! staggered.

use super::cells::{o, pm, signed, text, within};
use powerlab_analysis::cycle::Bounds;
use powerlab_analysis::metric::{self, Cell, RungMetric, TableColumn};
use powerlab_analysis::sensor::RawVerdict;
use powerlab_analysis::summary::{Figure, PhaseCompare, RepeatStats, RungSummary};
use powerlab_campaign::Limits;
use powerlab_core::units::PeriodMs;
use powerlab_samples::format::fmt_ms;
use std::fmt::Write;

/// Appends "Rungs (node power, GPU draw only)": how the figures are made,
/// and one row per rung.
pub fn write_rungs(s: &mut String, rungs: &[RungSummary]) {
    let _ = writeln!(s, "\n## Rungs (node power, GPU draw only)\n");
    let _ = writeln!(
        s,
        "Duty rungs: the node's cycle composed from every GPU's own buffered samples, folded on that GPU's recorded edges, corrected for the sample window and summed at the GPUs' measured offsets (method `composed cycle`); in brackets each figure's 95 % interval: resampled whole cycles (noise, cycle-to-cycle variation), widened by the reconstruction's systematic error as measured against the simulated node's truth. A figure whose interval is wider than itself is stated as a bound, `≤ hi` (95 %); one whose interval is wider than 25 % of the node's on−off step as its interval, `lo–hi` (95 %). A rung of fewer than 5 whole cycles has no interval to bound anything (too few to resample): its figures are marked unresolved, with how much longer the rung must run. A duty rung whose cycle cannot be composed shows its verdict instead of figures. Other rungs: the sample-and-hold sum of the buffered samples. The last two columns are what NVML sampled (sample and hold): for a duty rung that is not what the node drew. The 1 s average field is never used as a result.\n"
    );
    let cols = metric::table(|m| m.node_table());
    let heads: Vec<&str> = cols.iter().map(|(_, c)| c.header).collect();
    let _ = writeln!(
        s,
        "| rung | period ms | method | {} | start err max µs | skew µs | barrier and edges |",
        heads.join(" | ")
    );
    let _ = writeln!(s, "|{}", "---|".repeat(heads.len() + 6));
    for r in rungs {
        rung_row(s, r, &cols);
    }
}

/// One row of the rung table, its metric columns `cols`.
fn rung_row(s: &mut String, r: &RungSummary, cols: &[(&dyn RungMetric, TableColumn)]) {
    let period = match (
        r.rung.period_ms.map(PeriodMs::ms),
        r.rung.requested_period_ms().map(PeriodMs::ms),
    ) {
        (Some(p), Some(n)) if (p - n).abs() > 1e-9 => {
            format!("{} ({} asked)", fmt_ms(p), fmt_ms(n))
        }
        (Some(p), _) => fmt_ms(p),
        _ => "–".into(),
    };
    let mut method = match &r.verdict {
        Some(v) => format!("{}: **{v}**", r.method),
        None => r.method.to_string(),
    };
    if let Some(i) = &r.incomplete {
        method = format!("**{i}** — {method}");
    }
    if let Some(u) = r.resolution.as_ref().filter(|u| u.unbounded()) {
        method = format!("{method}; **unresolved: {u}**");
    }
    let cells: Vec<String> = cols.iter().map(|(m, c)| cell(r, *m, c.cell)).collect();
    let _ = writeln!(
        s,
        "| {} | {} | {} | {} | {} | {} | {} |",
        text(&r.rung.label),
        period,
        method,
        cells.join(" | "),
        o(r.start_error_max_us),
        o(r.start_skew_us),
        match (r.barrier_ok, &r.edges_verdict) {
            (Some(false), Some(v)) => format!("**BARRIER MISSED; EDGES OUT OF TOLERANCE: {v}**"),
            (Some(false), None) => "**BARRIER MISSED**".to_string(),
            (_, Some(v)) => format!("**EDGES OUT OF TOLERANCE: {v}**"),
            (Some(true), None) => "ok".to_string(),
            (None, None) => "–".to_string(),
        }
    );
}

/// A metric's cell in the rung table, written as its column says.
fn cell(r: &RungSummary, m: &dyn RungMetric, how: Cell) -> String {
    let v = metric::value(m, r);
    match how {
        Cell::Figure => figure_cell(r, m.figure(), v.value, v.ci95),
        Cell::Plain => o(v.value),
        Cell::UnlessAliased => match r.instrument_verdict {
            Some(RawVerdict::Aliased) => "aliased".to_string(),
            _ => o(v.value),
        },
    }
}

/// A figure's cell: the figure and its interval, or, where the interval
/// only bounds it (a figure `f` the resolution judges), the bound
/// (`≤ 194.5`, `36.7–260.4`).
fn figure_cell(r: &RungSummary, f: Option<Figure>, v: Option<f64>, b: Option<Bounds>) -> String {
    let bounded = f.and_then(|f| r.resolution.as_ref().and_then(|u| u.bounded(f)));
    match bounded {
        Some(x) if x.at_most() => format!("≤ {:.1}", x.interval.hi),
        Some(x) => format!("{:.1}–{:.1}", x.interval.lo, x.interval.hi),
        None => within(v, b),
    }
}

/// Appends "Edges per rung" (only where a rung has edge errors): achieved
/// − intended per rung and kind, the cross-GPU skew and clock drift,
/// against the campaign's tolerances (`[limits]`).
pub fn write_edges(s: &mut String, limits: &Limits, rungs: &[RungSummary]) {
    let edged: Vec<&RungSummary> = rungs
        .iter()
        .filter(|r| r.rise_err_p99_us.is_some() || r.fall_err_p99_us.is_some())
        .collect();
    if edged.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## Edges per rung\n");
    let _ = writeln!(
        s,
        "achieved − intended of every rising and falling edge of every GPU, per rung and per kind (nothing pooled across rungs): the signed median, and the 99th percentile and maximum of its size, µs. Cross-GPU skew: for the k-th rise and the k-th fall of the rung, the spread of achieved − intended across GPUs; its 99th percentile over every k. Tolerance: p99 {:.0} µs, max {:.0} µs (`[limits] edge_p99_us`, `edge_max_us`). Clock drift: the largest drift of a GPU's device clock against the run clock over the rung.\n",
        limits.edge_p99_us, limits.edge_max_us
    );
    let _ = writeln!(
        s,
        "| rung | rises p50 / p99 / max µs | falls p50 / p99 / max µs | cross-GPU skew p99 µs | clock drift µs/s | verdict |\n|---|---|---|---|---|---|"
    );
    for r in edged {
        let tri = |a: Option<f64>, b: Option<f64>, c: Option<f64>| match (a, b, c) {
            (Some(a), Some(b), Some(c)) => format!("{a:+.1} / {b:.1} / {c:.1}"),
            _ => "–".into(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            text(&r.rung.label),
            tri(r.rise_err_p50_us, r.rise_err_p99_us, r.rise_err_max_us),
            tri(r.fall_err_p50_us, r.fall_err_p99_us, r.fall_err_max_us),
            o(r.edge_skew_p99_us),
            r.clock_drift_ppm
                .map(|v| format!("{v:.2}"))
                .unwrap_or_else(|| "–".into()),
            r.edges_verdict
                .as_deref()
                .map(|v| format!("**{v}**"))
                .unwrap_or_else(|| "ok".into())
        );
    }
}

/// Appends "Across repeats" (only where a rung ran more than once): mean
/// ± 95 % interval of every figure.
pub fn write_repeats(s: &mut String, repeats: &[RepeatStats]) {
    if !repeats.iter().any(|r| r.n > 1) {
        return;
    }
    let _ = writeln!(s, "\n## Across repeats (mean ± 95% CI, Student's t)\n");
    let _ = writeln!(
        s,
        "| rung | mode | period ms | n | mean W | peak W | spread W | swing W | NVML sample-and-hold spread W |\n|---|---|---|---|---|---|---|---|---|"
    );
    for r in repeats {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            text(&r.label),
            r.mode,
            r.achieved_period_ms
                .map(fmt_ms)
                .unwrap_or_else(|| "–".into()),
            r.n,
            pm(r.mean_w, r.mean_w_ci95),
            pm(r.peak_w, r.peak_w_ci95),
            pm(r.spread_w, r.spread_w_ci95),
            pm(r.swing_w, r.swing_w_ci95),
            o(r.raw_spread_w)
        );
    }
}

/// Appends "In phase vs staggered" (only where a phase ran both ways):
/// both figures and their difference with Welch's interval.
pub fn write_in_phase_vs_staggered(s: &mut String, compare: &[PhaseCompare]) {
    if compare.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## In phase vs staggered\n");
    let _ = writeln!(
        s,
        "Δ = staggered − in phase, ± the 95 % half-width of Welch's interval across repeats (none with fewer than two repeats a side). The last column is what NVML's sample-and-hold sum showed, for comparison only.\n"
    );
    let _ = writeln!(
        s,
        "| phase | period ms | n | mean W (in / stag / Δ) | peak W (in / stag / Δ) | spread W (in / stag / Δ) | swing W (in / stag / Δ) | NVML sample-and-hold spread W (in / stag) |\n|---|---|---|---|---|---|---|---|"
    );
    for c in compare {
        let tri = |a: Option<f64>, b: Option<f64>, d: Option<f64>, ci: Option<f64>| {
            format!("{} / {} / {}", o(a), o(b), signed(d, ci))
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} / {} |",
            text(&c.phase),
            fmt_ms(c.achieved_period_ms),
            c.n,
            tri(
                c.in_phase_mean_w,
                c.staggered_mean_w,
                c.delta_mean_w,
                c.delta_mean_w_ci95
            ),
            tri(
                c.in_phase_peak_w,
                c.staggered_peak_w,
                c.delta_peak_w,
                c.delta_peak_w_ci95
            ),
            tri(
                c.in_phase_spread_w,
                c.staggered_spread_w,
                c.delta_spread_w,
                c.delta_spread_w_ci95
            ),
            tri(
                c.in_phase_swing_w,
                c.staggered_swing_w,
                c.delta_swing_w,
                c.delta_swing_w_ci95
            ),
            o(c.raw_in_phase_spread_w),
            o(c.raw_staggered_spread_w)
        );
    }
}
