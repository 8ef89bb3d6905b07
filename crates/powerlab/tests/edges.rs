#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Edge figures are per rung and per edge kind: a rung whose falls come
//! late shows them, even when a fast rung of the same run has thousands of
//! good edges that would swamp a pooled percentile.

use crate::util::*;

#[test]
fn late_falls_of_one_rung_show_in_that_rung_and_nowhere_else() {
    // A fast rung first (20 ms: ~1,000 edges per GPU), then a slow one
    // whose falls on gpu1 come 300 µs late (from 16 s into the run on).
    let body = "[[phase]]\nkind = \"duty\"\nname = \"fast\"\nperiod_ms = 20\nduration_s = 10\n\
                [[phase]]\nkind = \"duty\"\nname = \"slow\"\nperiod_ms = 2000\nduration_s = 10\n";
    let r = run_sim(
        &campaign(body),
        &[
            "--sim-gpus",
            "2",
            "--sim-fault",
            "gpu1:late_falls_at=16s@300us",
        ],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = r.summary();
    let row = |p: &str| {
        s.iter()
            .find(|x| x["label"].as_str().unwrap().starts_with(p))
            .unwrap()
            .clone()
    };
    let (fast, slow) = (row("fast/"), row("slow/"));
    let f = |x: &serde_json::Value, k: &str| {
        x[k].as_f64().unwrap_or_else(|| panic!("{k} missing: {x}"))
    };
    // The fast rung: every edge within a few µs, nothing flagged.
    assert!(
        f(&fast, "fall_err_p99_us") < 10.0 && f(&fast, "rise_err_p99_us") < 10.0,
        "{fast}"
    );
    assert!(fast["edges_verdict"].is_null(), "{fast}");
    // The slow rung: its falls are late on one GPU of two, so its fall p99
    // and max show the 300 µs while its rises stay good.
    assert!(
        f(&slow, "fall_err_max_us") >= 300.0 && f(&slow, "fall_err_p99_us") >= 290.0,
        "{slow}"
    );
    assert!(f(&slow, "rise_err_p99_us") < 10.0, "{slow}");
    assert!(
        f(&slow, "edge_skew_p99_us") >= 290.0,
        "the two GPUs' falls spread by the lateness: {slow}"
    );
    let verdict = slow["edges_verdict"]
        .as_str()
        .unwrap_or_else(|| panic!("not flagged: {slow}"));
    assert!(
        verdict.contains("fall p99") && verdict.contains("fall max"),
        "{verdict}"
    );
    // Pooled over both rungs the late falls would sit far below the 99th
    // percentile: the per-rung figure is the one that shows them.
    let report = std::fs::read_to_string(r.dir().join("report/report.md")).unwrap();
    assert!(
        report.contains("## Edges per rung") && report.contains("EDGES OUT OF TOLERANCE"),
        "{report}"
    );
    // Every GPU's device-clock probes are in the event log, per rung.
    let clocks = r
        .events()
        .into_iter()
        .filter(|e| e["event"] == "note" && e["topic"] == "device_clock")
        .count();
    assert_eq!(clocks, 2);
}
