//! The soak section of `report.md`: did the node hold its power over the
//! soak, or drift; when the GPUs reached thermal equilibrium; which GPU
//! throttled first and why; the clocks at the start and the end.

use super::cells::{code, o, text};
use powerlab_analysis::soak::{NODE, SoakRow};
use powerlab_rundir::{PlotFile, ReportFile};
use std::fmt::Write;

/// A drift with its interval: `+3.1 W/10 min [−0.4, +6.6]`.
pub fn drift_cell(r: &SoakRow) -> String {
    match (
        r.drift_w_per_10min,
        r.drift_lo_w_per_10min,
        r.drift_hi_w_per_10min,
    ) {
        (Some(d), Some(lo), Some(hi)) => format!("{d:+.1} [{lo:+.1}, {hi:+.1}]"),
        _ => "–".into(),
    }
}

/// A change between the first and last window beyond this share of the
/// first reads as movement even when no straight line fits it (a GPU
/// that throttled and settled lower).
pub const MOVED_SHARE: f64 = 0.01;

/// What the soak's power did.
pub enum Verdict {
    /// It moved: why.
    Moved(String),
    /// It held: no trend distinguishable from zero, and the last window
    /// within [`MOVED_SHARE`] of the first.
    Held,
    /// Not judged: why (too short for a trend, incomplete data).
    NotJudged(String),
}

/// Judges one row (a GPU or the node).
pub fn verdict(r: &SoakRow) -> Verdict {
    let mut why = Vec::new();
    if let (Some(d), Some(lo), Some(hi)) = (
        r.drift_w_per_10min,
        r.drift_lo_w_per_10min,
        r.drift_hi_w_per_10min,
    ) && (lo > 0.0 || hi < 0.0)
    {
        why.push(format!(
            "a trend of {d:+.1} W/10 min whose interval excludes zero"
        ));
    }
    if let (Some(c), Some(first)) = (r.change_w, r.first_mean_w)
        && first > 0.0
        && c.abs() > MOVED_SHARE * first
    {
        why.push(format!(
            "the last window {:.1} W ({:.1} %) {} the first",
            c.abs(),
            100.0 * c.abs() / first,
            if c < 0.0 { "below" } else { "above" }
        ));
    }
    if !r.incomplete.is_empty() {
        let cut = format!("incomplete data: {}", r.incomplete);
        return if why.is_empty() {
            Verdict::NotJudged(cut)
        } else {
            Verdict::Moved(format!("{} ({cut})", why.join("; ")))
        };
    }
    if !why.is_empty() {
        return Verdict::Moved(why.join("; "));
    }
    if r.drift_w_per_10min.is_none() || r.change_w.is_none() {
        return Verdict::NotJudged(format!(
            "too short for a trend ({:.0} s; a drift needs four 10 s means, and the first and last windows)",
            r.window_s
        ));
    }
    Verdict::Held
}

/// The node's verdict in words, with the GPUs that moved when the node
/// (a sum) did not: two GPUs drifting apart cancel in the node.
pub fn node_words(node: &SoakRow, rows: &[&SoakRow]) -> String {
    let gpus_moved: Vec<String> = rows
        .iter()
        .filter(|r| r.gpu != NODE)
        .filter_map(|r| match verdict(r) {
            Verdict::Moved(why) => Some(format!("{} moved ({why})", r.gpu)),
            _ => None,
        })
        .collect();
    match verdict(node) {
        Verdict::Moved(why) => format!("**moved**: {why}"),
        Verdict::NotJudged(why) => format!("**not judged**: {why}"),
        Verdict::Held if gpus_moved.is_empty() => format!(
            "held: no trend distinguishable from zero, and the last window within {:.0} % of the first",
            MOVED_SHARE * 100.0
        ),
        Verdict::Held => format!("held as a sum, **but {}**", gpus_moved.join("; ")),
    }
}

fn share(v: Option<f64>) -> String {
    v.map(|v| format!("{:.0} %", v * 100.0))
        .unwrap_or_else(|| "–".into())
}

/// Appends the section (nothing without a soak rung).
pub fn write_section(s: &mut String, rows: &[SoakRow]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## Soak (GPU draw only)\n");
    let mut rungs: Vec<u32> = rows.iter().map(|r| r.rung_id).collect();
    rungs.dedup();
    for id in rungs {
        let of: Vec<&SoakRow> = rows.iter().filter(|r| r.rung_id == id).collect();
        let Some(node) = of.iter().find(|r| r.gpu == NODE) else {
            continue;
        };
        if !node.incomplete.is_empty() {
            let _ = writeln!(
                s,
                "**INCOMPLETE SOAK: {}** — the figures cover the time it ran.\n",
                node.incomplete
            );
        }
        let _ = writeln!(
            s,
            "Rung `{}`: {:.0} s measured of {:.0} s planned; first and last window {:.0} s; drift is the least-squares slope through 10 s means, W per 10 min, with its 95 % interval (widened for autocorrelated residuals).\n",
            code(&node.rung),
            node.window_s,
            node.planned_s,
            node.edge_s
        );
        let _ = writeln!(
            s,
            "- **Node:** {} W in the first window, {} W in the last ({} W); drift {} W/10 min — {}.",
            o(node.first_mean_w),
            o(node.last_mean_w),
            node.change_w.map_or("–".into(), |c| format!("{c:+.1}")),
            drift_cell(node),
            node_words(node, &of)
        );
        let _ = writeln!(
            s,
            "- **Thermal equilibrium:** {}.",
            match node.equilibrium_s {
                Some(t) => format!("after {t:.0} s, {}", node.equilibrium),
                None => node.equilibrium.to_string(),
            }
        );
        let _ = writeln!(
            s,
            "- **Throttle onset:** {}.",
            match node.throttle_onset_s {
                Some(t) => format!("{t:.1} s into the soak ({})", node.throttle_bits),
                None => "none: no slowdown bit other than sw_power_cap was read".into(),
            }
        );
        let _ = writeln!(
            s,
            "\n| GPU | first W | last W | drift W/10 min [95 %] | equilibrium s | temp start→end °C | SM clock start→end MHz | throttle onset | under power cap | under thermal caps |\n|---|---|---|---|---|---|---|---|---|---|"
        );
        for r in &of {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {}→{} | {}→{} | {} | {} | {} |",
                if r.gpu == NODE {
                    "**node**".to_string()
                } else {
                    text(&r.gpu)
                },
                o(r.first_mean_w),
                o(r.last_mean_w),
                drift_cell(r),
                r.equilibrium_s
                    .map_or_else(|| "not reached".into(), |t| format!("{t:.0}")),
                o(r.temp_start_c),
                o(r.temp_end_c),
                o(r.sm_clock_start_mhz),
                o(r.sm_clock_end_mhz),
                r.throttle_onset_s
                    .map_or_else(|| "–".into(), |t| format!("{t:.1} s {}", r.throttle_bits)),
                share(r.power_cap_share),
                share(r.thermal_cap_share),
            );
        }
        let _ = writeln!(
            s,
            "\nThe node row: power summed over the GPUs; temperatures the hottest GPU's; SM clock the GPUs' mean; cap shares the most of any GPU; equilibrium the slowest GPU's; onset the earliest.\n"
        );
    }
    let _ = writeln!(
        s,
        "![soak: power, temperature and SM clock]({})\n\nEvery figure: report/{}.",
        PlotFile::Soak.svg_link(),
        ReportFile::SoakCsv.file_name()
    );
}
