//! The answer block's supply and grid lines: the excursion envelope
//! against the declared `[supply]`, the node's ramp rates, dynamic range
//! and band share against `[grid]`, and what each mitigation buys (the
//! same figures) and costs (energy), per period and mode. Every figure
//! names its rung; the worst rung stands beside the verdict.

use super::cells::code;
use super::mitigation::in_words;
use powerlab_analysis::envelope::{Envelope, Verdict};
use powerlab_analysis::grid::{GridFigure, GridMetrics, GridVerdict, Metric, Window};
use powerlab_analysis::mitigation::{Mitigation, MitigationRow};
use powerlab_samples::format::fmt_ms;
use std::fmt::Write;

/// The envelope's windows the line names, ms.
const SUPPLY_WINDOWS_MS: [f64; 2] = [10.0, 1_000.0];

/// Appends the supply line: the loaded rungs (`loaded`: rung ids; an
/// idle rung is never the excursion), and each declared duration none of
/// them is long enough to judge named as not judged.
pub fn supply_line(s: &mut String, e: &Envelope, loaded: &[u32]) {
    supply_line_with(s, e, loaded, &|w| format!("{w:.0} W"));
}

/// [`supply_line`] with every power written by `power` (a prediction's
/// at its scale, `84.123 MW`).
pub fn supply_line_with(
    s: &mut String,
    e: &Envelope,
    loaded: &[u32],
    power: &dyn Fn(f64) -> String,
) {
    let worst = |w: f64| {
        e.rungs
            .iter()
            .filter(|r| loaded.contains(&r.rung_id))
            .filter_map(|r| {
                let p = r.points.iter().find(|p| p.window_ms == w)?;
                Some((p.max_mean_w?, r.label.as_str()))
            })
            .max_by(|a, b| a.0.total_cmp(&b.0))
    };
    let held: Vec<String> = SUPPLY_WINDOWS_MS
        .iter()
        .filter_map(|w| {
            worst(*w).map(|(v, l)| format!("{} over {} (`{}`)", power(v), fmt_ms(*w) + " ms", l))
        })
        .collect();
    if held.is_empty() {
        return;
    }
    let verdict = match &e.supply {
        None => "no `[supply]` declared: nothing judged".to_string(),
        Some(supply) => {
            let mut v = supply_verdict(e, loaded, power);
            let unjudged: Vec<String> = supply
                .excursions
                .iter()
                .filter(|x| {
                    !e.rungs
                        .iter()
                        .filter(|r| loaded.contains(&r.rung_id))
                        .any(|r| {
                            r.points
                                .iter()
                                .any(|p| p.window_ms >= x.duration_ms && p.margin_w.is_some())
                        })
                })
                .map(|x| format!("{} ms", fmt_ms(x.duration_ms)))
                .collect();
            if !unjudged.is_empty() {
                let _ = write!(
                    v,
                    "; **not judged** at {}: no loaded rung lasts that long (`envelope.csv`)",
                    unjudged.join(", ")
                );
            }
            v
        }
    };
    let _ = writeln!(
        s,
        "- **Supply (excursion envelope):** highest mean {}; {verdict}.",
        held.join(", ")
    );
}

/// Against the declared supply: the worst margin over every judged point
/// of the loaded rungs.
fn supply_verdict(e: &Envelope, loaded: &[u32], power: &dyn Fn(f64) -> String) -> String {
    let judged = e
        .rungs
        .iter()
        .filter(|r| loaded.contains(&r.rung_id))
        .flat_map(|r| {
            r.points.iter().filter_map(move |p| {
                Some((p.margin_w?, p.window_ms, p.verdict()?, r.label.as_str()))
            })
        });
    let fails = judged.clone().filter(|x| x.2 == Verdict::Fail).count();
    match judged.min_by(|a, b| a.0.total_cmp(&b.0)) {
        None => "no stated point lies within the declared durations".into(),
        Some((m, w, _, label)) if fails > 0 => format!(
            "✘ {fails} point(s) over the declared limit, the worst {} over it at {} ms in `{label}`",
            power(-m),
            fmt_ms(w)
        ),
        Some((m, w, _, label)) => format!(
            "✔ every stated point within the declared limit, the closest {} under it at {} ms in `{label}`",
            power(m),
            fmt_ms(w)
        ),
    }
}

/// A grid figure in words: `≥ 45.2 kW/s ✘ (limit 10.0)`.
pub fn figure(f: &GridFigure) -> String {
    let Some(v) = f.value else {
        return "not measured".into();
    };
    let (scale, unit) = match f.metric {
        Metric::RampUp | Metric::RampDown | Metric::RiseOver(_) | Metric::FallOver(_) => {
            (1e-3, " kW/s")
        }
        Metric::DynamicRange => (1.0, " W"),
        Metric::DynamicRangePct | Metric::BandShare => (1.0, " %"),
    };
    let ge = if f.lower_bound { "≥ " } else { "" };
    let pm = f
        .plus_minus
        .map_or(String::new(), |p| format!(" ± {:.1}", p * scale));
    let verdict = match (f.verdict, f.limit) {
        (GridVerdict::Pass, Some(l)) => format!(" ✔ (limit {:.1}{unit})", l * scale),
        (GridVerdict::Fail, Some(l)) => format!(" ✘ (limit {:.1}{unit})", l * scale),
        (GridVerdict::Undetermined, Some(l)) => {
            format!(" ? (limit {:.1}{unit}, a lower bound below it)", l * scale)
        }
        (GridVerdict::Undecided, Some(l)) => {
            format!(
                " undecided (limit {:.1}{unit}, inside the interval)",
                l * scale
            )
        }
        _ => String::new(),
    };
    if let Some(hi) = f.upper {
        return format!("{:.1}–{:.1}{unit}{verdict}", v * scale, hi * scale);
    }
    format!("{ge}{:.1}{pm}{unit}{verdict}", v * scale)
}

/// The figure of `metric` of rung `id`.
fn of(g: &GridMetrics, id: u32, metric: Metric) -> Option<&GridFigure> {
    g.rungs
        .iter()
        .find(|r| r.rung_id == id)?
        .figures
        .iter()
        .find(|f| f.metric == metric)
}

/// Appends the grid line: per metric, the worst plain duty rung.
pub fn grid_line(s: &mut String, g: &GridMetrics, plain_duty: &[u32]) {
    grid_line_for(s, g, plain_duty, "node, worst plain duty rung", &figure);
}

/// Appends the grid line: per metric, the worst of the rungs `ids`, the
/// line's heading naming them as `scope` (`node, worst plain duty rung`;
/// a prediction's `the job`) and each figure written by `cell` ([`figure`]
/// or a prediction's at its scale).
pub fn grid_line_for(
    s: &mut String,
    g: &GridMetrics,
    ids: &[u32],
    scope: &str,
    cell: &dyn Fn(&GridFigure) -> String,
) {
    let plain_duty = ids;
    let mut parts = Vec::new();
    for metric in [
        Metric::RampUp,
        Metric::RampDown,
        Metric::RiseOver(Window::Ms10),
        Metric::FallOver(Window::Ms10),
        Metric::RiseOver(Window::S1),
        Metric::FallOver(Window::S1),
        Metric::BandShare,
    ] {
        let worst = plain_duty
            .iter()
            .filter_map(|id| {
                of(g, *id, metric)
                    .filter(|f| f.value.is_some())
                    .map(|f| (id, f))
            })
            .max_by(|a, b| {
                a.1.value
                    .unwrap_or(0.0)
                    .total_cmp(&b.1.value.unwrap_or(0.0))
            });
        if let Some((id, f)) = worst {
            let label = g
                .rungs
                .iter()
                .find(|r| r.rung_id == *id)
                .map_or("", |r| r.label.as_str());
            parts.push(format!("{} {} in {}", words(metric), cell(f), code(label)));
        }
    }
    if parts.is_empty() {
        if g.spec.is_some() {
            let _ = writeln!(
                s,
                "- **Grid:** `[grid]` declared, not judged here: no plain duty rung with a figure (each rung's figures and verdicts are in `grid.csv`)."
            );
        }
        return;
    }
    let spec = if g.spec.is_some() {
        "against `[grid]`"
    } else {
        "no `[grid]` declared, nothing judged"
    };
    let _ = writeln!(
        s,
        "- **Grid ({scope}; {spec}; band {}–{} Hz):** {}.",
        g.band_hz[0],
        g.band_hz[1],
        parts.join("; ")
    );
}

/// The swing's change against the plain rung, with its interval:
/// ` (−36 ± 4 %)`.
fn cut_text(r: &MitigationRow) -> String {
    match (r.swing_cut_pct, r.swing_cut_ci95_pct) {
        (Some(c), Some(h)) => format!(" ({:+.0} ± {h:.0} %)", -c),
        (Some(c), None) => format!(" ({:+.0} %)", -c),
        _ => String::new(),
    }
}

/// The energy cost in words; a ramp-up's is not a cost (it runs in place
/// of the work, which is not done slower but less).
fn energy_text(r: &MitigationRow) -> String {
    if r.withheld.is_some() {
        return "energy not credited".into();
    }
    if r.spec.ramp_up_w_per_s.is_some() {
        return "energy not a cost".into();
    }
    match r.energy_pct {
        Some(p) => format!("{p:+.1} ± {:.1} % energy", r.energy_ci95_pct.unwrap_or(0.0)),
        None => "energy not measured".into(),
    }
}

/// A metric in words.
fn words(m: Metric) -> &'static str {
    match m {
        Metric::RampUp => "ramp up (10–90 %)",
        Metric::RampDown => "ramp down (10–90 %)",
        Metric::RiseOver(Window::Ms1) => "fastest rise over 1 ms",
        Metric::RiseOver(Window::Ms10) => "fastest rise over 10 ms",
        Metric::RiseOver(Window::Ms100) => "fastest rise over 100 ms",
        Metric::RiseOver(Window::S1) => "fastest rise over 1 s",
        Metric::FallOver(Window::Ms1) => "fastest fall over 1 ms",
        Metric::FallOver(Window::Ms10) => "fastest fall over 10 ms",
        Metric::FallOver(Window::Ms100) => "fastest fall over 100 ms",
        Metric::FallOver(Window::S1) => "fastest fall over 1 s",
        Metric::DynamicRange => "dynamic range",
        Metric::DynamicRangePct => "dynamic range",
        Metric::BandShare => "band share",
    }
}

/// Appends one line per plain rung that has mitigations: its swing, then
/// what each mitigation brings it to and costs in energy (their ramp
/// rates and the rest are in the Mitigation section).
pub fn mitigation_lines(s: &mut String, m: &Mitigation) {
    let mut plains: Vec<&str> = Vec::new();
    for r in &m.rows {
        if let Some(p) = r.plain_label.as_deref()
            && !plains.contains(&p)
        {
            plains.push(p);
        }
    }
    for plain in plains {
        let rows: Vec<_> = m
            .rows
            .iter()
            .filter(|r| r.plain_label.as_deref() == Some(plain))
            .collect();
        let first = rows[0];
        let mut line = format!(
            "- **Mitigations at {} ms {}** (against `{}`, swing {} W)",
            fmt_ms(first.period_ms),
            first.mode.as_str().replace('_', " "),
            code(plain),
            first
                .plain_swing_w
                .map_or("–".into(), |w| format!("{w:.0}")),
        );
        for (i, r) in rows.iter().enumerate() {
            let _ = write!(
                line,
                "{} {}: swing {} W{}, {}",
                if i == 0 { ":" } else { ";" },
                in_words(&r.spec),
                r.swing_w.map_or("–".into(), |w| format!("{w:.0}")),
                cut_text(r),
                energy_text(r)
            );
            if !r.caveats.is_empty() {
                let _ = write!(line, " (**{}**)", r.caveats.join("; "));
            }
        }
        let _ = writeln!(s, "{line}.");
    }
}
