#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! The two idle baselines (issue 15): the first rung samples the GPUs
//! before any CUDA context exists, the idle rungs proper hold it. The
//! simulated GPU idles lower and at low clocks until its first prepare
//! creates the context; its true waveform is the oracle for both means.

use crate::util::*;

const RUNGS: &str = "[[phase]]\nkind = \"idle\"\nduration_s = 4\n\
[[phase]]\nkind = \"sustained\"\nduration_s = 4\n";

#[test]
fn both_idle_baselines_are_measured_and_named() {
    let r = run_sim(&campaign(RUNGS), &["--sim-gpus", "2", "--sim-truth"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let started: Vec<serde_json::Value> = r
        .events()
        .into_iter()
        .filter(|e| e["event"] == "rung_started")
        .collect();
    assert_eq!(started[0]["rung"]["label"], "idle-0/no-context");
    assert_eq!(started[0]["rung"]["no_context"], true);
    assert_eq!(started[1]["rung"]["label"], "idle-0");
    assert!(started[1]["rung"].get("no_context").is_none());
    // The barrier of the untouched rung waited on no GPU.
    let barrier0 = r
        .events()
        .into_iter()
        .find(|e| e["event"] == "barrier" && e["rung_id"] == 0)
        .unwrap();
    assert_eq!(barrier0["ready"].as_array().unwrap().len(), 0, "{barrier0}");

    // The oracle: the true node power over each rung's measured window.
    let (t0, truth) = true_node(r.dir());
    let true_mean = |e: &serde_json::Value| {
        let (a, b) = (
            e["measure_from_ns"].as_i64().unwrap(),
            e["end_ns"].as_i64().unwrap(),
        );
        let (i, j) = (
            ((a - t0) / 1_000_000) as usize,
            ((b - t0) / 1_000_000) as usize,
        );
        truth[i..j].iter().sum::<f64>() / (j - i) as f64
    };
    let summary = r.summary();
    let mean_of = |label: &str| {
        summary.iter().find(|s| s["label"] == label).unwrap()["mean_w"]
            .as_f64()
            .unwrap()
    };
    let (bare, held) = (mean_of("idle-0/no-context"), mean_of("idle-0"));
    let (true_bare, true_held) = (true_mean(&started[0]), true_mean(&started[1]));
    assert!(
        (bare - true_bare).abs() < 0.01 * true_bare,
        "{bare} vs true {true_bare}"
    );
    assert!(
        (held - true_held).abs() < 0.01 * true_held,
        "{held} vs true {true_held}"
    );
    // The simulated H200: 60 W per GPU bare, 90 W with the context held.
    assert!((true_bare - 120.0).abs() < 2.0, "{true_bare}");
    assert!((true_held - 180.0).abs() < 2.0, "{true_held}");

    // The per-GPU table shows the clocks of each state.
    let rows = csv_rows(&r.dir().join("report/per_gpu.csv"));
    for row in &rows {
        let want = match row["rung"].as_str() {
            "idle-0/no-context" => "345.0",
            "idle-0" => "1980.0",
            _ => continue,
        };
        assert_eq!(row["sm_clock_mhz"], want, "{row:?}");
        // No GPU is flagged against its peers in either baseline.
        assert!(row["flag"].is_empty(), "{row:?}");
    }
    // The report names both, in the answer block and in their own section.
    let md = std::fs::read_to_string(r.dir().join("report/report.md")).unwrap();
    let answer = md.split("\n## ").nth(1).unwrap();
    let line = answer
        .lines()
        .find(|l| l.contains("**Idle, two baselines:**"))
        .unwrap();
    assert!(
        line.contains(&format!("{bare:.0} W with no CUDA context of this process"))
            && line.contains(&format!("{held:.0} W with the context held"))
            && line.contains("uses the context-held one"),
        "{line}"
    );
    assert!(md.contains("## Idle baselines (GPU draw only)"), "{md}");
}
