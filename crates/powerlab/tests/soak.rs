#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! The soak analysis (issue 15): an injected drift is reported with an
//! interval that holds it, a steady GPU shows none, and a GPU given a
//! thermal slowdown is named with its onset, its thermal-cap time and its
//! falling clock — in the soak table, the per-GPU table and the answer
//! block.

use crate::util::*;
use std::collections::HashMap;

const SOAK: &str = "[[phase]]\nkind = \"idle\"\nduration_s = 3\n\
[[phase]]\nkind = \"soak\"\nduration_s = 240\n";

fn soak_rows(r: &Run) -> HashMap<String, HashMap<String, String>> {
    csv_rows(&r.dir().join("report/soak.csv"))
        .into_iter()
        .map(|row| (row["gpu"].clone(), row))
        .collect()
}

fn f(row: &HashMap<String, String>, k: &str) -> f64 {
    row[k]
        .parse()
        .unwrap_or_else(|_| panic!("{k} = {:?} in {row:?}", row[k]))
}

fn answer(r: &Run) -> String {
    let md = std::fs::read_to_string(r.dir().join("report/report.md")).unwrap();
    md.split("\n## ").nth(1).unwrap().to_string()
}

#[test]
fn an_injected_drift_is_reported_inside_its_interval() {
    // Both GPUs below their limit (so the cap does not absorb the drift);
    // gpu1's demand drifts by +40 W per 10 min. Uncapped at 960 W the
    // simulated HBM runs near 98 °C: the interlock is raised for this.
    let r = run_sim(
        &campaign(&format!(
            "{SOAK}[limits]\nmax_memory_temp_c = 110\nmax_gpu_temp_c = 105\n"
        )),
        &[
            "--sim-gpus",
            "2",
            "--sim-fault",
            "gpu0:power_limit_w=1200",
            "--sim-fault",
            "gpu1:power_limit_w=1200",
            "--sim-fault",
            "gpu1:drift_w_per_10min=40",
        ],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let rows = soak_rows(&r);
    assert_eq!(rows.len(), 3, "gpu0, gpu1, node: {rows:?}");
    let (g0, g1, node) = (&rows["gpu0"], &rows["gpu1"], &rows["node"]);
    for (row, injected) in [(g0, 0.0), (g1, 40.0), (node, 40.0)] {
        let (lo, hi) = (
            f(row, "drift_lo_w_per_10min"),
            f(row, "drift_hi_w_per_10min"),
        );
        assert!(
            lo <= injected && injected <= hi,
            "{}: [{lo}, {hi}] must hold {injected}",
            row["gpu"]
        );
        // A useful interval: narrower than the injected drift itself.
        assert!(hi - lo < 20.0, "{}: [{lo}, {hi}]", row["gpu"]);
        assert_eq!(row["drift_bins"], "24", "{row:?}");
    }
    // Over 240 s at 40 W/10 min the windows' means (the first and last
    // 60 s, centres 180 s apart) differ by about 12 W.
    let change = f(g1, "change_w");
    assert!((change - 12.0).abs() < 3.0, "{change}");
    assert!(f(g0, "change_w").abs() < 3.0, "{g0:?}");
    let a = answer(&r);
    let soak = a.lines().find(|l| l.contains("**Soak:**")).unwrap();
    assert!(soak.contains("**moved**: a trend of +"), "{soak}");
    assert!(soak.contains("W/10 min"), "{soak}");
    let md = std::fs::read_to_string(r.dir().join("report/report.md")).unwrap();
    assert!(md.contains("## Soak (GPU draw only)"), "{md}");
    assert!(md.contains("![soak: power, temperature and SM clock](plots/soak.svg)"));
    assert!(r.dir().join("report/plots/soak.svg").is_file());
}

#[test]
fn a_steady_soak_shows_no_drift_and_reaches_equilibrium() {
    let r = run_sim(&campaign(SOAK), &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let rows = soak_rows(&r);
    for row in rows.values() {
        let (lo, hi) = (
            f(row, "drift_lo_w_per_10min"),
            f(row, "drift_hi_w_per_10min"),
        );
        assert!(lo <= 0.0 && 0.0 <= hi, "{row:?}");
        // Thermal time constant 25 s: within 1 °C well before the last minute.
        let eq = f(row, "equilibrium_s");
        assert!((20.0..180.0).contains(&eq), "{row:?}");
        assert!(row["throttle_bits"].is_empty(), "{row:?}");
        // Held at the cap the whole soak (the sustained virus demand is
        // above the 700 W limit).
        assert!(f(row, "power_cap_share") > 0.9, "{row:?}");
        assert_eq!(f(row, "thermal_cap_share"), 0.0, "{row:?}");
    }
    let a = answer(&r);
    let soak = a.lines().find(|l| l.contains("**Soak:**")).unwrap();
    assert!(soak.contains("— held: no trend"), "{soak}");
    assert!(soak.contains("throttle onset none"), "{soak}");
}

#[test]
fn a_thermal_slowdown_is_named_with_its_onset_and_its_clock() {
    // gpu1 slows down above 60 °C: it reaches that some 25 s into the soak.
    let r = run_sim(
        &campaign(SOAK),
        &["--sim-gpus", "4", "--sim-fault", "gpu1:thermal_limit_c=60"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let rows = soak_rows(&r);
    let g1 = &rows["gpu1"];
    assert!(
        g1["throttle_bits"].contains("sw_thermal_slowdown"),
        "{g1:?}"
    );
    let onset = f(g1, "throttle_onset_s");
    assert!((5.0..90.0).contains(&onset), "{g1:?}");
    assert!(f(g1, "thermal_cap_share") > 0.3, "{g1:?}");
    assert!(
        f(g1, "sm_clock_end_mhz") < f(&rows["gpu0"], "sm_clock_end_mhz") - 50.0,
        "{g1:?}"
    );
    for g in ["gpu0", "gpu2", "gpu3"] {
        assert!(rows[g]["throttle_bits"].is_empty(), "{:?}", rows[g]);
    }
    let node = &rows["node"];
    assert!(
        node["throttle_bits"].starts_with("gpu1: sw_thermal_slowdown"),
        "{node:?}"
    );
    // The per-GPU table flags gpu1 in the soak, naming its limiter.
    let per_gpu = csv_rows(&r.dir().join("report/per_gpu.csv"));
    let soak_row = per_gpu
        .iter()
        .find(|row| row["gpu"] == "gpu1" && row["rung"].starts_with("soak"))
        .unwrap();
    assert!(
        soak_row["flag"].contains("below") && soak_row["flag"].contains("sw_thermal_slowdown"),
        "{soak_row:?}"
    );
    assert!(
        per_gpu
            .iter()
            .filter(|row| row["gpu"] != "gpu1")
            .all(|row| row["flag"].is_empty()),
        "{per_gpu:?}"
    );
    // And the answer block names it.
    let a = answer(&r);
    let thr = a.lines().find(|l| l.contains("**Throttling:**")).unwrap();
    assert!(
        thr.contains("gpu1") && thr.contains("sw_thermal_slowdown"),
        "{thr}"
    );
    let soak = a.lines().find(|l| l.contains("**Soak:**")).unwrap();
    // Its power fell as it throttled: the node moved, whatever the line fit says.
    assert!(
        soak.contains("**moved**:") && soak.contains("below the first"),
        "{soak}"
    );
    assert!(
        soak.contains("throttle onset at") && soak.contains("gpu1: sw_thermal_slowdown"),
        "{soak}"
    );
}

/// Uncapped GPUs (so a drift shows) and the interlocks raised to match.
const UNCAPPED: [&str; 4] = [
    "--sim-fault",
    "gpu0:power_limit_w=1200",
    "--sim-fault",
    "gpu1:power_limit_w=1200",
];
const HOT: &str = "[limits]\nmax_memory_temp_c = 110\nmax_gpu_temp_c = 105\n";

#[test]
fn gpus_drifting_apart_are_named_when_the_node_holds() {
    let mut args = vec!["--sim-gpus", "2"];
    args.extend(UNCAPPED);
    args.extend([
        "--sim-fault",
        "gpu0:drift_w_per_10min=60",
        "--sim-fault",
        "gpu1:drift_w_per_10min=-60",
    ]);
    let r = run_sim(&campaign(&format!("{SOAK}{HOT}")), &args);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let a = answer(&r);
    let soak = a.lines().find(|l| l.contains("**Soak:**")).unwrap();
    assert!(
        soak.contains("held as a sum, **but gpu0 moved")
            && soak.contains("gpu1 moved (a trend of -"),
        "{soak}"
    );
}

#[test]
fn a_soak_too_short_for_a_trend_is_not_judged() {
    let short =
        "[[phase]]\nkind = \"idle\"\nduration_s = 3\n[[phase]]\nkind = \"soak\"\nduration_s = 30\n";
    let r = run_sim(&campaign(short), &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let node = &soak_rows(&r)["node"];
    assert_eq!(node["drift_bins"], "0", "{node:?}");
    let soak = answer(&r)
        .lines()
        .find(|l| l.contains("**Soak:**"))
        .unwrap()
        .to_string();
    assert!(
        soak.contains("**not judged**: too short for a trend"),
        "{soak}"
    );
    assert!(!soak.contains("held"), "{soak}");
}

#[test]
fn a_soak_cut_short_says_so_and_is_judged_on_the_time_it_ran() {
    // gpu1 falls off the bus 60 s into a 240 s soak (which starts ~12 s in).
    let r = run_sim(
        &campaign(SOAK),
        &["--sim-gpus", "2", "--sim-fault", "gpu1:lost_at=72s"],
    );
    assert_ne!(r.code(), 0, "the run fails: {}", r.stderr());
    let rows = soak_rows(&r);
    let (g1, node) = (&rows["gpu1"], &rows["node"]);
    let ran = f(g1, "window_s");
    assert!((40.0..80.0).contains(&ran), "{g1:?}");
    assert_eq!(f(g1, "planned_s"), 240.0, "{g1:?}");
    assert!(g1["incomplete"].starts_with("ran "), "{g1:?}");
    // The run stopped when the GPU was lost: every GPU's soak ended there.
    assert!(node["incomplete"].contains("gpu1 ran "), "{node:?}");
    // Capped the whole time it ran: the share is of that time.
    assert!(f(g1, "power_cap_share") > 0.9, "{g1:?}");
    let md = std::fs::read_to_string(r.dir().join("report/report.md")).unwrap();
    assert!(md.contains("**INCOMPLETE SOAK: gpu0 ran "), "{md}");
    assert!(md.contains("s measured of 240 s planned"), "{md}");
}
