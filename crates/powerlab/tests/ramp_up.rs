#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Ramp-up of swing depth (issue 15): before the first in-phase multi-GPU
//! duty rung, 1, 2, 4, … GPUs swing while the rest idle. `powerlab plan`
//! shows the steps; a node-power trip in a step stops the run before the
//! next depth; the collator keeps the steps apart from the full-node rungs.

use crate::util::*;

/// An idle rung, a staggered and an in-phase rung at 200 ms (2 s windows).
const SWINGS: &str = "[[phase]]\nkind = \"idle\"\nduration_s = 1\n[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiod_ms = 200\nduration_s = 2\nmodes = [\"staggered\", \"in_phase\"]\n";

fn plan(campaign_text: &str, args: &[&str]) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("c.toml");
    std::fs::write(&file, campaign_text).unwrap();
    let out = capture(powerlab().arg("plan").arg(&file).args(args));
    assert_exit(&out, 0);
    text(&out.stdout)
}

/// The rung column of the plan table, in order.
fn rung_column(table: &str) -> Vec<String> {
    table
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("id "))
        .skip(1)
        .take_while(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
        .collect()
}

#[test]
fn plan_shows_the_ramp_up_steps_for_8_gpus_and_none_when_off_or_for_2_gpus() {
    let table = plan(&campaign(SWINGS), &["--gpus", "8"]);
    assert_eq!(
        rung_column(&table),
        vec![
            "idle-0/no-context",
            "idle-0",
            "d/p200ms/staggered",
            "rampup/1of8/p200ms",
            "rampup/2of8/p200ms",
            "rampup/4of8/p200ms",
            "d/p200ms/in_phase",
        ],
        "{table}"
    );
    let step4 = table
        .lines()
        .find(|l| l.contains("rampup/4of8/p200ms"))
        .unwrap();
    assert!(step4.contains("ramp_up"), "{step4}");
    assert!(
        step4.contains("[0.000, 0.000, 0.000, 0.000, idle, idle, idle, idle]"),
        "{step4}"
    );
    assert!(
        table.contains("note: ramp-up: 1, 2, 4 of 8 GPUs swing in phase"),
        "{table}"
    );
    // The JSON plan carries which GPUs swing.
    let json: serde_json::Value =
        serde_json::from_str(&plan(&campaign(SWINGS), &["--gpus", "8", "--json"])).unwrap();
    let rungs = json["rungs"].as_array().unwrap();
    assert_eq!(rungs[3]["kind"], "ramp_up");
    assert_eq!(rungs[3]["swinging"], serde_json::json!([0]));
    assert_eq!(rungs[5]["swinging"], serde_json::json!([0, 1, 2, 3]));
    assert!(rungs[6].get("swinging").is_none(), "{}", rungs[6]);
    // Off by the campaign's word, and by default on two GPUs.
    let off = campaign(SWINGS).replace(
        "confirm_node_swing = true",
        "confirm_node_swing = true\nramp_up = false",
    );
    for table in [
        plan(&off, &["--gpus", "8"]),
        plan(&campaign(SWINGS), &["--gpus", "2"]),
    ] {
        assert!(!table.contains("rampup/"), "{table}");
        assert_eq!(rung_column(&table).len(), 4, "{table}");
    }
}

/// The node-power limit: above two H200s swinging with six idle (2 × ~730
/// + 6 × 90 W ≈ 2 kW), below four loaded (4 × 700 + 4 × 90 W ≈ 3.2 kW).
const LIMIT: &str = "[limits]\nmax_node_power_w = 2600\n";
const IN_PHASE: &str = "[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiod_ms = 200\nduration_s = 2\nmode = \"in_phase\"\n";

fn started(r: &Run) -> Vec<String> {
    r.events()
        .iter()
        .filter(|e| e["event"] == "rung_started")
        .map(|e| e["rung"]["label"].as_str().unwrap().to_string())
        .collect()
}

fn stopped_in(r: &Run) -> serde_json::Value {
    r.events()
        .into_iter()
        .find(|e| e["event"] == "note" && e["topic"] == "stopped_in_rung")
        .unwrap_or_else(|| panic!("no stopped_in_rung note: {:?}", r.events()))["detail"]
        .clone()
}

#[test]
fn a_node_power_trip_in_the_4_gpu_step_stops_the_run_before_the_full_rung() {
    let r = run_sim(
        &campaign(&format!("{LIMIT}{IN_PHASE}")),
        &["--sim-gpus", "8"],
    );
    assert_eq!(r.code(), 4, "{}", r.stderr());
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.dir().join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(m["status"]["state"], "failed");
    let reason = m["status"]["reason"].as_str().unwrap();
    assert!(reason.starts_with("interlock max_node_power_w"), "{reason}");
    let events = r.events();
    // The 1- and 2-GPU steps ran to their end.
    let ended: Vec<u64> = events
        .iter()
        .filter(|e| e["event"] == "rung_ended")
        .map(|e| e["rung_id"].as_u64().unwrap())
        .collect();
    assert_eq!(ended, vec![0, 1], "{events:?}");
    // The trip: after the 2-GPU step ended, in the 4-GPU step.
    let at = |pred: &dyn Fn(&serde_json::Value) -> bool| events.iter().position(pred).unwrap();
    let trip = at(&|e| e["event"] == "interlock");
    assert_eq!(events[trip]["limit"], "max_node_power_w");
    assert!(trip > at(&|e| e["event"] == "rung_ended" && e["rung_id"] == 1));
    let note = stopped_in(&r);
    assert_eq!(note["label"], "rampup/4of8/p200ms", "{note}");
    assert_eq!(note["kind"], "ramp_up");
    assert!(
        note["reason"]
            .as_str()
            .unwrap()
            .starts_with("interlock max_node_power_w"),
        "{note}"
    );
    // No later rung: the full 8-GPU rung never started.
    let labels = started(&r);
    assert!(
        labels.iter().all(|l| l.starts_with("rampup/")),
        "{labels:?}"
    );
    assert!(!labels.iter().any(|l| l == "d/p200ms/in_phase"));
    assert!(r.stderr().contains("max_node_power_w"), "{}", r.stderr());
    // The answer block says where it stopped: that step has no figures.
    let md = std::fs::read_to_string(r.dir().join("report/report.md")).unwrap();
    let answer = md.split("\n## ").nth(1).unwrap();
    assert!(
        answer.contains(
            "**Stopped:** in rung `rampup/4of8/p200ms` (ramp_up): interlock max_node_power_w"
        ),
        "{answer}"
    );

    // Without the ramp-up the same limit trips in the full rung itself.
    let off = campaign(&format!("{LIMIT}{IN_PHASE}")).replace(
        "confirm_node_swing = true",
        "confirm_node_swing = true\nramp_up = false",
    );
    let r = run_sim(&off, &["--sim-gpus", "8"]);
    assert_eq!(r.code(), 4, "{}", r.stderr());
    assert_eq!(stopped_in(&r)["label"], "d/p200ms/in_phase");
}

#[test]
fn the_collator_keeps_ramp_up_steps_apart_from_the_full_node_rungs() {
    // Long enough for the full rung to fold into a node cycle.
    let long = IN_PHASE.replace("duration_s = 2", "duration_s = 8");
    let r = run_sim(&campaign(&long), &["--sim-gpus", "4"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert_eq!(
        started(&r),
        vec![
            "rampup/1of4/p200ms",
            "rampup/2of4/p200ms",
            "d/p200ms/in_phase"
        ]
    );
    let step = r
        .events()
        .into_iter()
        .find(|e| e["event"] == "rung_started")
        .unwrap();
    assert_eq!(step["rung"]["kind"], "ramp_up");
    assert_eq!(step["rung"]["swinging"], serde_json::json!(["gpu0"]));
    // GPUs at such different loads are never flagged against each other.
    let rows = csv_rows(&r.dir().join("report/per_gpu.csv"));
    let step_rows: Vec<_> = rows
        .iter()
        .filter(|row| row["rung"].starts_with("rampup/"))
        .collect();
    assert_eq!(step_rows.len(), 2 * 4);
    assert!(
        step_rows.iter().all(|row| row["flag"].is_empty()),
        "{step_rows:?}"
    );
    let summary = r.summary();
    assert_eq!(summary[0]["kind"], "ramp_up", "{}", summary[0]);
    assert_eq!(summary[0]["label"], "rampup/1of4/p200ms");
    // The answer's largest in-phase swing is the full-node rung's.
    let report = std::fs::read_to_string(r.dir().join("report/report.md")).unwrap();
    let answer = report
        .lines()
        .find(|l| l.contains("**Largest in-phase swing:**"))
        .unwrap();
    assert!(answer.contains("rung `d/p200ms/in_phase`"), "{answer}");
}
