//! The grid metrics' section of `report.md`: per rung the node's 10–90 %
//! ramp rates, dynamic range and band share, the declared `[grid]`, and
//! every judged figure's verdict with its margin.

use super::cells::text;
use powerlab_analysis::grid::{GridFigure, GridMetrics, GridVerdict, Metric, Window};
use powerlab_samples::format::fmt_ms;
use std::fmt::Write;

/// A figure for a table cell: `≥` for a lower bound, `±` where stated, a
/// dash where withheld.
fn cell(f: Option<&GridFigure>, decimals: usize) -> String {
    let Some(f) = f else {
        return "–".into();
    };
    let Some(v) = f.value else {
        return "–".into();
    };
    let bound = if f.lower_bound { "≥ " } else { "" };
    if let Some(hi) = f.upper {
        return format!("{v:.decimals$}–{hi:.decimals$}");
    }
    match f.plus_minus {
        Some(p) => format!("{bound}{v:.decimals$} ± {p:.decimals$}"),
        None => format!("{bound}{v:.decimals$}"),
    }
}

/// Appends "Grid metrics": one row per rung, then the declared limits and
/// the verdicts.
pub fn write_section(s: &mut String, g: &GridMetrics) {
    if g.rungs.is_empty() {
        return;
    }
    let [lo, hi] = g.band_hz;
    let _ = writeln!(s, "\n## Grid metrics (GPU draw only)\n");
    let _ = writeln!(
        s,
        "What a utility interconnect limits (arXiv 2508.14318), per rung of the node (or the rack's sum). Ramp rates: 0.8 × the step between the plateaus either side of the edge (the level it leaves, the median of the phase it enters) over the fastest 10–90 % edge, W/s; the fastest rise and fall over 1 ms, 10 ms, 100 ms and 1 s, W/s (the largest change over that window); `≥`: the edge is shorter than {} × the cycle's resolution (an ideal step cut to its restored harmonics), so only a lower bound; none without a composed cycle. Dynamic range: max − min (W, and % of the max). Band share: the share of the fluctuation's energy (variance, DC excluded) in {lo}–{hi} Hz, from the cycle's harmonics, or the node curve's spectrum up to its Nyquist frequency. – : withheld (`grid.csv` says why).\n",
        powerlab_analysis::grid::NUMBER_ABOVE_RESOLUTION
    );
    let _ = writeln!(
        s,
        "| rung | source | ramp up W/s | ramp down W/s | rise over 1 / 10 / 100 ms / 1 s W/s | fall over 1 / 10 / 100 ms / 1 s W/s | resolution ms | dynamic range W | range % of max | band share % | highest Hz |\n|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for r in &g.rungs {
        let f = |m: Metric| r.figures.iter().find(|f| f.metric == m);
        let res = f(Metric::RampUp)
            .and_then(|x| x.resolution_ms)
            .or_else(|| f(Metric::DynamicRange).and_then(|x| x.resolution_ms));
        let windows = |m: fn(Window) -> Metric| {
            Window::ALL
                .iter()
                .map(|w| cell(f(m(*w)), 0))
                .collect::<Vec<_>>()
                .join(" / ")
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            text(&r.label),
            r.source.name(),
            cell(f(Metric::RampUp), 0),
            cell(f(Metric::RampDown), 0),
            windows(Metric::RiseOver),
            windows(Metric::FallOver),
            res.map_or_else(|| "–".into(), fmt_ms),
            cell(f(Metric::DynamicRange), 1),
            cell(f(Metric::DynamicRangePct), 1),
            cell(f(Metric::BandShare), 1),
            f(Metric::BandShare)
                .and_then(|x| x.highest_hz)
                .map_or_else(|| "–".into(), |h| format!("{h:.1}")),
        );
    }
    write_verdicts(s, g);
}

/// Appends the declared limits and every judged figure.
fn write_verdicts(s: &mut String, g: &GridMetrics) {
    let Some(spec) = &g.spec else {
        let _ = writeln!(
            s,
            "\nNo `[grid]` declared in the campaign: no limit declared, no figure is judged."
        );
        return;
    };
    let _ = writeln!(
        s,
        "\nGrid limits as declared: {}. Ramp limits are scaled to the {} GPUs measured{}.",
        declared(spec),
        g.gpus,
        spec.gpus
            .map_or_else(String::new, |n| format!(" (site limits are for {n} GPUs)"))
    );
    let judged: Vec<String> = g
        .rungs
        .iter()
        .flat_map(|r| {
            r.figures
                .iter()
                .filter(|f| f.limit.is_some())
                .map(move |f| {
                    format!(
                        "| {} | {} | {} | {:.1} | {} | {} |",
                        text(&r.label),
                        f.metric.name(),
                        cell(Some(f), 1),
                        f.limit.unwrap_or(f64::NAN),
                        verdict_cell(f.verdict),
                        f.margin.map_or_else(|| "–".into(), |m| format!("{m:+.1}")),
                    )
                })
        })
        .collect();
    if judged.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n| rung | metric | figure | limit | verdict | margin (limit − figure) |\n|---|---|---|---|---|---|\n{}",
        judged.join("\n")
    );
}

/// A verdict, a failure in bold.
fn verdict_cell(v: GridVerdict) -> String {
    match v {
        GridVerdict::Fail => format!("**{}**", v.name()),
        _ => v.name().to_string(),
    }
}

/// The declared limits in words.
fn declared(spec: &powerlab_campaign::Grid) -> String {
    let mut parts = Vec::new();
    let mut ramp = |name: &str, per_gpu: Option<f64>, site: Option<f64>| {
        if let Some(w) = per_gpu {
            parts.push(format!("{name} {w} W/s per GPU"));
        }
        if let Some(mw) = site {
            parts.push(format!("{name} {mw} MW/s"));
        }
    };
    ramp(
        "ramp up",
        spec.ramp_up_w_per_s_per_gpu,
        spec.ramp_up_mw_per_s,
    );
    ramp(
        "ramp down",
        spec.ramp_down_w_per_s_per_gpu,
        spec.ramp_down_mw_per_s,
    );
    if let Some(p) = spec.max_band_share_pct {
        let [lo, hi] = spec.band_hz;
        parts.push(format!("at most {p} % of the energy in {lo}–{hi} Hz"));
    }
    if let Some(p) = spec.max_dynamic_range_pct {
        parts.push(format!("dynamic range at most {p} % of the max"));
    }
    if let Some(w) = spec.max_dynamic_range_w {
        parts.push(format!("dynamic range at most {w} W"));
    }
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join("; ")
    }
}
