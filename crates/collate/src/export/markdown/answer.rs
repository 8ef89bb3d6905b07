//! The answer block at the top of `report.md`: what the people who size
//! the supply asked, in a few lines, from the tables below it. Every
//! figure is GPU draw only, and says which rung it comes from; where a
//! figure repeats, the worst case stands beside the typical one.

use super::cells::{capitalised, code, text};
use super::tables::NodeReport;
use powerlab_analysis::cycle::Bounds;
use powerlab_analysis::per_gpu::GpuRungRow;
use powerlab_analysis::sensor::model::ModelKind;
use powerlab_analysis::sensor::verdict::SensorReport;
use powerlab_analysis::summary::{Figure, PhaseCompare, RungSummary};
use powerlab_core::units::PeriodMs;
use powerlab_rundir::{Mode, PhaseKind};
use powerlab_samples::stats::median;
use std::fmt::Write;

/// The block's Markdown.
pub fn answer_block(a: &NodeReport<'_>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n## The answer (GPU draw only: board power of the GPUs, not the node's wall power)\n"
    );
    let gpus = &a.report.run.manifest.backend.gpus;
    let limit_sum: f64 = gpus.iter().map(|g| g.power_limit_w).sum();
    if let Some(line) = stopped_line(&a.report.run) {
        let _ = writeln!(s, "{line}");
    }
    power_lines(
        &mut s,
        &Scope {
            name: "node",
            limit_sum_w: limit_sum,
            gpus: gpus.len(),
        },
        &a.report.rungs,
        &a.report.compare,
    );
    // The supply and the grid are the verdict table's rows, above.
    super::answer_grid::mitigation_lines(&mut s, &a.node.mitigation);
    throttling_line(&mut s, &a.node.per_gpu, gpus.len());
    if let Some(line) = super::baseline::answer_line(&a.report.rungs, &a.node.per_gpu) {
        let _ = writeln!(s, "{line}");
    }
    soak_line(&mut s, a);
    chassis_line(&mut s, &a.report.rungs, &a.node.node_power.rungs);
    instrument_line(&mut s, &a.node.sensor);
    s
}

/// GPUs that left their peers, one entry each: in how many rungs, how
/// far, and its limiters.
fn flagged_gpus(per_gpu: &[GpuRungRow]) -> Vec<String> {
    let mut by_gpu: std::collections::BTreeMap<&str, Vec<&GpuRungRow>> = Default::default();
    for g in per_gpu.iter().filter(|g| g.flag.is_some()) {
        by_gpu.entry(g.gpu.as_str()).or_default().push(g);
    }
    by_gpu
        .iter()
        .map(|(gpu, rows)| {
            let d: Vec<f64> = rows.iter().filter_map(|r| r.vs_peers).collect();
            let (lo, hi) = d.iter().fold((f64::MAX, f64::MIN), |(l, h), x| (l.min(*x), h.max(*x)));
            let mut bits: Vec<&str> = rows
                .iter()
                .flat_map(|r| r.events.limiters().names())
                .collect();
            bits.sort();
            bits.dedup();
            let limit = rows
                .iter()
                .find(|r| r.flag.as_ref().is_some_and(|f| f.other_limit.is_some()))
                .and_then(|r| r.limit_w)
                .map_or(String::new(), |l| {
                    format!(" (its enforced limit, {l:.0} W, is not its peers')")
                });
            format!(
                "{gpu} is {:+.1} to {:+.1} % from its peers' median in {} rung(s){limit}, limiter bits: {}",
                lo * 100.0,
                hi * 100.0,
                rows.len(),
                if bits.is_empty() { "none".to_string() } else { bits.join(", ") }
            )
        })
        .collect()
}

/// The throttling line: GPUs that left their peers (`n_gpus`: the run's
/// GPUs) and those with a thermal or hardware slowdown bit.
fn throttling_line(s: &mut String, per_gpu: &[GpuRungRow], n_gpus: usize) {
    let flagged = flagged_gpus(per_gpu);
    let hw: Vec<String> = per_gpu
        .iter()
        .filter(|g| g.events.slowdown())
        .map(|g| {
            format!(
                "{} in `{}` ({})",
                text(&g.gpu),
                code(&g.rung),
                text(&g.events.to_string())
            )
        })
        .collect();
    let _ = writeln!(
        s,
        "- **Throttling:** {}",
        match (flagged.is_empty(), hw.is_empty()) {
            (true, true) if n_gpus < 2 => "one GPU, no peers to compare it with; no thermal or hardware slowdown bit was set (sw_power_cap under load is the board at its limit, as expected).".to_string(),
            (true, true) => "none: no GPU left its peers by more than 3 % and 10 W, no thermal or hardware slowdown bit (sw_power_cap under load is the board at its limit).".to_string(),
            _ => {
                let mut v = flagged;
                v.extend(hw);
                v.sort();
                v.dedup();
                let n = v.len();
                let shown: Vec<String> = v.into_iter().take(4).collect();
                format!("{}{}.", shown.join("; "), if n > 4 { format!("; and {} more in the Per GPU section", n - 4) } else { String::new() })
            }
        }
    );
}

/// The node at its own meter, where it has one: in the first sustained
/// rung it covers, else in the first rung.
fn chassis_line(
    s: &mut String,
    rungs: &[RungSummary],
    node_power: &[powerlab_analysis::node_power::NodePowerRung],
) {
    let sustained: Vec<&RungSummary> = rungs
        .iter()
        .filter(|r| r.rung.kind == PhaseKind::Sustained && r.mean_w.is_some())
        .collect();
    let chassis: Vec<&powerlab_analysis::node_power::NodePowerRung> = node_power
        .iter()
        .filter(|r| r.non_gpu_w.is_some())
        .collect();
    if let Some(r) = chassis
        .iter()
        .find(|r| sustained.iter().any(|s| s.rung.id == r.rung_id))
        .or(chassis.first())
    {
        let _ = writeln!(
            s,
            "- **The node at its own meter (`{}`):** {:.0} W in `{}`, of which {:.0} W ({:.0} %) is not GPU board power.",
            code(&r.source),
            r.chassis_mean_w.unwrap_or_default(),
            code(&r.rung),
            r.non_gpu_w.unwrap_or_default(),
            100.0 * r.non_gpu_share.unwrap_or_default()
        );
    }
}

/// The instrument line: what was summed, and the sensor model behind it.
fn instrument_line(s: &mut String, sensor: &SensorReport) {
    let _ = writeln!(
        s,
        "- **Instrument:** NVML's buffered power samples of every GPU, summed (duty rungs: the composed node cycle); sensor model {}: {}.",
        match sensor.model.kind {
            ModelKind::Calibrated => "calibrated on this run",
            ModelKind::Given => "given to the run",
            ModelKind::BuiltIn => "built in",
            ModelKind::Nominal => "nominal (this GPU model was never measured)",
        },
        sensor.model.source
    );
}

/// What the answer is about: a node, or a rack of them.
pub struct Scope<'a> {
    /// `node` or `rack`.
    pub name: &'a str,
    /// The GPUs' enforced limits at the start, summed, W.
    pub limit_sum_w: f64,
    /// GPUs in it.
    pub gpus: usize,
}

/// The lines a node and a rack share: the limit sum, sustained power, the
/// largest in-phase swing, what staggering saves, the worst transient.
pub fn power_lines(
    s: &mut String,
    scope: &Scope<'_>,
    rungs: &[RungSummary],
    compare: &[PhaseCompare],
) {
    limit_sum_line(s, scope);
    sustained_line(s, scope, rungs);
    swing_line(s, scope, rungs);
    staggering_line(s, rungs, compare);
    worst_transient_line(s, scope.limit_sum_w, rungs);
}

/// " (x % of the limit sum)", or nothing without a limit sum.
fn of_limit(limit_sum: f64, w: f64) -> String {
    if limit_sum > 0.0 {
        format!(" ({:.0} % of the limit sum)", 100.0 * w / limit_sum)
    } else {
        String::new()
    }
}

/// The scope's GPUs' enforced limits at the start, summed.
fn limit_sum_line(s: &mut String, scope: &Scope<'_>) {
    let (limit_sum, scope_cap) = (scope.limit_sum_w, capitalised(scope.name));
    let _ = writeln!(
        s,
        "- **{scope_cap} limit sum:** {limit_sum:.0} W ({} at the start).",
        if scope.gpus == 1 {
            "1 GPU's enforced limit".to_string()
        } else {
            format!("{} GPUs' enforced limits", scope.gpus)
        }
    );
}

/// Sustained power: typical and worst over several sustained rungs, or
/// the one rung's.
fn sustained_line(s: &mut String, scope: &Scope<'_>, rungs: &[RungSummary]) {
    let (limit_sum, name) = (scope.limit_sum_w, scope.name);
    let sustained: Vec<&RungSummary> = rungs
        .iter()
        .filter(|r| r.rung.kind == PhaseKind::Sustained && r.mean_w.is_some())
        .collect();
    let means: Vec<f64> = sustained.iter().filter_map(|r| r.mean_w).collect();
    match (median(&means), means.iter().copied().reduce(f64::max)) {
        (Some(typical), Some(worst)) if means.len() > 1 => {
            let _ = writeln!(
                s,
                "- **Sustained {name} power:** {typical:.0} W typical{} over {} sustained rungs, {worst:.0} W at most{}.",
                of_limit(limit_sum, typical),
                means.len(),
                of_limit(limit_sum, worst)
            );
        }
        (Some(m), _) => {
            let _ = writeln!(
                s,
                "- **Sustained {name} power:** {m:.0} W{} (rung `{}`).",
                of_limit(limit_sum, m),
                code(&sustained[0].rung.label)
            );
        }
        _ => {
            let _ = writeln!(
                s,
                "- **Sustained {name} power:** no sustained rung with a figure."
            );
        }
    }
}

/// The in-phase duty rungs with a swing figure, grouped as repeats of one
/// setting: period, phase and duty (two phases at one period are two
/// settings, never each other's repeats).
fn in_phase_by_period(rungs: &[RungSummary]) -> Vec<(f64, Vec<&RungSummary>)> {
    let mut by_period: Vec<(f64, Vec<&RungSummary>)> = Vec::new();
    let same = |a: &RungSummary, b: &RungSummary| {
        a.rung.phase == b.rung.phase && a.rung.duty == b.rung.duty
    };
    for r in rungs.iter().filter(|r| {
        r.rung.kind == PhaseKind::Duty
            && r.rung.mode == Mode::InPhase
            && r.swing_w.is_some()
            && !r.rung.smoothed()
    }) {
        let p = r.rung.period_ms.map(PeriodMs::ms).unwrap_or(0.0);
        match by_period
            .iter_mut()
            .find(|(q, v)| (q - p).abs() < 1e-9 && same(v[0], r))
        {
            Some((_, v)) => v.push(r),
            None => by_period.push((p, vec![r])),
        }
    }
    by_period
}

/// The largest in-phase swing: the worst repeat of the period that swung
/// most, with its interval and the median of its repeats.
fn swing_line(s: &mut String, scope: &Scope<'_>, rungs: &[RungSummary]) {
    let (limit_sum, name) = (scope.limit_sum_w, scope.name);
    let by_period = in_phase_by_period(rungs);
    let worst = by_period
        .iter()
        .filter_map(|(p, v)| {
            let (w, r) = v
                .iter()
                .filter_map(|r| r.swing_w.map(|w| (w, *r)))
                .max_by(|x, y| x.0.total_cmp(&y.0))?;
            let all: Vec<f64> = v.iter().filter_map(|r| r.swing_w).collect();
            Some((w, *p, r, all))
        })
        .max_by(|x, y| x.0.total_cmp(&y.0));
    match worst {
        Some((w, p, r, all)) => {
            let typical = if all.len() > 1 {
                format!(
                    "; worst of {} repeats, median {:.0} W",
                    all.len(),
                    median(&all).unwrap_or(w)
                )
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "- **Largest in-phase swing:** {w:.0} W{} (p90 − p10 of the {name} cycle){} at {p:.0} ms (rung `{}`{typical}){}.",
                interval_text(r, Figure::Swing, r.swing_ci95, " within the run"),
                of_limit(limit_sum, w),
                code(&r.rung.label),
                edges_caveat(r)
            );
        }
        None => {
            let _ = writeln!(
                s,
                "- **Largest in-phase swing:** no in-phase duty rung with a swing figure."
            );
        }
    }
}

/// What staggering saves: per period that ran both ways, the swing in
/// phase → staggered (a staggered swing its interval only bounds as that
/// bound) and the saving as its 95 % interval.
fn staggering_line(s: &mut String, rungs: &[RungSummary], compare: &[PhaseCompare]) {
    let savings: Vec<String> = compare
        .iter()
        .filter_map(|c| {
            let (i, st) = (c.in_phase_swing_w?, c.staggered_swing_w?);
            let of_period: Vec<&RungSummary> = rungs
                .iter()
                .filter(|r| {
                    r.rung.phase == c.phase
                        && r.rung.requested_period_ms().map(PeriodMs::ms) == Some(c.period_ms)
                })
                .collect();
            let remedy = of_period
                .iter()
                .filter_map(|r| r.resolution.as_ref().and_then(|u| u.remedy()))
                .next();
            let staggered_bound = of_period
                .iter()
                .filter(|r| r.rung.mode == Mode::Staggered)
                .filter_map(|r| r.resolution.as_ref()?.bounded(Figure::Swing))
                .filter(|x| x.at_most())
                .map(|x| x.interval.hi)
                .reduce(f64::max);
            let staggered =
                staggered_bound.map_or(format!("{st:.0} W"), |hi| format!("≤ {hi:.0} W"));
            let saving = i - st;
            let saves = match c.delta_swing_w_ci95 {
                Some(h) => format!("saves {:.0}–{:.0} W (95 %)", saving - h, saving + h),
                None => format!("saves {saving:.0} W (1 repeat: no interval)"),
            };
            Some(match remedy {
                Some(r) => format!(
                    "{:.0} ms: {i:.0} → {staggered}, {saves}; **unresolved**: {r}",
                    c.period_ms
                ),
                None => format!("{:.0} ms: {i:.0} W → {staggered}, {saves}", c.period_ms),
            })
        })
        .collect();
    let _ = writeln!(
        s,
        "- **What staggering saves (swing in phase → staggered):** {}.",
        if savings.is_empty() {
            "no period ran both ways with swing figures".to_string()
        } else {
            savings.join("; ")
        }
    );
}

/// The worst transient: the largest peak against the limit sum, and the
/// largest single sum of NVML's samples where it is higher.
fn worst_transient_line(s: &mut String, limit_sum: f64, rungs: &[RungSummary]) {
    let worst_peak = rungs
        .iter()
        .filter_map(|r| r.peak_w.map(|p| (p, r)))
        .max_by(|x, y| x.0.total_cmp(&y.0));
    if let Some((p, r)) = worst_peak {
        let over = p - limit_sum;
        // NVML's samples summed as they come: one cycle's worst, where a
        // duty rung's composed peak is the typical cycle's.
        let raw = rungs
            .iter()
            .filter_map(|r| r.raw_peak_w.map(|p| (p, r)))
            .max_by(|x, y| x.0.total_cmp(&y.0))
            .filter(|(q, _)| *q > p + 0.5);
        let _ = writeln!(
            s,
            "- **Worst transient:** {p:.0} W{} in rung `{}`{}: {}{}.",
            interval_text(r, Figure::Peak, r.peak_ci95, ""),
            code(&r.rung.label),
            edges_caveat(r),
            if limit_sum <= 0.0 {
                "no limit known".to_string()
            } else if over > 0.0 {
                format!(
                    "{over:.0} W above the limit sum ({:.0} %)",
                    100.0 * p / limit_sum
                )
            } else {
                format!("{:.0} W below the limit sum", -over)
            },
            raw.map_or(String::new(), |(q, rr)| format!(
                "; the largest single sum of NVML's samples as they came is {q:.0} W, in `{}`{} (one cycle at its worst, where a duty rung's figure is its typical composed cycle)",
                code(&rr.rung.label),
                edges_caveat(rr)
            ))
        );
    }
}

/// A rung's edges out of tolerance, said beside a figure from it.
fn edges_caveat(r: &RungSummary) -> &'static str {
    if r.edges_verdict.as_deref().is_some_and(|v| !v.is_empty()) {
        " (its edges out of tolerance: see the rung table)"
    } else {
        ""
    }
}

/// The soak line: the soak that moved, else one not judged, else the first
/// (with how many there were); every soak is in the Soak section.
fn soak_line(s: &mut String, a: &NodeReport<'_>) {
    use powerlab_analysis::soak::SoakVerdict;
    let nodes: Vec<&powerlab_analysis::soak::SoakRow> = a
        .node
        .soak
        .rows
        .iter()
        .filter(|r| r.gpu == powerlab_analysis::soak::NODE)
        .collect();
    let rank = |r: &powerlab_analysis::soak::SoakRow| match r.verdict {
        SoakVerdict::Moved(_) => 0,
        SoakVerdict::NotJudged(_) => 1,
        SoakVerdict::Held(_) => 2,
    };
    let Some(n) = nodes.iter().min_by_key(|r| rank(r)) else {
        return;
    };
    let gpus = a.report.run.manifest.backend.gpus.len().max(1);
    let limit_sum: f64 = a
        .report
        .run
        .manifest
        .backend
        .gpus
        .iter()
        .map(|g| g.power_limit_w)
        .sum();
    let mean = a
        .report
        .rungs
        .iter()
        .find(|r| r.rung.id == n.rung_id)
        .and_then(|r| r.mean_w);
    let _ = writeln!(
        s,
        "- **Soak{}:** `{}`{}; first {:.0} s {} W, last {} W; drift {} W/10 min — {}; thermal equilibrium {}; throttle onset {}.",
        if nodes.len() > 1 {
            format!(" (1 of {}, the one to read first)", nodes.len())
        } else {
            String::new()
        },
        code(&n.rung),
        match mean {
            Some(m) if limit_sum > 0.0 => format!(
                " {m:.0} W mean ({:.0} % of the limit sum, {})",
                100.0 * m / limit_sum,
                super::cells::gpus(gpus)
            ),
            Some(m) => format!(" {m:.0} W mean"),
            None => " (no mean: see the Soak section)".to_string(),
        },
        n.edge_s,
        super::cells::o(n.first_mean_w),
        super::cells::o(n.last_mean_w),
        super::soak::drift_cell(n),
        super::soak::node_words(n),
        n.equilibrium_s
            .map_or_else(|| n.equilibrium.to_string(), |t| format!("after {t:.0} s")),
        n.throttle_onset_s.map_or_else(
            || "none".to_string(),
            |t| format!("at {t:.1} s ({})", n.throttle_bits)
        ),
    );
}

/// Where the run stopped, when a stop reason ended it inside a rung (an
/// interlock in a ramp-up step's warm-up has no figures of its own, so the
/// lines below would not show it).
fn stopped_line(run: &powerlab_samples::load::Run) -> Option<String> {
    use powerlab_rundir::RunEvent;
    run.events.iter().find_map(|e| match e {
        RunEvent::Note { topic, detail, .. }
            if topic == powerlab_rundir::events::STOPPED_IN_RUNG_TOPIC =>
        {
            Some(format!(
                "- **Stopped:** in rung `{}` ({}): {}. No figure below covers what that rung would have shown.",
                code(detail["label"].as_str().unwrap_or("?")),
                text(detail["kind"].as_str().unwrap_or("?")),
                text(detail["reason"].as_str().unwrap_or("no reason recorded"))
            ))
        }
        _ => None,
    })
}

/// " [lo, hi] (95 %`scope`)" for `figure` of `r`: said to be only a bound
/// where its interval only bounds it, and unresolved, with the remedy,
/// where the rung has too few cycles for any bound; empty without an
/// interval.
fn interval_text(r: &RungSummary, figure: Figure, b: Option<Bounds>, scope: &str) -> String {
    let Some(b) = b else {
        return String::new();
    };
    let mark = match &r.resolution {
        Some(u) if u.unbounded() => {
            format!("; **unresolved**: {}", u.remedy().unwrap_or_default())
        }
        Some(u) => u.bounded(figure).map_or(String::new(), |x| {
            format!("; only a bound: {}", x.bound_text())
        }),
        None => String::new(),
    };
    format!(" [{:.0}, {:.0}] (95 %{scope}{mark})", b.lo, b.hi)
}
