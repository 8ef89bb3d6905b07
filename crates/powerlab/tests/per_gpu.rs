#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! The per-GPU table (issue 15): one GPU held to a lower power limit must
//! be named, in every loaded rung, with its limiter, and a healthy node
//! must have no GPU flagged.

use crate::util::*;
use std::collections::HashMap;

const RUNGS: &str = "[[phase]]\nkind = \"idle\"\nduration_s = 3\n\
[[phase]]\nkind = \"sustained\"\nduration_s = 6\n\
[[phase]]\nkind = \"duty\"\nname = \"sweep\"\nperiods_ms = [1000]\nduration_s = 6\nmodes = [\"in_phase\", \"staggered\"]\n";

fn table(r: &Run) -> Vec<HashMap<String, String>> {
    csv_rows(&r.dir().join("report/per_gpu.csv"))
}

#[test]
fn a_gpu_held_to_a_lower_limit_is_named_with_its_limiter() {
    let r = run_sim(
        &campaign(RUNGS),
        &["--sim-gpus", "4", "--sim-fault", "gpu2:power_limit_w=500"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let rows = table(&r);
    assert_eq!(
        rows.len(),
        7 * 4,
        "4 rungs, the idle before any context and 2 ramp-up steps × 4 GPUs"
    );
    for row in &rows {
        // gpu2 idles through the ramp-up steps (gpu0, then gpu0 and gpu1
        // swing): compared only with the other idle GPUs, it is not flagged,
        // and neither is a swinging GPU for the idle ones beside it.
        let loaded = !row["rung"].starts_with("idle") && !row["rung"].starts_with("rampup/");
        let flagged = !row["flag"].is_empty();
        assert_eq!(flagged, loaded && row["gpu"] == "gpu2", "{row:?}");
        if flagged {
            assert!(
                row["flag"].starts_with("gpu2 ") && row["flag"].contains("below"),
                "{row:?}"
            );
            assert!(row["flag"].contains("sw_power_cap"), "{row:?}");
            let of_limit: f64 = row["mean_of_limit"].parse().unwrap();
            assert_eq!(row["limit_w"], "500.0", "{row:?}");
            // Held at its limit in the sustained rung.
            if row["rung"].starts_with("sustained") {
                assert!(of_limit > 0.95, "{row:?}");
                assert_eq!(row["power_cap_share"], "1.0", "{row:?}");
            }
        }
    }
    let md = std::fs::read_to_string(r.dir().join("report/report.md")).unwrap();
    assert!(
        md.contains("GPU-rung(s) differ from their peers' median"),
        "{md}"
    );
    assert!(md.contains("gpu2 2"), "names gpu2 with its gap: {md}");
    // The answer block, before everything else, names it too.
    let answer = md.split("\n## ").nth(1).unwrap();
    assert!(answer.starts_with("The answer (GPU draw only"), "{answer}");
    let throttling = answer
        .lines()
        .find(|l| l.contains("**Throttling:**"))
        .unwrap();
    assert!(
        throttling.contains("gpu2 is -")
            && throttling.contains("in 3 rung(s)")
            && throttling.contains("sw_power_cap"),
        "{throttling}"
    );
    assert!(
        answer.contains("**Node limit sum:** 2600 W"),
        "3 × 700 + 500: {answer}"
    );
}

#[test]
fn a_healthy_node_has_no_gpu_flagged() {
    let r = run_sim(&campaign(RUNGS), &["--sim-gpus", "4"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let rows = table(&r);
    assert!(rows.iter().all(|row| row["flag"].is_empty()), "{rows:?}");
    for row in rows
        .iter()
        .filter(|row| row["rung"].starts_with("sustained"))
    {
        assert!(row["events"].contains("sw_power_cap"), "{row:?}");
        let t: f64 = row["gpu_temp_max_c"].parse().unwrap();
        assert!((30.0..90.0).contains(&t), "{row:?}");
        assert!(
            row["sm_clock_mhz"].parse::<f64>().unwrap() > 1000.0,
            "{row:?}"
        );
    }
    let md = std::fs::read_to_string(r.dir().join("report/report.md")).unwrap();
    assert!(
        md.contains("No GPU's mean differs from its peers' median"),
        "{md}"
    );
}

fn gap(row: &HashMap<String, String>) -> f64 {
    row["energy_gap"].parse().unwrap()
}

#[test]
fn the_energy_cross_check_flags_spikes_between_the_samples() {
    let healthy = run_sim(&campaign(RUNGS), &["--sim-gpus", "4"]);
    let spiky = run_sim(
        &campaign(RUNGS),
        &["--sim-gpus", "4", "--sim-fault", "gpu1:spikes_w=300"],
    );
    assert_eq!(spiky.code(), 0, "{}", spiky.stderr());
    // Constant-load rungs of a healthy node: counter and samples agree
    // (the ramp-up steps are square waves, like the sweep).
    for row in table(&healthy)
        .iter()
        .filter(|r| !r["rung"].starts_with("sweep") && !r["rung"].starts_with("rampup/"))
    {
        assert!(gap(row).abs() < 0.005, "{row:?}");
        assert!(row["energy_flag"].is_empty(), "{row:?}");
    }
    let rows = table(&spiky);
    // 4 ms bursts of 300 W every 20 ms, between the 6 ms windows: the
    // idle GPU's counter sees ~60 W the samples miss.
    let idle1 = rows
        .iter()
        .find(|r| r["rung"].starts_with("idle") && r["gpu"] == "gpu1")
        .unwrap();
    assert!(gap(idle1) > 0.05, "{idle1:?}");
    assert!(
        idle1["energy_flag"].starts_with("gpu1: the energy counter saw"),
        "{idle1:?}"
    );
    for row in rows.iter().filter(|r| {
        r["gpu"] != "gpu1" && !r["rung"].starts_with("sweep") && !r["rung"].starts_with("rampup/")
    }) {
        assert!(row["energy_flag"].is_empty(), "{row:?}");
    }
    let md = std::fs::read_to_string(spiky.dir().join("report/report.md")).unwrap();
    assert!(md.contains("**Energy cross-check:"), "{md}");
}

/// Issue 31, defect 7: after `--sim-fault gpu1:power_limit_w=250` the raw
/// file was refused as "rescaled or corrupt" (891 W is above 3 × 250 W), so
/// the documented fault made a run that could never be collated. The
/// ceiling no longer depends on a lowered limit; the run collates and the
/// limited GPU is named.
#[test]
fn a_gpu_with_a_lowered_limit_collates_and_is_named() {
    let r = run_sim(
        &campaign(RUNGS),
        &["--sim-gpus", "2", "--sim-fault", "gpu1:power_limit_w=250"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let rows = table(&r);
    assert!(
        rows.iter().any(|row| row["gpu"] == "gpu1"
            && row["limit_w"] == "250.0"
            && row["flag"].starts_with("gpu1 ")),
        "{rows:?}"
    );
}
