//! The grid study's section of `report.md` ("What the grid sees") and its
//! verdict rows: the largest |Δf|, the fastest RoCoF over 500 ms and the
//! steady oscillation's peak-to-peak (frequency, tie) of the headline
//! scenario against `[grid.system]`'s limits, from the simulator where
//! it ran, else the screen.

use super::grid_files::limits_words;
use crate::Prediction;
use crate::grid_system::metrics::Response;
use crate::grid_system::{GridStudy, mode_words, screen::ModeKind};
use powerlab_analysis::grid::GridVerdict;
use powerlab_collate::report::verdicts::{Quantity, SourceKey, SpecItem, SpecRow, SpecSource};
use powerlab_rundir::PlotFile;
use powerlab_rundir::files::predict::{GRID_RESPONSE_CSV, SAFE_GPUS_CSV};
use std::fmt::Write;

/// The headline's figures the verdicts rest on: the simulator's where
/// every window of it ran, else the screen's; and which.
fn deciding(g: &GridStudy) -> Option<(Vec<&Response>, &'static str)> {
    let head = &g.scenarios.first()?.label;
    let idx: Vec<usize> = (0..g.windows.len())
        .filter(|i| &g.windows[*i].scenario == head)
        .collect();
    let sim: Option<Vec<&Response>> = idx
        .iter()
        .map(|i| g.simulated.get(*i).and_then(|r| r.as_ref().ok()))
        .collect();
    if let Some(v) = sim.filter(|v| !v.is_empty()) {
        return Some((v, "andes"));
    }
    let s = g.screen.as_ref()?;
    let screen: Option<Vec<&Response>> = idx.iter().map(|i| s.windows.get(*i)).collect();
    screen.map(|v| (v, "screen"))
}

/// The verdict rows: one per declared limit (not measured where there is
/// no figure).
pub fn rows(p: &Prediction) -> Vec<SpecRow> {
    let Some(g) = &p.grid_system else {
        return Vec::new();
    };
    // Without a figure (no modal model for the case and bus, and no
    // simulator) every declared limit still gets its row, not measured:
    // a limit left out of the table reads as one passed.
    let (rs, source) = deciding(g).unwrap_or((Vec::new(), "neither a modal model nor ANDES"));
    let head = g.scenarios.first().map_or("", |s| s.label.as_str());
    type Pick = fn(&Response) -> Option<f64>;
    let sys = &g.system;
    let items: [(&str, Quantity, Option<f64>, Pick, &str); 4] = [
        (
            "Grid: largest frequency deviation at the bus or the centre of inertia",
            Quantity::Millihertz,
            sys.max_df_mhz,
            |r| Some(r.max_df_bus_mhz.max(r.max_df_coi_mhz)),
            "max_df_bus_mhz",
        ),
        (
            "Grid: fastest RoCoF over 500 ms (bus or centre of inertia)",
            Quantity::HzPerS,
            sys.max_rocof_hz_per_s,
            |r| Some(r.rocof_bus_500ms_hz_per_s.max(r.rocof_coi_500ms_hz_per_s)),
            "rocof_bus_500ms_hz_per_s",
        ),
        (
            "Grid: steady oscillation, peak-to-peak frequency",
            Quantity::Millihertz,
            sys.max_osc_pp_mhz,
            |r| {
                r.osc_pp_bus_mhz
                    .zip(r.osc_pp_coi_mhz)
                    .map(|(a, b)| a.max(b))
            },
            "osc_pp_bus_mhz",
        ),
        (
            "Grid: steady oscillation, peak-to-peak on the tie",
            Quantity::Megawatt,
            sys.max_osc_pp_tie_mw,
            |r| r.osc_pp_tie_mw,
            "osc_pp_tie_mw",
        ),
    ];
    items
        .into_iter()
        .filter_map(|(item, q, limit, pick, key)| {
            let limit = limit?;
            let figures: Vec<f64> = rs.iter().filter_map(|r| pick(r)).collect();
            let value = figures.iter().copied().reduce(f64::max);
            let mut row = SpecRow::empty(SpecItem::Other(item.into()), q, Some(limit));
            row.value = value;
            row.margin = value.map(|v| limit - v);
            row.verdict = match value {
                Some(v) if v <= limit => GridVerdict::Pass,
                Some(_) => GridVerdict::Fail,
                None => GridVerdict::NotMeasured,
            };
            row.judged = figures.len();
            row.failed = figures.iter().filter(|v| **v > limit).count();
            row.source = Some(SpecSource {
                file: GRID_RESPONSE_CSV.into(),
                row: head.to_string(),
                key: SourceKey::Other(format!("{key} ({source})")),
            });
            Some(row)
        })
        .collect()
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.filter(|x| x.is_finite())
        .map_or_else(|| "–".into(), |x| format!("{x:.digits$}"))
}

/// Appends the "What the grid sees" section (nothing without a
/// `[grid.system]`).
pub fn section(s: &mut String, p: &Prediction) {
    let Some(g) = &p.grid_system else {
        return;
    };
    let sys = &g.system;
    let _ = writeln!(
        s,
        "\n## What the grid sees\n\nThe facility as a constant-power load at bus {} of `{}` (`[grid.system]`), {} GPUs at a {:.3} s iteration. The screen plays each window through the case's modal model; the simulator (ANDES) plays the same windows in the time domain; `{GRID_RESPONSE_CSV}` holds both (source `screen`, `andes`) and every lifecycle event's swing-equation RoCoF (source `swing`).",
        sys.bus, sys.case, g.gpus, g.period_s
    );
    for n in &g.notes {
        let _ = writeln!(s, "\n- {n}");
    }
    if let Some((m, src)) = &g.model {
        let _ = writeln!(
            s,
            "\nModal model: {src}; f0 {} Hz, Σ H·S {:.0} MW·s over {} machines{}.",
            m.f0_hz,
            m.sum_hs_mws,
            m.machines.len(),
            m.tie.as_ref().map_or_else(
                || ", no tie declared".to_string(),
                |t| format!(", tie {} ({:.0} MW)", t.lines.join(" + "), t.p0_mw)
            )
        );
    }
    if let Some(pb) = &g.playback {
        let _ = writeln!(
            s,
            "\nSimulator: ANDES {} (powerlab_andes {}, Python {}), {} windows in one call, {:.0} s wall; settings: `{}`.",
            pb.version.andes,
            pb.version.powerlab_andes,
            pb.version.python,
            g.windows.len(),
            pb.wall_s,
            pb.play.settings
        );
    }
    if let Some(sc) = &g.screen {
        screen_tables(s, g, sc);
    }
    windows_table(s, g);
}

fn screen_tables(s: &mut String, g: &GridStudy, sc: &crate::grid_system::Screen) {
    let _ = writeln!(
        s,
        "\n| mode | band (Hz) | bus participation | peak gain: bus mHz/MW | COI mHz/MW | tie MW/MW |\n|---|---|---|---|---|---|"
    );
    for x in sc.modes.iter().filter(|x| x.kind != ModeKind::Minor) {
        let _ = writeln!(
            s,
            "| {} | {:.3}–{:.3} | {:.2} | {:.4} | {:.4} | {:.3} |",
            mode_words(x),
            x.band_hz[0],
            x.band_hz[1],
            x.bus_participation,
            x.peak_gain[0],
            x.peak_gain[1],
            x.peak_gain[2]
        );
    }
    let _ = writeln!(
        s,
        "\nThe steady oscillation at the job's period and GPUs (screen), the spec's bands' shares of the load's fluctuation, and the safe GPU count over 0.3–10 s (`{SAFE_GPUS_CSV}`; limits: {}):\n\n| scenario | p-p bus (mHz) | p-p COI (mHz) | p-p tie (MW) | harmonic in a mode's band | 0.1–2 / 2–20 / 20–30 Hz (%) | fewest safe GPUs (at s) | safe GPUs at the job's period | retuned within ± {} % |\n|---|---|---|---|---|---|---|---|---|",
        limits_words(g),
        g.retune_pct
    );
    for (row, rt) in sc.steady.iter().zip(&sc.retune) {
        let bands: Vec<String> = row
            .bands
            .iter()
            .map(|(_, b)| match b {
                Some((lo, hi)) if (hi - lo).abs() < 0.05 => format!("{lo:.1}"),
                Some((lo, hi)) => format!("{lo:.1}…{hi:.1}"),
                None => "–".into(),
            })
            .collect();
        let mine: Vec<_> = sc
            .safe
            .iter()
            .filter(|r| r.scenario == row.scenario)
            .collect();
        let fewest = mine
            .iter()
            .filter_map(|r| r.safe_gpus.map(|n| (n, r.period_s)))
            .min_by_key(|x| x.0);
        let at_job = mine
            .iter()
            .min_by(|a, b| {
                (a.period_s - g.period_s)
                    .abs()
                    .total_cmp(&(b.period_s - g.period_s).abs())
            })
            .and_then(|r| r.safe_gpus);
        let _ = writeln!(
            s,
            "| {} | {:.2} | {:.2} | {} | {} | {} | {} | {} | {:.3} s: {:.1}× less{} |",
            row.scenario,
            row.pp[0],
            row.pp[1],
            opt(Some(row.pp[2]), 2),
            row.danger.as_deref().unwrap_or("none"),
            bands.join(" / "),
            fewest.map_or_else(|| "–".into(), |(n, t)| format!("{n} ({t:.3} s)")),
            at_job.map_or_else(|| "–".into(), |n| n.to_string()),
            rt.to_period_s,
            rt.ratio(),
            if rt.safe {
                ", within every limit"
            } else {
                ", still over a limit"
            }
        );
    }
    if let Some(r) = &sc.resonance {
        let _ = writeln!(
            s,
            "\nAt the inter-area mode's resonance ({:.3} s) the headline's oscillation is {:.2} mHz p-p at the bus ({} MW on the tie); one second away ({:.3} s) {:.2} mHz ({} MW): {:.1}× less.",
            r.period_s,
            r.pp_at[0],
            opt(Some(r.pp_at[2]), 2),
            r.period_s + 1.0,
            r.pp_away[0],
            opt(Some(r.pp_away[2]), 2),
            r.pp_at[0] / r.pp_away[0]
        );
    }
    if g.limits.pp_mhz.is_some() || g.limits.pp_tie_mw.is_some() {
        let _ = writeln!(
            s,
            "\n![Largest GPU count within the steady-oscillation limits against the iteration period]({})",
            PlotFile::SafeGpus.svg_link()
        );
    }
}

fn windows_table(s: &mut String, g: &GridStudy) {
    let _ = writeln!(
        s,
        "\n| scenario | window | source | load step (MW) | max Δf bus / COI (mHz) | RoCoF 100 / 500 ms, bus (Hz/s) | swing RoCoF (Hz/s) | p-p bus (mHz) / tie (MW) | settling (s) |\n|---|---|---|---|---|---|---|---|---|"
    );
    for r in super::grid_files::response_rows(g)
        .iter()
        .filter(|r| r.source != super::grid_files::Source::Swing)
    {
        let src = format!("{:?}", r.source).to_lowercase();
        if let Some(e) = r.error {
            let _ = writeln!(
                s,
                "| {} | {} | {src} | – | failed: {e} | | | | |",
                r.scenario, r.window
            );
            continue;
        }
        let _ = writeln!(
            s,
            "| {} | {} | {src} | {} | {} / {} | {} / {} | {} | {} / {} | {}{} |",
            r.scenario,
            r.window,
            opt(r.load_step_mw, 2),
            opt(r.max_df_bus_mhz, 2),
            opt(r.max_df_coi_mhz, 2),
            opt(r.rocof_bus_100ms_hz_per_s, 4),
            opt(r.rocof_bus_500ms_hz_per_s, 4),
            opt(r.rocof_swing_hz_per_s, 4),
            opt(r.osc_pp_bus_mhz, 2),
            opt(r.osc_pp_tie_mw, 2),
            if r.settled == Some(false) { "≥ " } else { "" },
            opt(r.settling_s, 1)
        );
    }
    let _ = writeln!(
        s,
        "\n![Δf at the facility's bus in each played window, screen and simulator]({})",
        PlotFile::GridResponse.svg_link()
    );
}
