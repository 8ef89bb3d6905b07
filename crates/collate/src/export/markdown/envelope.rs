//! The excursion envelope's section of `report.md`: per rung the highest
//! mean node power over 10 ms, 100 ms, 1 s and 10 s where stated, the
//! declared supply, and every point over its limit.

use super::cells::{o, text};
use powerlab_analysis::envelope::{Envelope, Verdict};
use powerlab_samples::format::fmt_ms;
use std::fmt::Write;

/// The window lengths the section shows, ms (`envelope.csv` has them all).
const SHOWN_MS: [f64; 4] = [10.0, 100.0, 1_000.0, 10_000.0];

/// Appends "Excursion envelope": one row per rung, the supply as declared
/// and every failing point with its margin.
pub fn write_section(s: &mut String, e: &Envelope) {
    if e.rungs.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## Excursion envelope (GPU draw only)\n");
    let _ = writeln!(
        s,
        "The highest mean power (the node's, or the rack's sum) over any window of each length inside the rung's measured window (every length from 1 ms to 10 s in `envelope.csv`). Duty rungs with a composed cycle: from the cycle, down to its grid step. Other rungs: from the buffered sum, never for windows shorter than the {} ms one sample stands for. – : not stated (longer than the rung, or shorter than its source resolves).\n",
        fmt_ms(e.sample_window_ms)
    );
    let _ = writeln!(
        s,
        "| rung | source | finest window ms | 10 ms W | 100 ms W | 1 s W | 10 s W |\n|---|---|---|---|---|---|---|"
    );
    for r in &e.rungs {
        let cells: Vec<String> = SHOWN_MS
            .iter()
            .map(|w| {
                o(r.points
                    .iter()
                    .find(|p| p.window_ms == *w)
                    .and_then(|p| p.max_mean_w))
            })
            .collect();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} |",
            text(&r.label),
            r.source.name(),
            fmt_ms(r.finest_ms),
            cells.join(" | ")
        );
    }
    write_supply(s, e);
}

/// Appends the declared supply and every point over its limit.
fn write_supply(s: &mut String, e: &Envelope) {
    let Some(supply) = &e.supply else {
        let _ = writeln!(
            s,
            "\nNo `[supply]` declared in the campaign: no point is judged."
        );
        return;
    };
    let points: Vec<String> = supply
        .excursions
        .iter()
        .map(|x| format!("{:.0} W over {} ms", x.watts, fmt_ms(x.duration_ms)))
        .collect();
    let _ = writeln!(
        s,
        "\nSupply as declared: rated {}; excursions {} (between them the limit is interpolated, linear in log duration; outside them none).",
        supply
            .rated_w
            .map_or_else(|| "not stated".to_string(), |w| format!("{w:.0} W")),
        if points.is_empty() {
            "none".to_string()
        } else {
            points.join(", ")
        }
    );
    let failing: Vec<String> = e
        .rungs
        .iter()
        .flat_map(|r| {
            r.points
                .iter()
                .filter(|p| p.verdict() == Some(Verdict::Fail))
                .map(move |p| {
                    format!(
                        "- {}, {} ms: {} W against a limit of {} W (margin {} W)",
                        text(&r.label),
                        fmt_ms(p.window_ms),
                        o(p.max_mean_w),
                        o(p.limit_w),
                        o(p.margin_w)
                    )
                })
        })
        .collect();
    if failing.is_empty() {
        let _ = writeln!(s, "\nEvery stated point is within the declared limit.");
    } else {
        let _ = writeln!(
            s,
            "\n**Over the declared limit:**\n\n{}",
            failing.join("\n")
        );
    }
}
