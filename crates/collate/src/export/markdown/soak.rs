//! The soak section of `report.md`: did the node hold its power over the
//! soak, or drift; when the GPUs reached thermal equilibrium; which GPU
//! throttled first and why; the clocks at the start and the end.

use super::cells::{code, o, text};
use powerlab_analysis::soak::{MOVED_SHARE, NODE, SoakRow, SoakVerdict};
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

/// The node's verdict in words ([`SoakRow::verdict`], judged by the
/// analysis), with the GPUs that moved when the node (a sum) did not.
pub fn node_words(node: &SoakRow) -> String {
    match &node.verdict {
        SoakVerdict::Moved(why) => format!("**moved**: {why}"),
        SoakVerdict::NotJudged(why) => format!("**not judged**: {why}"),
        SoakVerdict::Held(gpus_moved) if gpus_moved.is_empty() => format!(
            "held: no trend distinguishable from zero, and the last window within {:.0} % of the first",
            MOVED_SHARE * 100.0
        ),
        SoakVerdict::Held(gpus_moved) => {
            let moved: Vec<String> = gpus_moved
                .iter()
                .map(|(gpu, why)| format!("{gpu} moved ({why})"))
                .collect();
            format!("held as a sum, **but {}**", moved.join("; "))
        }
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
            node_words(node)
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
