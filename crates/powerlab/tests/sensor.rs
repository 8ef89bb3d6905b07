//! Sensor truth on the simulated node, where the true waveform is known:
//! calibration recovers the instruments, reconstruction recovers the swing,
//! aliased rungs are flagged and never shown as a swing.

mod util;
use util::*;

const SWEEP: &str = "[[phase]]\nkind = \"duty\"\nname = \"sweep\"\nperiods_ms = [2000, 500, 100, 40, 20, 10, 5]\nduty = 0.5\nduration_s = 10\n";

fn csv_rows(path: &std::path::Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    r.deserialize().map(|x| x.unwrap()).collect()
}

fn num(row: &std::collections::HashMap<String, String>, k: &str) -> Option<f64> {
    row.get(k).and_then(|v| v.parse().ok())
}

#[test]
fn calibration_recovers_the_simulated_instruments_and_reconstruction_the_true_swing() {
    let c = campaign(SWEEP).replace("confirm_node_swing = true", "confirm_node_swing = true\ncalibrate = true") + "[sampling]\npoll_interval_ms = 5\nfield_interval_ms = 5\n";
    let r = run_sim(&c, &["--sim-gpus", "2", "--sim-truth"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let model: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(r.dir().join("report/sensor.json")).unwrap()).unwrap();
    assert_eq!(model["source"], "calibrated in this run");
    // The simulated H200: buffered every 20.14 ms over 20 ms; instant field
    // every 100 ms over 25 ms; average field every 100 ms over 1000 ms.
    let expect = [("buffered_w", 20.14, 20.0), ("instant_w", 100.0, 25.0), ("average_w", 100.0, 1000.0)];
    for g in model["gpus"].as_array().unwrap() {
        for (inst, update, window) in expect {
            let p = g["paths"].as_array().unwrap().iter().find(|p| p["instrument"] == inst).unwrap();
            let (u, w) = (p["update_period_ms"].as_f64().unwrap(), p["window_ms"].as_f64().unwrap());
            assert!((u / update - 1.0).abs() < 0.10, "{} {inst}: update {u} ms vs {update}", g["gpu"]);
            assert!((w / window - 1.0).abs() < 0.10, "{} {inst}: window {w} ms vs {window}", g["gpu"]);
        }
    }
    let periods = csv_rows(&r.dir().join("report/sensor_periods.csv"));
    assert_eq!(periods.len(), 7);
    for p in &periods {
        let period = num(p, "period_ms").unwrap();
        let truth = num(p, "truth_swing_w").unwrap();
        // "At least twice the buffered sample period" (20 ms nominal).
        if period >= 40.0 {
            let rec = num(p, "reconstructed_swing_w").unwrap_or_else(|| panic!("{period} ms not reconstructed: {p:?}"));
            assert!((rec / truth - 1.0).abs() < 0.05, "{period} ms: reconstructed {rec} vs true {truth}");
            assert_ne!(p["verdict"], "aliased");
        } else {
            // The 20 ms window nulls these periods on the buffered path and
            // the instant field updates too slowly: flagged, not reconstructed.
            assert_eq!(p["verdict"], "aliased", "{period} ms: {p:?}");
            assert!(num(p, "reconstructed_swing_w").is_none());
        }
    }
    // The summary never presents an aliased rung's p90−p10 as a swing.
    for s in r.summary() {
        let label = s["label"].as_str().unwrap();
        if label.starts_with("sweep/") {
            let period: f64 = s["period_ms"].as_f64().unwrap();
            let aliased = period < 2.0 * 20.14;
            assert_eq!(s["instrument_verdict"] == "aliased", aliased, "{label}: {s}");
            assert_eq!(s["swing_w"].is_null(), aliased, "{label}: {s}");
        }
    }
    let report = std::fs::read_to_string(r.dir().join("report/report.md")).unwrap();
    assert!(report.contains("## What the instruments can see") && report.contains("| sweep/p20ms/in_phase | 20 |"), "{report}");
    assert!(r.dir().join("report/plots/swing_vs_period.svg").exists());
    let spectra = std::fs::read_to_string(r.dir().join("report/spectrum.csv")).unwrap();
    assert!(spectra.lines().count() > 7);
}

#[test]
fn without_calibration_the_nominal_model_is_used_and_said() {
    let r = run_sim(&campaign(SWEEP), &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let model: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(r.dir().join("report/sensor.json")).unwrap()).unwrap();
    assert!(model["source"].as_str().unwrap().starts_with("nominal"), "{model}");
    let report = std::fs::read_to_string(r.dir().join("report/report.md")).unwrap();
    assert!(report.contains("Sensor model: nominal (not calibrated)"));
}
