#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Event and edge logs edited or damaged: a duty rung without a period, a
//! planned rung missing or a `rung_started` duplicated in a killed run's
//! `events.jsonl`, and a rack node whose `edges.csv` its collation refuses.

use crate::util::fixtures::*;
use crate::util::*;
use std::process::Command;

/// Issue 31: a duty rung without a period in the event log was folded over
/// an assumed 1000 ms (or not at all); the collation now refuses it,
/// naming the rung.
#[test]
fn a_duty_rung_without_a_period_in_the_event_log_is_refused_naming_it() {
    let r = run_sim(&campaign(DUTY), &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let path = r.dir().join("events.jsonl");
    let mut label = String::new();
    let lines: Vec<String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| {
            let mut e: serde_json::Value = serde_json::from_str(l).unwrap();
            if e["event"] == "rung_started" && e["rung"]["kind"] == "duty" {
                label = e["rung"]["label"].as_str().unwrap().to_string();
                e["rung"]["period_ms"] = serde_json::Value::Null;
            }
            serde_json::to_string(&e).unwrap()
        })
        .collect();
    assert!(!label.is_empty());
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    // As a run killed before its end leaves its manifest: still running,
    // no checksums (so nothing else notices the edit).
    let mpath = r.dir().join("manifest.json");
    let mut m = powerlab_rundir::Manifest::read(&mpath).unwrap();
    m.status = powerlab_rundir::RunStatus::Running;
    m.ended_ns = None;
    m.checksums.clear();
    m.write(&mpath).unwrap();
    let out = powerlab()
        .args(["collate", r.dir().to_str().unwrap()])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&label) && err.contains("period_ms") && err.contains("events.jsonl"),
        "names the file, the rung and the field: {err}"
    );
}

/// Issue 31, defect 3: in a killed run (no checksums at its end) a rung
/// taken out of `events.jsonl` vanished from the report although the plan
/// lists it; now every planned rung without a record is named on the
/// report's first line.
#[test]
fn a_planned_rung_missing_from_a_killed_runs_events_is_named() {
    let c = campaign(
        "[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiods_ms = [500, 400, 300, 250]\nduration_s = 4\n",
    );
    let r = run_sim(&c, &["--sim-gpus", "2", "--sim-fault", "node:die_at=14s"]);
    assert_ne!(r.code(), 0, "{}", r.stderr());
    let d = r.dir().to_path_buf();
    let ev = std::fs::read_to_string(d.join("events.jsonl")).unwrap();
    let started: Vec<serde_json::Value> = ev
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["event"] == "rung_started")
        .collect();
    assert!(started.len() >= 2, "{ev}");
    let gone = started[0]["rung"]["label"].as_str().unwrap().to_string();
    let kept: Vec<&str> = ev
        .lines()
        .filter(|l| !(l.contains("\"rung_started\"") && l.contains(&format!("\"{gone}\""))))
        .collect();
    std::fs::write(d.join("events.jsonl"), kept.join("\n") + "\n").unwrap();
    let out = collate_dir(&d);
    assert_exit(&out, 0);
    let first = std::fs::read_to_string(d.join("report/report.md"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    assert!(first.contains(&gone), "{gone} not named: {first}");
    // The rungs never reached are named too.
    assert!(first.contains("d/p250ms"), "{first}");
}

/// Issue 45, defect 9: a duplicated `rung_started` line in a killed
/// run's `events.jsonl` (no checksums to catch it) made a fake repeat:
/// exit 0, the sustained rung twice in `summary.csv`, n = 2 with a 0 W
/// interval in `repeats.csv`. It is refused, as a duplicated `edges.csv`
/// row is, naming the file and the line.
#[test]
fn a_duplicated_rung_started_in_a_killed_runs_events_is_refused_naming_the_line() {
    let c = campaign(
        "[[phase]]\nkind = \"sustained\"\nname = \"s\"\nduration_s = 3\n[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiods_ms = [500, 400]\nduration_s = 4\n",
    );
    let r = run_sim(&c, &["--sim-gpus", "2", "--sim-fault", "node:die_at=14s"]);
    assert_ne!(r.code(), 0, "{}", r.stderr());
    let d = r.dir().to_path_buf();
    // As killed, the run collates.
    assert_exit(&collate_dir(&d), 0);
    let ev = std::fs::read_to_string(d.join("events.jsonl")).unwrap();
    let mut lines: Vec<&str> = ev.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("\"rung_started\"") && l.contains("\"kind\":\"sustained\""))
        .unwrap_or_else(|| panic!("no sustained rung started: {ev}"));
    lines.insert(at + 1, lines[at]);
    std::fs::write(d.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
    let out = collate_dir(&d);
    let err = text(&out.stderr);
    assert_exit(&out, 1);
    assert!(
        err.contains("events.jsonl")
            && err.contains(&format!("line {}:", at + 2))
            && err.contains("starts a second time")
            && err.contains("remove it"),
        "names the file, the line and what to do: {err}"
    );
}

/// A node whose `edges.csv` its own collation refuses (a link, a foreign
/// header) is a gap in the rack, named in the rack's report, not a reason
/// to refuse the rack and leave its old "complete" report in place.
#[test]
fn a_rack_whose_node_has_a_refused_edge_log_reports_that_node_as_a_gap() {
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../results/h200x2-2026-11-30-rack/2x1/h200-rack-20261130T215107Z-rack2");
    for damage in ["link", "header"] {
        let tmp = tempfile::tempdir().unwrap();
        let rack = tmp.path().join("rack");
        let ok = Command::new("cp")
            .arg("-a")
            .arg(&committed)
            .arg(&rack)
            .status()
            .unwrap()
            .success();
        assert!(ok, "cp -a {}", committed.display());
        let edges = rack.join("nodes/n001-vm/edges.csv");
        if damage == "link" {
            let moved = tmp.path().join("edges.csv");
            std::fs::rename(&edges, &moved).unwrap();
            std::os::unix::fs::symlink(&moved, &edges).unwrap();
        } else {
            let t = std::fs::read_to_string(&edges).unwrap();
            std::fs::write(&edges, t.replacen("rung_id", "rung", 1)).unwrap();
        }
        let out = powerlab_output(["collate", rack.to_str().unwrap(), "--force"]);
        assert_exit(&out, 1);
        assert!(
            text(&out.stderr).contains("the rack is incomplete")
                && text(&out.stderr).contains("n001-vm"),
            "{damage}: {}",
            text(&out.stderr)
        );
        let report = std::fs::read_to_string(rack.join("report/report.md")).unwrap();
        let first = report.lines().next().unwrap_or_default();
        assert!(
            first.contains("DID NOT COMPLETE") && first.contains("n001-vm"),
            "{damage}: the rack's report must say the node is missing: {first}"
        );
        assert!(
            report.contains("covers only the 1 of 2 nodes with a report: n001-vm is not in it"),
            "{damage}: the start skew must not claim the missing node"
        );
    }
}
