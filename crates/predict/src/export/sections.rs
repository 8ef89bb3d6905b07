//! `report.md`'s tables after the answer: the scenarios, the excursion
//! envelope (scenario × window, against the `[supply]`), the grid metrics
//! (the run report's figure cells with their verdicts), the spectrum's
//! bands, and the schedule as validated.

use super::super::Prediction;
use super::super::figures::Estimate;
use super::units::fmt_energy_mwh;
use powerlab_analysis::envelope::{EnvelopePoint, Verdict};
use powerlab_analysis::grid::{GridFigure, GridVerdict, Metric};
use powerlab_collate::render::text;
use powerlab_samples::format::{fmt_ms, fmt_power, fmt_power_pm, fmt_power_signed};
use std::fmt::Write;

/// The envelope's windows the table shows, ms (`envelope.csv` has them
/// all).
const SHOWN_MS: [f64; 5] = [10.0, 100.0, 1_000.0, 2_000.0, 10_000.0];

/// The spectrum's bands the table shows: at least this share, %.
const SHOWN_SHARE_PCT: f64 = 1.0;

fn est(e: Estimate) -> String {
    fmt_power_pm(e.value, e.plus_minus)
}

/// The sets behind a scenario's ± and their mode: `2 (in phase)`.
fn sets_cell(sc: &crate::Scenario) -> String {
    format!("{} ({})", sc.sets, sc.sets_from.replace('_', " "))
}

/// Appends "Scenarios": one row per scenario, then each one's notes.
pub(super) fn scenarios(s: &mut String, p: &Prediction) {
    let _ = writeln!(
        s,
        "\n## Scenarios\n\nThe schedule's own first; then the plain wave, every measured mitigation and the schedule's stagger. Every figure over the {} s drawn; ± 95 % (`scenarios.csv`).\n",
        fmt_ms(p.schedule.output.span_s)
    );
    let _ = writeln!(
        s,
        "| id | scenario | mean | swing p90 − p10 | spread p99 − p1 | peak | lowest | energy | sets | swing cut vs plain | extra mean vs plain |\n|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for sc in &p.scenarios {
        let (cut, extra) = sc.vs_plain.map_or(("–".into(), "–".into()), |v| {
            (
                format!(
                    "{} ({:.0} %)",
                    fmt_power_signed(v.swing_cut_w.value, v.swing_cut_w.plus_minus),
                    v.swing_cut_pct
                ),
                fmt_power_signed(v.extra_mean_w.value, v.extra_mean_w.plus_minus),
            )
        });
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {cut} | {extra} |",
            sc.id,
            text(&sc.label),
            est(sc.mean_w),
            est(sc.swing_w),
            est(sc.spread_w),
            fmt_power(sc.levels.peak_w),
            fmt_power(sc.levels.min_w),
            fmt_energy_mwh(sc.energy_mwh),
            sets_cell(sc)
        );
    }
    let noted: Vec<String> = p
        .scenarios
        .iter()
        .skip(1)
        .flat_map(|sc| {
            sc.notes
                .iter()
                .map(move |n| format!("- {}: {n}", text(&sc.label)))
        })
        .collect();
    if !noted.is_empty() {
        let _ = writeln!(s, "\n{}", noted.join("\n"));
    }
}

/// An envelope cell: the figure in MW and its verdict, or a dash.
fn envelope_cell(pt: Option<&EnvelopePoint>) -> String {
    let Some((pt, w)) = pt.and_then(|pt| Some((pt, pt.max_mean_w?))) else {
        return "–".into();
    };
    match pt.verdict() {
        Some(Verdict::Pass) => format!("{} ✔", fmt_power(w)),
        Some(Verdict::Fail) => format!("**{} ✘**", fmt_power(w)),
        None => fmt_power(w),
    }
}

/// Appends "Excursion envelope": per scenario, the highest mean power over
/// each shown window and its verdict against the `[supply]`.
pub(super) fn envelope(s: &mut String, p: &Prediction) {
    let e = &p.envelope;
    let supply = match &e.supply {
        None => "No `[supply]` declared in the schedule: nothing is judged.".to_string(),
        Some(sup) => {
            let points: Vec<String> = sup
                .excursions
                .iter()
                .map(|x| format!("{} over {} ms", fmt_power(x.watts), fmt_ms(x.duration_ms)))
                .collect();
            format!(
                "Supply as declared: rated {}; excursions {} (interpolated linear in log duration between them). ✔ within, ✘ over the limit.",
                sup.rated_w.map_or_else(|| "not stated".into(), fmt_power),
                if points.is_empty() {
                    "none".into()
                } else {
                    points.join(", ")
                }
            )
        }
    };
    let _ = writeln!(
        s,
        "\n## Excursion envelope\n\nThe highest mean job power over any window of each length in the drawn waveform (every length in `envelope.csv`). {supply}\n"
    );
    let head: Vec<String> = SHOWN_MS
        .iter()
        .map(|w| format!("{} ms", fmt_ms(*w)))
        .collect();
    let _ = writeln!(
        s,
        "| scenario | {} |\n|---|{}",
        head.join(" | "),
        "---|".repeat(SHOWN_MS.len())
    );
    for r in &e.rungs {
        let cells: Vec<String> = SHOWN_MS
            .iter()
            .map(|w| envelope_cell(r.points.iter().find(|pt| pt.window_ms == *w)))
            .collect();
        let _ = writeln!(s, "| {} | {} |", text(&r.label), cells.join(" | "));
    }
}

/// Appends "Grid metrics": per scenario, each metric with its verdict.
pub(super) fn grid(s: &mut String, p: &Prediction) {
    let g = &p.grid;
    let spec = if g.spec.is_some() {
        "judged against the declared `[grid]` (✔ within, ✘ over, ? a lower bound below the limit)"
    } else {
        "no `[grid]` declared: nothing judged"
    };
    let _ = writeln!(
        s,
        "\n## Grid metrics\n\nThe job's ramp rates (from the expected iteration; `≥`: a lower bound at the measured cycles' resolution), dynamic range (max − min of the drawn waveform) and the share of its fluctuation in {}–{} Hz, for {} GPUs, {spec} (`grid.csv`).\n",
        g.band_hz[0], g.band_hz[1], g.gpus
    );
    let metrics = [
        Metric::RampUp,
        Metric::RampDown,
        Metric::DynamicRange,
        Metric::DynamicRangePct,
        Metric::BandShare,
    ];
    let _ = writeln!(
        s,
        "| scenario | ramp up | ramp down | dynamic range | range % of max | band share |\n|---|---|---|---|---|---|"
    );
    for r in &g.rungs {
        let cells: Vec<String> = metrics
            .iter()
            .map(|m| {
                r.figures
                    .iter()
                    .find(|f| f.metric == *m)
                    .map_or_else(|| "–".into(), grid_cell)
            })
            .collect();
        let _ = writeln!(s, "| {} | {} |", text(&r.label), cells.join(" | "));
    }
}

/// A grid figure at the job's scale with its verdict: rates in W/s at
/// their scale (`4000.000 MW/s`), the range in W at its scale, shares in %.
pub(super) fn grid_cell(f: &GridFigure) -> String {
    let Some(v) = f.value else {
        return "–".into();
    };
    let show = |x: f64, pm: Option<f64>| match f.metric {
        Metric::RampUp | Metric::RampDown | Metric::RiseOver(_) | Metric::FallOver(_) => {
            format!("{}/s", fmt_power_pm(x, pm))
        }
        Metric::DynamicRange => fmt_power_pm(x, pm),
        Metric::DynamicRangePct | Metric::BandShare => match pm {
            Some(p) => format!("{x:.1} ± {p:.1} %"),
            None => format!("{x:.1} %"),
        },
    };
    let ge = if f.lower_bound { "≥ " } else { "" };
    let verdict = match (f.verdict, f.limit) {
        (GridVerdict::Pass, Some(l)) => format!(" ✔ (limit {})", show(l, None)),
        (GridVerdict::Fail, Some(l)) => format!(" **✘** (limit {})", show(l, None)),
        (GridVerdict::Undetermined, Some(l)) => {
            format!(" ? (limit {}, a lower bound below it)", show(l, None))
        }
        (GridVerdict::Undecided, Some(l)) => {
            format!(" undecided (limit {}, inside the interval)", show(l, None))
        }
        _ => String::new(),
    };
    if let Some(hi) = f.upper {
        return format!("{}–{}{verdict}", show(v, None), show(hi, None));
    }
    format!("{ge}{}{verdict}", show(v, f.plus_minus))
}

/// Appends "Spectrum": the headline's bands holding at least
/// [`SHOWN_SHARE_PCT`] of the fluctuation.
pub(super) fn spectrum(s: &mut String, p: &Prediction) {
    let _ = writeln!(
        s,
        "\n## Spectrum\n\nThe headline waveform's fluctuation (variance, mean removed) in fifth-of-a-decade bands; those with at least {SHOWN_SHARE_PCT} % shown (every band in `spectrum.csv`).\n"
    );
    let _ = writeln!(s, "| band Hz | share % | RMS |\n|---|---|---|");
    for b in p.spectrum.iter().filter(|b| b.share_pct >= SHOWN_SHARE_PCT) {
        let _ = writeln!(
            s,
            "| {:.3}–{:.3} | {:.1} | {} |",
            b.lo_hz,
            b.hi_hz,
            b.share_pct,
            fmt_power(b.rms_w)
        );
    }
}

/// Appends "Schedule": the schedule as validated, JSON.
pub(super) fn schedule(s: &mut String, p: &Prediction) {
    let json = serde_json::to_string_pretty(&p.schedule)
        .unwrap_or_else(|e| format!("(the schedule could not be written: {e})"));
    let _ = writeln!(
        s,
        "\n## Schedule\n\nAs validated (every default filled in):\n\n```json\n{json}\n```"
    );
}
