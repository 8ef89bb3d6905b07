//! The title of a node run's `report.md`: a plain title for a complete,
//! verified run on real GPUs, else a first line of every warning that must
//! qualify the numbers below it (how the run ended, rungs missing or not
//! wholly covered, the node's meters, unverified raw files, a simulated
//! node).

use super::cells::{code, text};
use super::tables::NodeReport;
use powerlab_analysis::node_power::{NodePowerRung, NodePowerVerdict};
use powerlab_analysis::summary::RungSummary;
use powerlab_core::units::ns_to_s;
use powerlab_rundir::{Manifest, RunEvent, RunStatus};
use powerlab_samples::load::Run;
use std::fmt::Write;

/// Appends the report's title: `# campaign — complete run on node (N
/// GPUs)`, or `# ⚠` and every warning, then the campaign and node.
pub fn write_title(s: &mut String, run: &Run, t: &NodeReport<'_>) {
    let m = &run.manifest;
    let warnings = warnings(run, t);
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
}

/// Everything that must qualify every number of the report, in the order
/// the first line states them.
fn warnings(run: &Run, t: &NodeReport<'_>) -> Vec<String> {
    let m = &run.manifest;
    let mut warnings = Vec::new();
    if m.allow_unhealthy {
        warnings.push("PREFLIGHT OVERRIDDEN (--allow-unhealthy): the node failed a health check; read health-report.md before using any number".to_string());
    }
    warnings.extend(status_warning(run, t.node.raw_end_ns));
    warnings.extend(missing_rungs_warning(run, m, t.node.raw_end_ns));
    warnings.extend(incomplete_warning(&t.report.rungs, &t.node.raw_problems));
    warnings.extend(node_power_warnings(&t.node.node_power.rungs));
    warnings.extend(smoothing_warning(m));
    if !m.raw_index {
        warnings.push("RAW FILES NOT VERIFIED: this run directory has no raw index (written before indexes existed, or its manifest was edited), so changes to its raw files cannot be detected".into());
    }
    if m.backend.backend == "sim" {
        warnings.push("SIMULATED NODE: these are model outputs, not measurements".into());
    }
    warnings.extend(sensor_warning(
        &t.node.sensor.model,
        m.backend.backend == "sim",
    ));
    warnings
}

/// Under a table of composed cycles: the sensor model they were undone
/// with, where it is not this GPU's (empty otherwise).
pub fn sensor_note(run: &Run, t: &NodeReport<'_>) -> String {
    sensor_warning(&t.node.sensor.model, run.manifest.backend.backend == "sim")
        .map(|w| format!("\n**{w}.**\n"))
        .unwrap_or_default()
}

/// A sensor model that is not this GPU's (nominal: another GPU model's
/// values assumed): every duty rung and workload fold is undone with its
/// sample window and latency, so it qualifies their figures. Not said of
/// the simulated node, whose instruments are the model.
fn sensor_warning(
    model: &powerlab_analysis::sensor::model::SensorModel,
    sim: bool,
) -> Option<String> {
    (model.kind == powerlab_analysis::sensor::model::ModelKind::Nominal && !sim).then(|| {
        format!(
            "SENSOR MODEL NOT THIS GPU'S: {}; every composed cycle (duty rungs, workload folds, their swings, peaks and ramps) is undone with its sample window and latency",
            text(&model.source)
        )
    })
}

/// GPUs whose power smoothing was on: their draw is the one the hardware
/// let through, its floor and ramps, not the load's raw swing.
fn smoothing_warning(m: &Manifest) -> Option<String> {
    let on: Vec<String> = m
        .backend
        .gpus
        .iter()
        .filter_map(|g| match &g.power_smoothing {
            powerlab_core::PowerSmoothing::On(p) => {
                Some(format!("{} profile {}", text(&g.key), p.profile))
            }
            _ => None,
        })
        .collect();
    (!on.is_empty()).then(|| {
        format!(
            "POWER SMOOTHING ON ({}): the figures show the hardware's smoothed draw (its floor and ramp limits), not the load's raw swing",
            on.join(", ")
        )
    })
}

/// A reason the run recorded, on the report's first line: a control
/// character (a newline would end the heading and start a forged one)
/// becomes a space; the rest is the run's own words, as recorded.
fn one_line(reason: &str) -> String {
    reason.replace(|c: char| c.is_control(), " ")
}

/// How the event log says the run ended, when it says so: `failed`,
/// `interrupted` or `complete`, and the reason.
fn logged_end(run: &Run) -> Option<(&str, Option<&str>)> {
    run.events.iter().rev().find_map(|e| match e {
        RunEvent::RunEnded { status, reason, .. } => Some((status.as_str(), reason.as_deref())),
        _ => None,
    })
}

/// A run that did not complete: how it ended (from the manifest, or from
/// the event log where the manifest was never sealed), or where its
/// records stop. `raw_end_ns` is the latest raw reading, epoch ns.
pub fn status_warning(run: &Run, raw_end_ns: Option<i64>) -> Option<String> {
    let m = &run.manifest;
    match &m.status {
        RunStatus::Complete => None,
        // The event log recorded the end the manifest never got (a disk
        // that filled before the manifest was sealed): that end is stated.
        RunStatus::Running => Some(match logged_end(run) {
            Some((status, reason)) => format!(
                "RUN {} ({}; from events.jsonl: the manifest was never sealed): numbers cover the rungs that ran",
                status.to_uppercase(),
                one_line(reason.unwrap_or("no reason recorded"))
            ),
            None => format!(
                "RUN DID NOT FINISH (no end recorded: killed?): numbers cover the samples flushed before it stopped{}",
                raw_end_ns
                    .map(|e| format!(
                        ", the last {:.1} s after the start",
                        ns_to_s(e - m.started_ns)
                    ))
                    .unwrap_or_default()
            ),
        }),
        RunStatus::Interrupted { reason } => Some(format!(
            "RUN INTERRUPTED ({}): numbers cover the rungs that ran",
            one_line(reason)
        )),
        RunStatus::Failed { reason } => Some(format!(
            "RUN FAILED ({}): numbers cover the rungs that ran",
            one_line(reason)
        )),
    }
}

/// Raw files missing or cut short, and rungs not wholly covered by their
/// records (the worst one's share, at most six named).
fn incomplete_warning(rungs: &[RungSummary], raw_problems: &[String]) -> Option<String> {
    let incomplete: Vec<String> = rungs
        .iter()
        .filter(|r| r.incomplete.is_some())
        .map(|r| text(&r.rung.label))
        .collect();
    if raw_problems.is_empty() && incomplete.is_empty() {
        return None;
    }
    let mut w = String::from("INCOMPLETE RAW DATA");
    if !raw_problems.is_empty() {
        w.push_str(&format!(": {}", raw_problems.join("; ")));
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
    Some(w)
}

/// A verdict's test for a meter that cannot be this node's, what it read
/// and what that means.
type MeterMismatch = (fn(&NodePowerVerdict) -> bool, &'static str, &'static str);

/// The meters that cannot be this node's, one warning each.
const METER_MISMATCHES: [MeterMismatch; 2] = [
    (
        NodePowerVerdict::below_gpu_sum,
        "BELOW THE GPU SUM",
        "that meter does not measure this node",
    ),
    (
        NodePowerVerdict::far_above_gpu_sum,
        "FAR ABOVE THE GPU SUM",
        "that meter reads in another unit (mW) or measures many nodes",
    ),
];

/// The node's own meters: reading below the GPU sum or far above it (not
/// this node's meter), and covering under 90 % of a rung.
fn node_power_warnings(node_power: &[NodePowerRung]) -> Vec<String> {
    let mut warnings = Vec::new();
    let short: Vec<&NodePowerRung> = node_power.iter().filter(|r| r.coverage < 0.9).collect();
    for (is, what, why) in METER_MISMATCHES {
        let rungs: Vec<String> = node_power
            .iter()
            .filter(|r| is(&r.verdict))
            .map(|r| text(&r.rung))
            .collect();
        if !rungs.is_empty() {
            let named = rungs.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
            warnings.push(format!(
                "NODE POWER {what} in {} rung(s) ({named}): {why}; see the Node power section",
                rungs.len()
            ));
        }
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
    warnings
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
pub fn missing_rungs_warning(run: &Run, m: &Manifest, raw_end_ns: Option<i64>) -> Option<String> {
    let killed = matches!(m.status, RunStatus::Running);
    let named: Vec<&powerlab_samples::load::MissingRung> = run
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
        // Samples well past the last recorded rung: the next rung may have
        // started and its start record been torn off by the kill.
        let last_end = run
            .rungs
            .iter()
            .map(|r| r.end_ns)
            .max()
            .or(Some(m.started_ns));
        let unrecorded_s = raw_end_ns
            .zip(last_end)
            .map(|(raw, end)| ns_to_s(raw - end))
            .filter(|s| *s > 1.0);
        parts.push(match unrecorded_s {
            Some(s) => format!(
                "{} planned rung(s) have no start record: {} (the raw samples run {s:.0} s past the last recorded rung (or the run's start), so the next one may have started and its record been cut off by the kill; those samples are in no figure)",
                unreached.len(),
                list(&unreached)
            ),
            None => format!(
                "{} planned rung(s) never reached: {}",
                unreached.len(),
                list(&unreached)
            ),
        });
    }
    Some(format!("MISSING RUNGS: {}", parts.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::{node_power_warnings, worst_words};
    use powerlab_analysis::node_power::{NodePowerNote, NodePowerRung, NodePowerVerdict};

    fn rung(label: &str, notes: Vec<NodePowerNote>) -> NodePowerRung {
        NodePowerRung {
            rung_id: 1,
            rung: label.into(),
            source: "bmc".into(),
            readings: 40,
            failed: 0,
            coverage: 1.0,
            chassis_mean_w: Some(500.0),
            chassis_peak_w: Some(510.0),
            chassis_swing_w: None,
            gpu_sum_w: Some(700.0),
            non_gpu_w: Some(-200.0),
            non_gpu_share: Some(-0.4),
            verdict: NodePowerVerdict(notes),
        }
    }

    #[test]
    fn the_headline_picks_a_meter_below_the_gpu_sum_by_its_note() {
        let rows = [
            rung("sustained", vec![NodePowerNote::BelowGpuSum(200.0)]),
            // Its label holds the words, its verdict not the note: not picked.
            rung(
                "CHASSIS BELOW THE GPU SUM",
                vec![NodePowerNote::FailedReads(2)],
            ),
        ];
        let w = node_power_warnings(&rows);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("NODE POWER BELOW THE GPU SUM in 1 rung(s) (sustained)"),
            "{w:?}"
        );
    }

    #[test]
    fn the_headline_picks_a_meter_far_above_the_gpu_sum_apart() {
        let rows = [
            rung("idle", vec![NodePowerNote::FarAboveGpuSum(899_000.0)]),
            rung(
                "sustained",
                vec![NodePowerNote::FarAboveGpuSum(1_598_550.0)],
            ),
        ];
        let w = node_power_warnings(&rows);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("NODE POWER FAR ABOVE THE GPU SUM in 2 rung(s) (idle, sustained): that meter reads in another unit (mW)"),
            "{w:?}"
        );
    }

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
