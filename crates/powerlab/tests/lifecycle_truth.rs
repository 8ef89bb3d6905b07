#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)] // a test that unwraps reports its failure by panicking
//! Issue 47: lifecycle edges measured from the buffered samples alone
//! (`report/lifecycle_edges.csv`) against the simulated node's true
//! waveform (`--sim-truth`, 1 ms per GPU), which the collator never
//! reads. The truth is read here, about the same moments (the event
//! log's `lifecycle` notes and the duty rung's recorded falls), with the
//! collator's definitions: the level before is the mean over the second
//! before the moment (a held fall: the on-phase's second half), the level
//! after the mean from 1 s to 2 s past it (a held fall: the off-phase's
//! second half), the delay the moment to 10 % of the step, and 10–90 %
//! between the first crossings after the moment.
//!
//! On 4 simulated H200s, 4 kills and 4 clean exits of a back-to-back job
//! (seeds 1–4) read: kill step −633.2 to −633.3 W against −633.2 W true,
//! 10–90 % 26.9–27.5 ms against 26.4 ms, delay 0.6–0.8 ms against
//! 1.1 ms; exit 10–90 % 26.7–27.4 ms; a cold start's delay (its CUDA
//! initialisation) within 0.7 % of the truth (379–410 ms), its 10–90 %
//! (9.4 ms true) shorter than its events' timing is known (their
//! initialisation varies by ±40 ms, so each is aligned on its own
//! samples, to about their 20 ms spacing): stated as a bound of
//! 14.8–15.3 ms; the held fall 26.3–27.7 ms against 26.4 ms.
//!
//! Tolerances: steps 2 %; a kill's, an exit's or a held fall's 10–90 %
//! 10 %, its delay 2 ms; a cold start's delay 10 %, its 10–90 % a bound
//! that must hold the truth (not under it by more than 10 %).

use crate::util::*;
use std::collections::HashMap;

/// The lifecycle campaign: a duty rung (held edges), then kills and
/// clean exits of a job started cold (4 of each).
const BODY: &str = "\
[[phase]]\nkind = \"duty\"\nname = \"held\"\nperiod_ms = 2000\nduty = 0.5\nduration_s = 10\n\
[[phase]]\nkind = \"workload\"\nname = \"kill\"\ncommand = [\"python3\", \"train.py\"]\n\
duration_s = 4\nwarmup_s = 2\ncooldown_s = 3\nrepeats = 4\nstop = \"sigkill\"\n\
sim = { iteration_ms = 241.7, compute_fraction = 1.0 }\n\
[[phase]]\nkind = \"workload\"\nname = \"exit\"\ncommand = [\"python3\", \"train.py\"]\n\
duration_s = 4\nwarmup_s = 2\ncooldown_s = 3\nrepeats = 4\nstop = \"exit\"\n\
sim = { iteration_ms = 241.7, compute_fraction = 1.0 }\n";

/// One GPU's true waveform: (first bucket's start, ns; W per ms).
fn truth_of(dir: &std::path::Path, gpu: &str) -> (i64, Vec<f64>) {
    let text = std::fs::read_to_string(dir.join(format!("sim-truth/{gpu}.csv"))).unwrap();
    let mut start = None;
    let v = text
        .lines()
        .skip(1)
        .map(|l| {
            let (t, w) = l.split_once(',').unwrap();
            start.get_or_insert(t.parse::<i64>().unwrap());
            w.parse::<f64>().unwrap()
        })
        .collect();
    (start.unwrap(), v)
}

/// The mean of the truth over `[a, b)` ns.
fn mean(x: &(i64, Vec<f64>), a: i64, b: i64) -> f64 {
    let i = |t: i64| ((t - x.0) / 1_000_000).clamp(0, x.1.len() as i64) as usize;
    let s = &x.1[i(a)..i(b)];
    s.iter().sum::<f64>() / s.len() as f64
}

/// A true edge about moment `at` (ns): (before, after, delay ms, 10–90 %
/// ms), the levels over `before` and `after` (ns windows), the crossings
/// the first after `from` (ns).
fn true_edge(
    x: &(i64, Vec<f64>),
    at: i64,
    from: i64,
    before: (i64, i64),
    after: (i64, i64),
) -> [f64; 4] {
    let (b, a) = (mean(x, before.0, before.1), mean(x, after.0, after.1));
    // Each 1 ms bucket at its middle.
    let y = |i: usize| (x.1[i] - b) / (a - b);
    let i0 = ((from - x.0) / 1_000_000) as usize;
    let cross = |level: f64, from: usize| {
        let i = (from.max(1)..x.1.len())
            .find(|&i| y(i) >= level && y(i - 1) < level)
            .unwrap();
        let f = (level - y(i - 1)) / (y(i) - y(i - 1));
        x.0 as f64 / 1e6 + (i as f64 - 0.5 + f)
    };
    let t10 = cross(0.1, i0);
    let t90 = cross(0.9, i0);
    [b, a, t10 - at as f64 / 1e6, t90 - t10]
}

/// The means of each of four figures over `rows`.
fn means(rows: &[[f64; 4]]) -> [f64; 4] {
    let n = rows.len() as f64;
    std::array::from_fn(|k| rows.iter().map(|r| r[k]).sum::<f64>() / n)
}

fn num(row: &HashMap<String, String>, key: &str) -> f64 {
    row[key]
        .parse()
        .unwrap_or_else(|_| panic!("{key}: {row:?}"))
}

/// Asserts `got` within `tol` (a share) of `want`.
#[track_caller]
fn near(what: &str, got: f64, want: f64, tol: f64) {
    assert!(
        (got / want - 1.0).abs() <= tol,
        "{what}: measured {got:.3}, true {want:.3} (tolerance {:.0} %)",
        tol * 100.0
    );
}

/// The true edges of the recorded moments of `event` (`spawn`, `kill`,
/// `exit`) on every GPU.
fn true_moments(r: &Run, event: &str, gpus: &[(i64, Vec<f64>)]) -> Vec<[f64; 4]> {
    let ms = 1_000_000;
    let notes: Vec<(String, i64)> = r
        .events()
        .iter()
        .filter(|e| e["topic"] == "lifecycle")
        .map(|e| {
            (
                e["detail"]["event"].as_str().unwrap().to_string(),
                e["detail"]["at_ns"].as_i64().unwrap(),
            )
        })
        .collect();
    let mut out = Vec::new();
    for (k, (ev, at)) in notes.iter().enumerate() {
        let next = notes.get(k + 1).map_or(i64::MAX, |n| n.1);
        if ev != event {
            continue;
        }
        for x in gpus {
            let end = (x.0 + x.1.len() as i64 * ms).min(next);
            out.push(if event == "spawn" {
                // The load's mid-level crossing, then the second past it.
                let mid =
                    0.5 * (mean(x, at - 1000 * ms, *at) + mean(x, at + 1500 * ms, at + 2500 * ms));
                let i = ((at - x.0) / ms) as usize;
                let j = (i..x.1.len()).find(|&j| x.1[j] >= mid).unwrap();
                let edge = x.0 + j as i64 * ms;
                true_edge(
                    x,
                    *at,
                    *at,
                    (at - 1000 * ms, *at),
                    (edge + 1000 * ms, (edge + 2000 * ms).min(end)),
                )
            } else {
                true_edge(
                    x,
                    *at,
                    *at,
                    (at - 1000 * ms, *at),
                    (at + 1000 * ms, (at + 2000 * ms).min(end)),
                )
            });
        }
    }
    out
}

/// The true held falls: every GPU about each recorded fall of the duty
/// rung whose on- and off-phases lie in its measured window.
fn true_held_falls(r: &Run, gpus: &[(i64, Vec<f64>)]) -> Vec<[f64; 4]> {
    let ms = 1_000_000;
    let started = r
        .events()
        .into_iter()
        .find(|e| e["event"] == "rung_started" && e["rung"]["kind"] == "duty")
        .unwrap();
    let (from, to) = (
        started["measure_from_ns"].as_i64().unwrap(),
        started["end_ns"].as_i64().unwrap(),
    );
    let id = started["rung"]["id"].as_u64().unwrap().to_string();
    let mut out = Vec::new();
    for e in csv_rows(&r.dir().join("edges.csv")) {
        let t: i64 = e["achieved_ns"].parse().unwrap();
        if e["rung_id"] != id || e["kind"] != "fall" || t - 1000 * ms < from || t + 1000 * ms > to {
            continue;
        }
        let g: usize = e["gpu"].trim_start_matches("gpu").parse().unwrap();
        let x = &gpus[g];
        out.push(true_edge(
            x,
            t,
            t,
            (t - 100 * ms, t - 5 * ms),
            (t + 500 * ms, t + 950 * ms),
        ));
    }
    out
}

#[test]
fn lifecycle_edges_against_the_truth() {
    let r = run_sim(
        &campaign(BODY),
        &["--sim-gpus", "4", "--seed", "3", "--sim-truth"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let gpus: Vec<_> = (0..4)
        .map(|g| truth_of(r.dir(), &format!("gpu{g}")))
        .collect();
    let rows: HashMap<String, HashMap<String, String>> =
        csv_rows(&r.dir().join("report/lifecycle_edges.csv"))
            .into_iter()
            .map(|row| (row["kind"].clone(), row))
            .collect();
    let report = std::fs::read_to_string(r.dir().join("report/report.md")).unwrap();
    assert!(report.contains("## Lifecycle edges"), "{report}");
    for kind in [
        "start_cold",
        "start_held",
        "stop_kill",
        "stop_exit",
        "stop_held",
    ] {
        assert!(rows.contains_key(kind), "{kind} missing: {rows:?}");
    }
    for (kind, event) in [("stop_kill", "kill"), ("stop_exit", "exit")] {
        let row = &rows[kind];
        let t = means(&true_moments(&r, event, &gpus));
        eprintln!(
            "{kind}: {row:?}\n  truth before {:.2} after {:.2} delay {:.2} ms 10–90 {:.2} ms",
            t[0], t[1], t[2], t[3]
        );
        assert_eq!(num(row, "n"), 16.0, "{row:?}");
        near(
            &format!("{kind} step"),
            num(row, "step_w"),
            t[1] - t[0],
            0.02,
        );
        near(&format!("{kind} 10–90"), num(row, "t10_90_ms"), t[3], 0.10);
        // Issue 58's rule: under twice the samples' spacing the pooled time
        // is a bound (at least this fast), however close it lies.
        assert!(
            num(row, "t10_90_ms") < 2.0 * num(row, "spacing_ms"),
            "{row:?}"
        );
        assert_eq!(row["t10_90_bound"], "true", "{row:?}");
        assert!(
            (num(row, "delay_ms") - t[2]).abs() < 2.0,
            "{kind} delay: {row:?} vs {t:?}"
        );
    }
    let row = &rows["start_cold"];
    let t = means(&true_moments(&r, "spawn", &gpus));
    eprintln!(
        "start_cold: {row:?}\n  truth before {:.2} after {:.2} delay {:.2} ms 10–90 {:.2} ms",
        t[0], t[1], t[2], t[3]
    );
    near("start_cold step", num(row, "step_w"), t[1] - t[0], 0.02);
    near("start_cold delay", num(row, "delay_ms"), t[2], 0.10);
    // The sim's own CUDA initialisation, as it wrote it.
    let init: Vec<f64> = csv_rows(&r.dir().join("sim-truth/jobs.csv"))
        .iter()
        .map(|j| (num(j, "load_ns") - num(j, "spawn_ns")) / 1e6)
        .collect();
    let init = init.iter().sum::<f64>() / init.len() as f64;
    assert!(
        (t[2] - init).abs() < 3.0,
        "true delay {} vs init {init}",
        t[2]
    );
    let (got, res) = (num(row, "t10_90_ms"), num(row, "resolution_ms"));
    assert_eq!(row["t10_90_bound"], "true", "{row:?}");
    assert!(
        got >= 0.9 * t[3] && got < 2.0 * res,
        "start_cold 10–90 bound {got} vs true {} (resolution {res})",
        t[3]
    );
    let row = &rows["stop_held"];
    let t = means(&true_held_falls(&r, &gpus));
    eprintln!(
        "stop_held: {row:?}\n  truth before {:.2} after {:.2} delay {:.2} ms 10–90 {:.2} ms",
        t[0], t[1], t[2], t[3]
    );
    near("stop_held step", num(row, "step_w"), t[1] - t[0], 0.02);
    near("stop_held 10–90", num(row, "t10_90_ms"), t[3], 0.10);
    let bound = num(row, "t10_90_ms") < 2.0 * num(row, "spacing_ms");
    assert_eq!(row["t10_90_bound"], bound.to_string(), "{row:?}");
    assert!(
        (num(row, "delay_ms") - t[2]).abs() < 2.0,
        "stop_held delay: {row:?} vs {t:?}"
    );
    // The mean shapes the predictor reads: from the level before the
    // moment to the level after (the last tenth).
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(r.dir().join("report/summary.json")).unwrap(),
    )
    .unwrap();
    for e in summary["lifecycle"].as_array().unwrap() {
        if e["kind"] == "start_held" || e["kind"] == "stop_held" {
            continue;
        }
        let s: Vec<f64> = serde_json::from_value(e["shape_w"].clone()).unwrap();
        let (t0, step) = (
            e["shape_t0_ms"].as_f64().unwrap(),
            e["shape_step_ms"].as_f64().unwrap(),
        );
        let zero = (-t0 / step).round() as usize;
        let avg = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let level = |k: &str| e[k]["mean"].as_f64().unwrap();
        assert!(s.len() > 100 && zero > 10, "{e}");
        near(
            &format!("{} shape before", e["kind"]),
            avg(&s[..zero]),
            level("before_w"),
            0.02,
        );
        near(
            &format!("{} shape after", e["kind"]),
            avg(&s[s.len() * 9 / 10..]),
            level("after_w"),
            0.02,
        );
    }
}

#[test]
fn a_malformed_stop_is_refused_at_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("campaign.toml");
    let body = BODY.replace("stop = \"exit\"", "stop = \"sigint\"");
    std::fs::write(&file, campaign(&body)).unwrap();
    let line = campaign(&body)
        .lines()
        .position(|l| l.contains("sigint"))
        .unwrap()
        + 1;
    let out = powerlab_output(["validate", file.to_str().unwrap()]);
    assert_exit(&out, 1);
    let err = text(&out.stderr) + &text(&out.stdout);
    assert!(
        err.contains(&format!("campaign.toml:{line}")),
        "line {line}: {err}"
    );
    assert!(
        err.contains("unknown stop `sigint`") && err.contains("sigkill"),
        "{err}"
    );
}

/// `powerlab run` on the simulated node in real time, the phases' own
/// commands run (`--sim-run-command`).
fn run_commands(body: &str) -> Run {
    let results = tempfile::tempdir().unwrap();
    let file = results.path().join("campaign.toml");
    std::fs::write(&file, campaign(body)).unwrap();
    let root = results.path().join("runs");
    let out = capture(powerlab().args([
        "run",
        file.to_str().unwrap(),
        "--backend",
        "sim",
        "--sim-pace",
        "realtime",
        "--sim-run-command",
        "--allow-programs",
        "--sim-gpus",
        "1",
        "--sim-truth",
        "--results",
        root.to_str().unwrap(),
    ]));
    let dir = run_dirs(&root).into_iter().next();
    Run { out, results, dir }
}

#[test]
fn a_command_is_killed_or_exits_as_its_phase_says() {
    let body = "[[phase]]\nkind = \"workload\"\nname = \"kill\"\ncommand = [\"sleep\", \"60\"]\nduration_s = 2\ncooldown_s = 2\nstop = \"sigkill\"\n\
        [[phase]]\nkind = \"workload\"\nname = \"exit\"\ncommand = [\"sleep\", \"4\"]\nduration_s = 2\ncooldown_s = 2\nstop = \"exit\"\nstop_grace_s = 5\n";
    let r = run_commands(body);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let notes: Vec<(String, String, i64)> = r
        .events()
        .iter()
        .filter(|e| e["topic"] == "lifecycle")
        .map(|e| {
            let d = &e["detail"];
            (
                d["label"].as_str().unwrap().to_string(),
                d["event"].as_str().unwrap().to_string(),
                d["at_ns"].as_i64().unwrap(),
            )
        })
        .collect();
    let at = |label: &str, ev: &str| {
        notes
            .iter()
            .find(|n| n.0 == label && n.1 == ev)
            .unwrap_or_else(|| panic!("{label} {ev}: {notes:?}"))
            .2
    };
    let ends = |label: &str| {
        r.events()
            .into_iter()
            .find(|e| e["event"] == "rung_started" && e["rung"]["label"] == label)
            .unwrap()["end_ns"]
            .as_i64()
            .unwrap()
    };
    // Killed at its window's end; `sleep 4` exits 4 s after its spawn,
    // after its window (1 s warm-up, 2 s window) and within the grace.
    let kill_late_ms = (at("kill", "kill") - ends("kill")) as f64 / 1e6;
    assert!((0.0..250.0).contains(&kill_late_ms), "{kill_late_ms} ms");
    let ran_s = (at("exit", "exit") - at("exit", "spawn")) as f64 / 1e9;
    assert!((3.95..4.3).contains(&ran_s), "{ran_s} s");
    assert!(at("exit", "exit") > ends("exit"));
    let ending: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.dir().join("workload/kill.json")).unwrap())
            .unwrap();
    assert_eq!(ending["stopped_by"], "sigkill", "{ending}");
    assert_eq!(
        ending["stop_ns"].as_i64(),
        Some(at("kill", "kill")),
        "{ending}"
    );
    // The simulated GPU was told: its process ended at those moments.
    let jobs = csv_rows(&r.dir().join("sim-truth/jobs.csv"));
    assert_eq!(jobs.len(), 2, "{jobs:?}");
    assert_eq!(jobs[0]["end"], "kill");
    assert_eq!(
        jobs[0]["end_ns"].parse::<i64>().unwrap(),
        at("kill", "kill")
    );
    assert_eq!(jobs[1]["end"], "exited");
}

#[test]
fn a_command_that_does_not_exit_on_its_own_fails_the_run() {
    let body = "[[phase]]\nkind = \"workload\"\nname = \"exit\"\ncommand = [\"sleep\", \"60\"]\nduration_s = 1\ncooldown_s = 1\nstop = \"exit\"\nstop_grace_s = 1\n";
    let r = run_commands(body);
    assert_ne!(r.code(), 0);
    let err = r.stderr();
    assert!(
        err.contains("did not exit on its own within 1.0 s") && err.contains("sleep 60"),
        "{err}"
    );
    assert!(
        !r.events()
            .iter()
            .any(|e| e["topic"] == "lifecycle" && e["detail"]["event"] == "exit"),
        "an exit that did not happen was recorded"
    );
}
