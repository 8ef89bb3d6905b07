//! The per-GPU section of `report.md`: the GPUs flagged against their
//! peers first, then every GPU in every rung.

use super::cells::{o, text};
use powerlab_analysis::per_gpu::{ENERGY_FLAG, GpuRungRow, PEER_FLAG, PEER_FLAG_MIN_W};
use std::fmt::Write;

/// Appends the section.
pub fn write_section(s: &mut String, rows: &[GpuRungRow]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## Per GPU (GPU draw only)\n");
    let flagged: Vec<&GpuRungRow> = rows.iter().filter(|r| r.flag.is_some()).collect();
    if flagged.is_empty() {
        let _ = writeln!(
            s,
            "No GPU's mean differs from its peers' median by more than {:.0} % and {:.0} W in any rung (with its energy counter agreeing, where it has one).\n",
            PEER_FLAG * 100.0,
            PEER_FLAG_MIN_W
        );
    } else {
        let _ = writeln!(
            s,
            "**{} GPU-rung(s) differ from their peers' median by more than {:.0} % and {:.0} W:**\n",
            flagged.len(),
            PEER_FLAG * 100.0,
            PEER_FLAG_MIN_W
        );
        for (r, flag) in flagged.iter().filter_map(|r| Some((r, r.flag.as_ref()?))) {
            let _ = writeln!(s, "- {}: {flag}", text(&r.rung));
        }
        let _ = writeln!(s);
    }
    let gaps: Vec<&GpuRungRow> = rows.iter().filter(|r| !r.energy_flag.is_empty()).collect();
    let checked = rows.iter().filter(|r| r.energy_gap.is_some()).count();
    let worst = rows
        .iter()
        .filter_map(|r| r.energy_gap)
        .fold(0.0f64, |a, g| if g.abs() > a.abs() { g } else { a });
    if gaps.is_empty() {
        let _ = writeln!(
            s,
            "Energy cross-check: in {checked} GPU-rungs the energy counter and the buffered samples' integral agree within {:.0} % (largest gap {:+.2} %).\n",
            ENERGY_FLAG * 100.0,
            worst * 100.0
        );
    } else {
        let _ = writeln!(
            s,
            "**Energy cross-check: {} of {checked} GPU-rungs differ by more than {:.0} % (largest {:+.1} %):**\n",
            gaps.len(),
            ENERGY_FLAG * 100.0,
            worst * 100.0
        );
        for r in &gaps {
            let _ = writeln!(s, "- {}: {}", text(&r.rung), r.energy_flag);
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(
        s,
        "<details><summary>Every GPU in every rung ({} rows; also report/per_gpu.csv)</summary>\n",
        rows.len()
    );
    let _ = writeln!(
        s,
        "| rung | GPU | mean W | peak W | % of limit | vs peers | SM MHz | GPU °C max | HBM °C max | clock events | power cap | thermal cap | energy gap |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    let pct = |v: Option<f64>| {
        v.map(|x| format!("{:.1} %", x * 100.0))
            .unwrap_or_else(|| "—".into())
    };
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {}{} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            text(&r.rung),
            text(&r.gpu),
            if r.flag.is_none() { "" } else { " ⚠" },
            o(r.mean_w),
            o(r.peak_w),
            pct(r.mean_of_limit),
            r.vs_peers
                .map(|x| format!("{:+.1} %", x * 100.0))
                .unwrap_or_else(|| "—".into()),
            r.sm_clock_mhz
                .map(|x| format!("{x:.0}"))
                .unwrap_or_else(|| "—".into()),
            o(r.gpu_temp_max_c),
            o(r.mem_temp_max_c),
            if r.events.is_empty() {
                "—".to_string()
            } else {
                r.events.to_string()
            },
            pct(r.power_cap_share),
            pct(r.thermal_cap_share),
            r.energy_gap
                .map(|x| format!("{:+.2} %", x * 100.0))
                .unwrap_or_else(|| "—".into()),
        );
    }
    let _ = writeln!(s, "\n</details>");
}
