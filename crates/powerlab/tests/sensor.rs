#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Sensor truth on the simulated node, where the true waveform is known:
//! calibration recovers the instruments, reconstruction recovers the swing,
//! aliased rungs are flagged and never shown as a swing.

use crate::util::*;

const SWEEP: &str = "[[phase]]\nkind = \"duty\"\nname = \"sweep\"\nperiods_ms = [2000, 500, 100, 40, 20, 10, 5]\nduty = 0.5\nduration_s = 10\n";

fn csv_rows(path: &std::path::Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    r.deserialize().map(|x| x.unwrap()).collect()
}

fn num(row: &std::collections::HashMap<String, String>, k: &str) -> Option<f64> {
    row.get(k).and_then(|v| v.parse().ok())
}

/// The true node swing of a rung by the reconstruction's own definition
/// (the square-wave height of the cycle's fundamental), from the summed
/// `sim-truth` files over whole cycles of the rung's window.
fn true_swing(dir: &std::path::Path, from: i64, to: i64, period_ms: f64, duty: f64) -> f64 {
    let mut node: Vec<f64> = Vec::new();
    let mut start = 0;
    for e in std::fs::read_dir(dir.join("sim-truth")).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        for (k, l) in text.lines().skip(1).enumerate() {
            let (t, v) = l.split_once(',').unwrap();
            if k == 0 {
                start = t.parse::<i64>().unwrap();
            }
            if node.len() <= k {
                node.push(0.0);
            }
            node[k] += v.parse::<f64>().unwrap();
        }
    }
    let p_ns = period_ms * 1e6;
    let cycles = ((to - from) as f64 / p_ns).floor();
    let (i0, n) = (
        ((from - start) / 1_000_000) as usize,
        (cycles * p_ns / 1e6) as usize,
    );
    let (mut re, mut im) = (0.0, 0.0);
    for k in 0..n {
        let ph = 2.0 * std::f64::consts::PI * (k as f64 + 0.5) * 1e6 / p_ns;
        re += node[i0 + k] * ph.cos();
        im += node[i0 + k] * ph.sin();
    }
    // A 1 ms bucket is a 1 ms boxcar: undo its sinc as the collator undoes its window.
    let x = 1.0 / period_ms;
    let bucket = (std::f64::consts::PI * x).sin() / (std::f64::consts::PI * x);
    std::f64::consts::PI * (re * re + im * im).sqrt()
        / n as f64
        / (std::f64::consts::PI * duty).sin()
        / bucket
}

#[test]
fn calibration_recovers_the_simulated_instruments_and_reconstruction_the_true_swing() {
    let c = campaign(SWEEP).replace(
        "confirm_node_swing = true",
        "confirm_node_swing = true\ncalibrate = true",
    ) + "[sampling]\npoll_interval_ms = 5\nfield_interval_ms = 5\n";
    let r = run_sim(&c, &["--sim-gpus", "2", "--sim-truth"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let model: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.dir().join("report/sensor.json")).unwrap())
            .unwrap();
    assert_eq!(model["source"], "calibrated in this run");
    // The simulated H200: buffered every 20 ms over 6 ms, 1 ms before its
    // timestamp; instant field every 100 ms over 25 ms; average field every
    // 100 ms over 1000 ms. Each fitted window must hold the true one within
    // its stated uncertainty, and the two GPUs (the same instrument,
    // calibrated twice) must agree within their combined uncertainty.
    let expect = [
        ("buffered_w", 20.0, 6.0),
        ("instant_w", 100.0, 25.0),
        ("average_w", 100.0, 1000.0),
    ];
    let gpus = model["gpus"].as_array().unwrap();
    for (inst, update, window) in expect {
        let mut fits = Vec::new();
        for g in gpus {
            let p = g["paths"]
                .as_array()
                .unwrap()
                .iter()
                .find(|p| p["instrument"] == inst && p.get("refused").is_none())
                .unwrap_or_else(|| panic!("{inst}: {g}"));
            let (u, w) = (
                p["update_period_ms"].as_f64().unwrap(),
                p["window_ms"].as_f64().unwrap(),
            );
            assert!(
                (u / update - 1.0).abs() < 0.10,
                "{} {inst}: update {u} ms vs {update}",
                g["gpu"]
            );
            let ci = p["window_ms_ci95"]
                .as_f64()
                .unwrap_or_else(|| panic!("{inst} has no uncertainty: {p}"));
            assert!(
                (w - window).abs() <= ci.max(0.05 * window) && ci < window,
                "{} {inst}: window {w} ± {ci} ms vs {window}",
                g["gpu"]
            );
            let l = p["latency_ms"].as_f64().unwrap();
            assert!(
                l + p["latency_ms_ci95"].as_f64().unwrap_or(0.0) >= -0.5,
                "{inst}: a negative latency was accepted: {p}"
            );
            fits.push((w, ci));
        }
        let ((a, ca), (b, cb)) = (fits[0], fits[1]);
        assert!(
            (a - b).abs() <= (ca * ca + cb * cb).sqrt().max(0.05 * window),
            "{inst}: calibrations disagree: {a} ± {ca} vs {b} ± {cb}"
        );
    }
    let events = r.events();
    let window = |label: &str| -> (i64, i64) {
        let e = events
            .iter()
            .find(|e| e["event"] == "rung_started" && e["rung"]["label"] == label)
            .unwrap();
        (
            e["measure_from_ns"].as_i64().unwrap(),
            e["end_ns"].as_i64().unwrap(),
        )
    };
    // The buffered window as calibrated on gpu0, with its uncertainty: a
    // reconstruction at period P is good to the window gain's own spread.
    let bp = gpus[0]["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["instrument"] == "buffered_w")
        .unwrap();
    let (bw, bci) = (
        bp["window_ms"].as_f64().unwrap(),
        bp["window_ms_ci95"].as_f64().unwrap(),
    );
    let sinc = |x: f64| {
        if x.abs() < 1e-12 {
            1.0
        } else {
            (std::f64::consts::PI * x).sin() / (std::f64::consts::PI * x)
        }
    };
    let periods = csv_rows(&r.dir().join("report/sensor_periods.csv"));
    assert_eq!(periods.len(), 7);
    for p in &periods {
        let period = num(p, "period_ms").unwrap();
        let (from, to) = window(&p["rung"]);
        let truth = true_swing(r.dir(), from, to, period, 0.5);
        if period >= 9.0 {
            // Detuned from the 20 ms grid, every period whose window gain
            // the 6 ms window leaves above 0.3 is folded and reconstructed.
            let rec = num(p, "reconstructed_swing_w")
                .unwrap_or_else(|| panic!("{period} ms not reconstructed: {p:?}"));
            let spread = (sinc((bw - bci).max(0.0) / period) - sinc((bw + bci) / period))
                / sinc(bw / period);
            assert!(
                (rec / truth - 1.0).abs() < 0.06 + spread,
                "{period} ms: reconstructed {rec} vs true {truth} (window {bw} ± {bci} ms)"
            );
        } else {
            // 5 ms: the 6 ms window nulls it on the buffered path and the
            // instant field updates too slowly: flagged, not reconstructed.
            assert!(
                num(p, "reconstructed_swing_w").is_none(),
                "{period} ms: {p:?}"
            );
            assert!(!p["verdict"].is_empty());
        }
    }
    // The raw readings' verdict: periods under two buffered sample periods alias.
    for s in r.summary() {
        let label = s["label"].as_str().unwrap();
        if label.starts_with("sweep/") {
            let period: f64 = s["period_ms"].as_f64().unwrap();
            assert_eq!(
                s["instrument_verdict"] == "aliased",
                period < 40.0,
                "{label}: {s}"
            );
        }
    }
    let report = std::fs::read_to_string(r.dir().join("report/report.md")).unwrap();
    assert!(
        report.contains("## What the instruments can see")
            && report.contains("| sweep/p20ms/in_phase | 20.05 |"),
        "{report}"
    );
    assert!(r.dir().join("report/plots/swing_vs_period.svg").exists());
    let spectra = std::fs::read_to_string(r.dir().join("report/spectrum.csv")).unwrap();
    assert!(spectra.lines().count() > 7);
}

#[test]
fn without_calibration_the_gpus_profile_or_nominal_values_are_used_and_said() {
    let r = run_sim(&campaign(SWEEP), &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let model: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.dir().join("report/sensor.json")).unwrap())
            .unwrap();
    assert!(
        model["source"]
            .as_str()
            .unwrap()
            .starts_with("built-in H200 profile"),
        "{model}"
    );
    assert_eq!(model["kind"], "built_in");
    let report = std::fs::read_to_string(r.dir().join("report/report.md")).unwrap();
    assert!(report.contains("Sensor model: built-in H200 profile"));
    // A GPU model never measured is judged by assumed values, and says so.
    let r = run_sim(
        &campaign(SWEEP),
        &["--sim-gpus", "2", "--sim-profile", "a10g"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let report = std::fs::read_to_string(r.dir().join("report/report.md")).unwrap();
    assert!(
        report.contains(
            "Sensor model: nominal (not calibrated): NVIDIA A10G (simulated) has not been measured"
        ),
        "{report}"
    );
}
