//! `report.md` of a node run: the qualifications of every number on its
//! first line, the run's facts, the rung table, edges, repeats, in phase
//! vs staggered, what the instruments can see, NCCL, faults, definitions
//! and the plots.

use super::cells::{code, o, pm, signed, text, within};
use super::sensor::write_sensor_section;
use crate::error::CollateError;
use crate::format::{fmt_bytes, fmt_ms};
use crate::load::Run;
use crate::nccl::{FabricPowerRow, NcclRow};
use crate::sensor::verdict::SensorReport;
use crate::summary::{PhaseCompare, RepeatStats, RungSummary};
use powerlab_core::units::{ns_to_ms, ns_to_s};
use powerlab_rundir::PhaseKind;
use powerlab_rundir::{RunEvent, RunStatus};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Everything the report tabulates.
pub struct Tables<'a> {
    /// Per-rung summaries.
    pub rungs: &'a [RungSummary],
    /// Across repeats.
    pub repeats: &'a [RepeatStats],
    /// In phase vs staggered.
    pub compare: &'a [PhaseCompare],
    /// NCCL bandwidth rows.
    pub nccl: &'a [NcclRow],
    /// Fabric power next to idle and compute.
    pub fabric: &'a [FabricPowerRow],
    /// Sensor model, per-rung and per-period verdicts.
    pub sensor: &'a SensorReport,
    /// Raw files missing or cut short (`integrity::check_files`).
    pub raw_problems: &'a [String],
    /// The latest raw reading, epoch ns (where a run that never recorded
    /// its end stopped).
    pub raw_end_ns: Option<i64>,
    /// Every GPU in every rung.
    pub per_gpu: &'a [crate::per_gpu::GpuRungRow],
    /// The soak analysis: every GPU and the node of every soak rung.
    pub soak: &'a [crate::soak::SoakRow],
    /// The node's own power sources, and per rung beside the GPU sum.
    pub node_power: (
        &'a [crate::node_power::SourceFacts],
        &'a [crate::node_power::NodePowerRung],
    ),
}

/// How the event log says the run ended, when it says so: `failed`,
/// `interrupted` or `complete`, and the reason.
fn logged_end(run: &Run) -> Option<(&str, Option<&str>)> {
    run.events.iter().rev().find_map(|e| match e {
        RunEvent::RunEnded { status, reason, .. } => Some((status.as_str(), reason.as_deref())),
        _ => None,
    })
}

/// Writes `report/report.md`.
///
/// # Errors
///
/// Returns [`CollateError::Io`] when `report.md` cannot be written.
pub fn write_report(
    run: &Run,
    t: &Tables<'_>,
    raw_rows: usize,
    dir: &Path,
) -> Result<PathBuf, CollateError> {
    let (rungs, repeats, compare) = (t.rungs, t.repeats, t.compare);
    let m = &run.manifest;
    let mut s = String::new();
    // The first line states anything that must qualify every number below.
    let mut warnings = Vec::new();
    if m.allow_unhealthy {
        warnings.push("PREFLIGHT OVERRIDDEN (--allow-unhealthy): the node failed a health check; read health-report.md before using any number".to_string());
    }
    match &m.status {
        RunStatus::Complete => {}
        // The event log recorded the end the manifest never got (a disk
        // that filled before the manifest was sealed): that end is stated.
        RunStatus::Running => warnings.push(match logged_end(run) {
            Some((status, reason)) => format!(
                "RUN {} ({}; from events.jsonl: the manifest was never sealed): numbers cover the rungs that ran",
                status.to_uppercase(),
                reason.unwrap_or("no reason recorded")
            ),
            None => format!(
                "RUN DID NOT FINISH (no end recorded: killed?): numbers cover the samples flushed before it stopped{}",
                t.raw_end_ns.map(|e| format!(", the last {:.1} s after the start", ns_to_s(e - m.started_ns))).unwrap_or_default()
            ),
        }),
        RunStatus::Interrupted { reason } => warnings.push(format!("RUN INTERRUPTED ({reason}): numbers cover the rungs that ran")),
        RunStatus::Failed { reason } => warnings.push(format!("RUN FAILED ({reason}): numbers cover the rungs that ran")),
    }
    if let Some(w) = missing_rungs_warning(run, m) {
        warnings.push(w);
    }
    let incomplete: Vec<String> = rungs
        .iter()
        .filter(|r| r.incomplete.is_some())
        .map(|r| text(&r.rung.label))
        .collect();
    if !t.raw_problems.is_empty() || !incomplete.is_empty() {
        let mut w = String::from("INCOMPLETE RAW DATA");
        if !t.raw_problems.is_empty() {
            w.push_str(&format!(": {}", t.raw_problems.join("; ")));
        }
        if !incomplete.is_empty() {
            let worst = rungs
                .iter()
                .filter_map(|r| r.window_coverage.filter(|_| r.incomplete.is_some()))
                .fold(1.0, f64::min);
            let shown = if incomplete.len() > 6 {
                format!("{}, …", incomplete[..6].join(", "))
            } else {
                incomplete.join(", ")
            };
            w.push_str(&format!(
                " — {} rung(s) not wholly covered ({}): {shown}; see the `incomplete` column",
                incomplete.len(),
                worst_words(worst)
            ));
        }
        warnings.push(w);
    }
    let short: Vec<&crate::node_power::NodePowerRung> =
        t.node_power.1.iter().filter(|r| r.coverage < 0.9).collect();
    let below: Vec<String> = t
        .node_power
        .1
        .iter()
        .filter(|r| r.verdict.contains("CHASSIS BELOW THE GPU SUM"))
        .map(|r| text(&r.rung))
        .collect();
    if !below.is_empty() {
        warnings.push(format!(
            "NODE POWER BELOW THE GPU SUM in {} rung(s) ({}): that meter does not measure this node; see the Node power section",
            below.len(),
            below.iter().take(3).cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    if !short.is_empty() {
        let mut sources: Vec<&str> = short.iter().map(|r| r.source.as_str()).collect();
        sources.dedup();
        let worst = short.iter().map(|r| r.coverage).fold(1.0, f64::min);
        warnings.push(format!(
            "NODE POWER INCOMPLETE: {} covered under 90 % of {} rung(s) (worst {:.0} %); see the Node power section",
            sources.join(", "),
            short.len(),
            worst * 100.0
        ));
    }
    if !m.raw_index {
        warnings.push("RAW FILES NOT VERIFIED: this run directory has no raw index (written before indexes existed, or its manifest was edited), so changes to its raw files cannot be detected".into());
    }
    if m.backend.backend == "sim" {
        warnings.push("SIMULATED NODE: these are model outputs, not measurements".into());
    }
    if warnings.is_empty() {
        let _ = writeln!(
            s,
            "# {} — complete run on {} ({})",
            text(&m.campaign),
            text(&m.backend.node_id),
            super::cells::gpus(m.backend.gpus.len())
        );
    } else {
        let _ = writeln!(s, "# ⚠ {}", warnings.join(" — "));
        let _ = writeln!(
            s,
            "\nCampaign `{}` on {} ({}).",
            code(&m.campaign),
            text(&m.backend.node_id),
            super::cells::gpus(m.backend.gpus.len())
        );
    }
    s.push_str(&super::answer::answer_block(&super::answer::AnswerInputs {
        run,
        rungs,
        compare,
        per_gpu: t.per_gpu,
        soak: t.soak,
        sensor: t.sensor,
        node_power: t.node_power.1,
    }));
    let _ = writeln!(s, "\n| | |\n|---|---|");
    let _ = writeln!(s, "| started | {} |", m.started_utc);
    if let Some(end) = m.ended_ns {
        let _ = writeln!(s, "| duration | {:.1} s |", ns_to_s(end - m.started_ns));
    }
    let _ = writeln!(
        s,
        "| backend | {} ({}) |",
        m.backend.backend, m.backend.driver
    );
    let _ = writeln!(
        s,
        "| NCCL | {} |",
        match &m.backend.nccl {
            powerlab_core::Capability::Present(v) => v.clone(),
            powerlab_core::Capability::Absent(e) => format!("absent: {e}"),
        }
    );
    let _ = writeln!(
        s,
        "| tool | {} {} ({}) |",
        m.tool.name, m.tool.version, m.tool.git_rev
    );
    let _ = writeln!(s, "| clock | {} |", m.clock);
    let _ = writeln!(s, "| raw rows | {raw_rows} |");
    let _ = writeln!(
        s,
        "\n## GPUs\n\n| key | UUID | name | enforced limit |\n|---|---|---|---|"
    );
    for g in &m.backend.gpus {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.0} W |",
            text(&g.key),
            text(&g.uuid),
            text(&g.name),
            g.power_limit_w
        );
    }

    let _ = writeln!(s, "\n## Rungs (node power, GPU draw only)\n");
    let _ = writeln!(
        s,
        "Duty rungs: the node's cycle composed from every GPU's own buffered samples, folded on that GPU's recorded edges, corrected for the sample window and summed at the GPUs' measured offsets (method `composed cycle`); in brackets each figure's 95 % interval: resampled whole cycles (noise, cycle-to-cycle variation), widened by the reconstruction's systematic error as measured against the simulated node's truth. A figure whose interval is wider than itself or than 25 % of the node's on−off step is marked unresolved, and so is every figure of a rung of fewer than 5 whole cycles (too few to resample). A duty rung whose cycle cannot be composed shows its verdict instead of figures. Other rungs: the sample-and-hold sum of the buffered samples. The last two columns are what NVML sampled (sample and hold): for a duty rung that is not what the node drew. The 1 s average field is never used as a result.\n"
    );
    let _ = writeln!(
        s,
        "| rung | period ms | method | mean W | peak W | spread W | swing W | NVML sample-and-hold spread W | swing W | start err max µs | skew µs | barrier and edges |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rungs {
        let period = match (r.rung.period_ms, r.rung.requested_period_ms()) {
            (Some(p), Some(n)) if (p - n).abs() > 1e-9 => {
                format!("{} ({} asked)", fmt_ms(p), fmt_ms(n))
            }
            (Some(p), _) => fmt_ms(p),
            _ => "–".into(),
        };
        let mut method = match &r.verdict {
            Some(v) => format!("{}: **{v}**", r.method),
            None => r.method.clone(),
        };
        if let Some(i) = &r.incomplete {
            method = format!("**{i}** — {method}");
        }
        if let Some(u) = &r.unresolved {
            method = format!("{method}; **unresolved: {u}**");
        }
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            text(&r.rung.label),
            period,
            method,
            within(r.mean_w, r.mean_ci95),
            within(r.peak_w, r.peak_ci95),
            within(r.spread_w, r.spread_ci95),
            within(r.swing_w, r.swing_ci95),
            o(r.raw_spread_w),
            match r.instrument_verdict.as_deref() {
                Some("aliased") => "aliased".to_string(),
                _ => o(r.raw_swing_w),
            },
            o(r.start_error_max_us),
            o(r.start_skew_us),
            match (r.barrier_ok, &r.edges_verdict) {
                (Some(false), Some(v)) =>
                    format!("**BARRIER MISSED; EDGES OUT OF TOLERANCE: {v}**"),
                (Some(false), None) => "**BARRIER MISSED**".to_string(),
                (_, Some(v)) => format!("**EDGES OUT OF TOLERANCE: {v}**"),
                (Some(true), None) => "ok".to_string(),
                (None, None) => "–".to_string(),
            }
        );
    }
    let edged: Vec<&RungSummary> = rungs
        .iter()
        .filter(|r| r.rise_err_p99_us.is_some() || r.fall_err_p99_us.is_some())
        .collect();
    if !edged.is_empty() {
        let lim = |k: &str, d: f64| {
            m.campaign_resolved
                .pointer(&format!("/limits/{k}"))
                .and_then(|v| v.as_f64())
                .unwrap_or(d)
        };
        let _ = writeln!(s, "\n## Edges per rung\n");
        let _ = writeln!(
            s,
            "achieved − intended of every rising and falling edge of every GPU, per rung and per kind (nothing pooled across rungs): the signed median, and the 99th percentile and maximum of its size, µs. Cross-GPU skew: for the k-th rise and the k-th fall of the rung, the spread of achieved − intended across GPUs; its 99th percentile over every k. Tolerance: p99 {:.0} µs, max {:.0} µs (`[limits] edge_p99_us`, `edge_max_us`). Clock drift: the largest drift of a GPU's device clock against the run clock over the rung.\n",
            lim("edge_p99_us", 50.0),
            lim("edge_max_us", 100.0)
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
    if repeats.iter().any(|r| r.n > 1) {
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
    if !compare.is_empty() {
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
    write_sensor_section(&mut s, t.sensor);
    if !t.nccl.is_empty() {
        let _ = writeln!(s, "\n## NCCL collectives\n");
        let _ = writeln!(
            s,
            "Time per operation on the slowest rank (CUDA events around the timed iterations); algbw = size / time; busbw = algbw × 2(n−1)/n for all_reduce, × (n−1)/n for all_gather and reduce_scatter, × 1 for broadcast (nccl-tests' formulas). f32 data, sum.\n"
        );
        let _ = writeln!(
            s,
            "| rung | collective | size | ranks | time µs | algbw GB/s | busbw GB/s |\n|---|---|---|---|---|---|---|"
        );
        for r in t.nccl {
            let short = if r.ranks_reporting < r.ranks {
                format!(
                    " (only {} of {} ranks reported)",
                    r.ranks_reporting, r.ranks
                )
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {:.1} | {:.2} | {:.2}{short} |",
                text(&r.rung),
                r.collective,
                fmt_bytes(r.bytes),
                r.ranks,
                r.time_us,
                r.algbw_gbs,
                r.busbw_gbs
            );
        }
        if t.nccl.iter().all(|r| r.ranks < 2) {
            let _ = writeln!(
                s,
                "\nOne rank: these collectives moved no data over any fabric (a single GPU copies within its own memory), so no fabric power is reported."
            );
        }
        let _ = writeln!(s, "\n![NCCL bus bandwidth](plots/nccl_busbw.svg)");
    }
    if t.fabric.iter().any(|f| f.kind == PhaseKind::Nccl) {
        let _ = writeln!(s, "\n## Fabric power (node, buffered samples)\n");
        let _ = writeln!(
            s,
            "| rung | kind | mean W | peak W | spread W | mean above idle (context held) W |\n|---|---|---|---|---|---|"
        );
        for f in t.fabric {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} |",
                text(&f.rung),
                f.kind,
                o(f.mean_w),
                o(f.peak_w),
                o(f.spread_w),
                o(f.above_idle_w)
            );
        }
    }
    super::baseline::write_section(&mut s, rungs, t.per_gpu);
    super::soak::write_section(&mut s, t.soak);
    super::per_gpu::write_section(&mut s, t.per_gpu);
    super::node_power::write_section(&mut s, t.node_power.0, t.node_power.1);
    let faults: Vec<&RunEvent> = run
        .events
        .iter()
        .filter(|e| matches!(e, RunEvent::Fault { .. } | RunEvent::Interlock { .. }))
        .collect();
    if !faults.is_empty() {
        let _ = writeln!(s, "\n## Faults and interlocks\n");
        for f in faults {
            match f {
                RunEvent::Fault {
                    ts_ns,
                    gpu,
                    kind,
                    detail,
                    fatal,
                } => {
                    let _ = writeln!(
                        s,
                        "- {} {} `{}` on {}: {}",
                        powerlab_rundir::layout::utc_rfc3339(*ts_ns),
                        if *fatal { "FATAL" } else { "warning" },
                        code(kind),
                        text(gpu.as_deref().unwrap_or("node")),
                        text(detail)
                    );
                }
                RunEvent::Interlock {
                    ts_ns,
                    limit,
                    reading,
                } => {
                    let _ = writeln!(
                        s,
                        "- {} INTERLOCK `{}`: {}",
                        powerlab_rundir::layout::utc_rfc3339(*ts_ns),
                        code(limit),
                        text(reading)
                    );
                }
                _ => {}
            }
        }
    }
    let _ = writeln!(s, "\n## Definitions\n");
    let _ = writeln!(
        s,
        "- Node power of a duty rung (`composed cycle`): each GPU's buffered samples, each placed at the middle of its averaging window, folded on that GPU's recorded rising edges into one cycle; its harmonics divided by the window's attenuation (up to the harmonic the window still passes at ≥ 60 %); the GPUs' cycles shifted to their measured offsets and summed; figures from that cycle at ≤ 0.5 ms resolution. Every figure is GPU board power only, not the node's wall power."
    );
    let _ = writeln!(
        s,
        "- Node power of other rungs, and the NVML sample-and-hold columns: per-GPU readings aligned on a {} ms grid (latest reading at or before each point) and summed; a point where any GPU has no reading is left out (coverage column in summary.csv).",
        ns_to_ms(run.grid_ns)
    );
    let _ = writeln!(
        s,
        "- spread = p99 − p1; swing = p90 − p10; peak = maximum; energy = mean × measured window (ramp excluded)."
    );
    let _ = writeln!(
        s,
        "- start error: achieved − intended start of each GPU, where the intended start includes its deliberate stagger; skew = max − min of those errors."
    );
    let _ = writeln!(s, "\n## Plots\n");
    if rungs.iter().any(|r| r.rung.kind == PhaseKind::Duty) {
        let _ = writeln!(
            s,
            "![node spread vs duty period](plots/spread_vs_period.svg)\n"
        );
    }
    if !compare.is_empty() {
        let _ = writeln!(
            s,
            "![in phase vs staggered](plots/in_phase_vs_staggered.svg)\n"
        );
    }
    for r in rungs {
        let _ = writeln!(
            s,
            "![rung {} — {}](plots/rung-{:03}.svg)\n",
            r.rung.id,
            text(&r.rung.label),
            r.rung.id
        );
    }
    let path = dir.join(powerlab_rundir::ReportFile::ReportMd.file_name());
    std::fs::write(&path, s).map_err(|e| CollateError::io(&path, e))?;
    Ok(path)
}

/// How much of its window the worst-covered incomplete rung has, in words
/// that stay true when the share rounds to 100 % (a rung marked
/// incomplete is never wholly covered).
fn worst_words(worst: f64) -> String {
    let pct = (1000.0 * worst).floor() / 10.0;
    if pct >= 99.9 {
        "each covers more than 99.9 % of its window, not all of it".into()
    } else {
        format!("worst {pct:.1} % of its window")
    }
}

/// Rungs the plan lists that the event log has no record of: in a run
/// that did not finish, those never reached; in any run, those whose
/// record was lost (a later rung has one). None when every rung is there,
/// or when a run that ended by a signal or fault merely stopped early
/// (its first line says so already).
fn missing_rungs_warning(run: &Run, m: &powerlab_rundir::Manifest) -> Option<String> {
    let killed = matches!(m.status, RunStatus::Running);
    let named: Vec<&crate::load::MissingRung> = run
        .missing_rungs
        .iter()
        .filter(|r| r.lost || killed)
        .collect();
    if named.is_empty() {
        return None;
    }
    let lost: Vec<&str> = named
        .iter()
        .filter(|r| r.lost)
        .map(|r| r.label.as_str())
        .collect();
    let unreached: Vec<&str> = named
        .iter()
        .filter(|r| !r.lost)
        .map(|r| r.label.as_str())
        .collect();
    let list = |v: &[&str]| {
        if v.len() > 8 {
            format!("{}, … ({} in all)", v[..8].join(", "), v.len())
        } else {
            v.join(", ")
        }
    };
    let mut parts = Vec::new();
    if !lost.is_empty() {
        parts.push(format!(
            "{} rung(s) the plan lists have no record in events.jsonl although later rungs do (their record was lost or removed; no figures): {}",
            lost.len(),
            list(&lost)
        ));
    }
    if !unreached.is_empty() {
        parts.push(format!(
            "{} planned rung(s) never reached: {}",
            unreached.len(),
            list(&unreached)
        ));
    }
    Some(format!("MISSING RUNGS: {}", parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::worst_words;

    #[test]
    fn an_incomplete_rung_never_reads_as_wholly_covered() {
        // A rung covering 0.9995 to 0.9999 of its window is marked
        // incomplete, and its `window_coverage` (3 decimals) reads 1.0: it
        // used to say "worst 100.0 % of its window".
        assert!(!worst_words(1.0).contains("100.0"));
        assert!(worst_words(1.0).contains("more than 99.9 %"));
        assert!(!worst_words(0.99996).contains("100.0"));
        assert!(worst_words(0.99996).contains("more than 99.9 %"));
        assert_eq!(worst_words(0.994), "worst 99.4 % of its window");
    }
}
