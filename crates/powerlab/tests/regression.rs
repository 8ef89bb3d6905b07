#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! The devlog's five harness defects, each pinned on the simulated node.
//! Every one of them once produced plausible output instead of an error.

use crate::util::*;

/// Defect 1: a build went on without NCCL. A campaign with an NCCL phase on
/// a node without NCCL must fail before the first rung, naming NCCL.
#[test]
fn defect1_missing_nccl_fails_before_any_load() {
    let c = campaign(
        "[[phase]]\nkind = \"nccl\"\nduration_s = 2\n[[phase]]\nkind = \"sustained\"\nduration_s = 2\n",
    );
    let r = run_sim(&c, &["--sim-gpus", "2", "--sim-fault", "node:no_nccl"]);
    assert_ne!(r.code(), 0);
    let err = r.stderr();
    assert!(err.contains("NCCL"), "{err}");
    assert!(err.contains("nothing was run"), "{err}");
    assert!(
        err.contains("libnccl.so.2"),
        "says what was searched: {err}"
    );
    assert!(r.dir.is_none(), "no run directory, no load");
    // The same campaign without the fault runs.
    let ok = run_sim(&c, &["--sim-gpus", "2"]);
    assert_eq!(ok.code(), 0, "{}", ok.stderr());
}

/// Defect 2: the collator summed the driver-averaged field, which flattened
/// every swing. Summaries must report the swing the fast instruments see.
#[test]
fn defect2_summaries_report_the_instant_swing_not_the_average() {
    let c =
        campaign("[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiod_ms = 500\nduration_s = 10\n");
    let r = run_sim(&c, &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let s = &r.summary()[0];
    assert_eq!(s["instrument"], "buffered_w");
    let swing = s["swing_w"].as_f64().unwrap();
    let avg_swing = s["average_field_swing_w"].as_f64().unwrap();
    // Two H200s switching between ~90 W and ~700 W: over 1 kW of swing.
    assert!(swing > 1000.0, "buffered swing {swing}");
    assert!(s["instant_spread_w"].as_f64().unwrap() > 800.0, "{s}");
    // The 1 s average sees almost none of it — and is never the result.
    assert!(
        avg_swing < 0.2 * swing,
        "average field swing {avg_swing} vs swing {swing}"
    );
    // The means agree: same energy, different visibility.
    let (m, am) = (
        s["mean_w"].as_f64().unwrap(),
        s["average_field_mean_w"].as_f64().unwrap(),
    );
    assert!((m - am).abs() < 0.05 * m, "{m} vs {am}");
}

/// Defect 3: a deliberate stagger was reported as a barrier failure.
#[test]
fn defect3_stagger_is_intended_not_a_barrier_failure() {
    let c = campaign(
        "[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiod_ms = 100\nduration_s = 3\nmode = \"staggered\"\n",
    );
    let r = run_sim(&c, &["--sim-gpus", "4"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert!(!r.stderr().contains("barrier missed"), "{}", r.stderr());
    let started = r
        .events()
        .into_iter()
        .find(|e| e["event"] == "rung_started")
        .unwrap();
    let offsets: Vec<i64> = started["offsets_ns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    // Quarters of the period the GPUs ran (100 ms, detuned from the 20 ms grid).
    let period_ns = started["rung"]["period_ms"].as_f64().unwrap() * 1e6;
    assert_eq!(started["rung"]["nominal_period_ms"].as_f64(), Some(100.0));
    let quarters: Vec<i64> = (0..4)
        .map(|i| (i as f64 * period_ns / 4.0).round() as i64)
        .collect();
    assert_eq!(offsets, quarters, "intended offsets are recorded");
    let s = &r.summary()[0];
    assert_eq!(s["barrier_ok"], true);
    // Skew is measured against intended starts: microseconds, not 75 ms.
    assert!(s["start_skew_us"].as_f64().unwrap() < 50.0, "{s}");
    assert!(s["start_error_max_us"].as_f64().unwrap() < 50.0, "{s}");
}

/// Defect 4: a fixed barrier lead was 5 s short on a cold cache, so every
/// device missed it. A GPU with a 10 s cold start must still meet the barrier.
#[test]
fn defect4_cold_gpu_still_meets_the_barrier() {
    let c = campaign("[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiod_ms = 200\nduration_s = 3\n");
    let r = run_sim(
        &c,
        &["--sim-gpus", "4", "--sim-fault", "gpu2:cold_start=10s"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let barrier = r
        .events()
        .into_iter()
        .find(|e| e["event"] == "barrier")
        .unwrap();
    let ready: Vec<i64> = barrier["ready"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["ready_at_ns"].as_i64().unwrap())
        .collect();
    assert!(
        ready[2] - ready[0] > 7_000_000_000,
        "gpu2 was ready ~8 s later than gpu0: {ready:?}"
    );
    assert!(
        barrier["epoch_ns"].as_i64().unwrap() > ready[2],
        "the epoch follows the slowest readiness"
    );
    let s = &r.summary()[0];
    assert_eq!(s["barrier_ok"], true, "{s}");
    assert!(s["start_error_max_us"].as_f64().unwrap() < 50.0, "{s}");
}

/// Defect 5: the barrier undid warm-up (devices idled while they waited), so
/// a no-duty rung showed 410 W of spread that was all ramp. A duty-1.0 rung
/// right after a barrier must show no ramp from idle.
#[test]
fn defect5_no_ramp_from_idle_after_the_barrier() {
    let c = campaign(
        "[[phase]]\nkind = \"idle\"\nduration_s = 2\n[[phase]]\nkind = \"duty\"\nname = \"full\"\nperiod_ms = 500\nduty = 1.0\nduration_s = 4\nwarmup_s = 2\n",
    );
    let r = run_sim(
        &c,
        &["--sim-gpus", "4", "--sim-fault", "gpu1:cold_start=6s"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let started = r
        .events()
        .into_iter()
        .find(|e| e["event"] == "rung_started" && e["rung"]["phase"] == "full")
        .unwrap();
    let epoch = started["epoch_ns"].as_i64().unwrap();
    let s = r
        .summary()
        .into_iter()
        .find(|s| s["phase"] == "full")
        .unwrap();
    let mean = s["mean_w"].as_f64().unwrap();
    let curve = r.node_curve();
    let first: Vec<f64> = curve
        .iter()
        .filter(|(t, _)| *t >= epoch && *t < epoch + 100_000_000)
        .filter_map(|(_, v)| *v)
        .collect();
    assert!(first.len() >= 8);
    let lowest = first.iter().cloned().fold(f64::INFINITY, f64::min);
    assert!(
        lowest > 0.97 * mean,
        "first 100 ms dips to {lowest} W against a rung mean of {mean} W"
    );
    assert!(s["spread_w"].as_f64().unwrap() < 0.06 * mean, "{s}");
    // And the node really was warm before the epoch: no idle gap at the barrier.
    let before: Vec<f64> = curve
        .iter()
        .filter(|(t, _)| *t >= epoch - 300_000_000 && *t < epoch)
        .filter_map(|(_, v)| *v)
        .collect();
    assert!(
        before.iter().all(|v| *v > 0.9 * mean),
        "the barrier wait idled: {before:?}"
    );
}

/// Issue 58: a last rung without cooldown ends a few ms after its last
/// sample, before the next one is due; nothing is lost, yet the report
/// opened with "INCOMPLETE RAW DATA (99.3 %)".
#[test]
fn a_last_rung_without_cooldown_is_not_incomplete() {
    let c = campaign(
        "[[phase]]\nkind = \"idle\"\nduration_s = 2\n[[phase]]\nkind = \"sustained\"\nname = \"last\"\nduration_s = 5\ncooldown_s = 0\n",
    );
    let r = run_sim(&c, &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let dir = r.dir.as_ref().unwrap();
    let report = std::fs::read_to_string(dir.join("report/report.md")).unwrap();
    let first = report.lines().next().unwrap_or_default();
    assert!(!first.contains("INCOMPLETE"), "{first}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report/summary.json")).unwrap())
            .unwrap();
    let last = summary["rungs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == "last")
        .unwrap();
    assert!(last["incomplete"].is_null(), "{last}");
    assert!(last["mean_w"].as_f64().unwrap() > 0.0, "{last}");
}
