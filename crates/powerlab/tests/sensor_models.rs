#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Sensor models that cannot judge this run: one dropped into a finished
//! run, and `run --sensor` given a model of other GPUs, an implausible
//! window or latency, or one missing a GPU or a path.

use crate::util::fixtures::*;
use crate::util::*;

/// A sensor model as `calibrate` writes it, measured on `gpus` ((key, name,
/// uuid)), with the given buffered window.
fn sensor_model(gpus: &[(String, String, String)], window_ms: f64) -> String {
    let path = |i: &str, u: f64, w: f64| {
        serde_json::json!({"instrument": i, "update_period_ms": u, "window_ms": w,
            "latency_ms": 1.0, "board_fall_tau_ms": null, "fit_rms": null,
            "edges_used": 40, "read_period_ms": 5.0})
    };
    let model = serde_json::json!({
        "source": "calibrated in this run",
        "kind": "calibrated",
        "measured_on": gpus.iter().map(|(k, n, u)| serde_json::json!({"gpu": k, "name": n, "uuid": u})).collect::<Vec<_>>(),
        "gpus": gpus.iter().map(|(k, _, _)| serde_json::json!({
            "gpu": k,
            "paths": [path("buffered_w", 20.0, window_ms), path("instant_w", 100.0, 25.0), path("average_w", 100.0, 1000.0)],
            "probes": []
        })).collect::<Vec<_>>(),
    });
    serde_json::to_string_pretty(&model).unwrap()
}

fn gpus_of(d: &std::path::Path) -> Vec<(String, String, String)> {
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("manifest.json")).unwrap()).unwrap();
    m["backend"]["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["key"].as_str().unwrap().to_string(),
                g["name"].as_str().unwrap().to_string(),
                g["uuid"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Issue 31, defect 1: a `sensor.json` dropped into a finished run changed
/// every duty rung's figures with exit 0; now collate refuses it by name.
#[test]
fn a_sensor_model_dropped_into_a_finished_run_is_refused() {
    let r = finished_run();
    let d = r.results.path().join("dropped");
    copy_run(r.dir(), &d, false);
    std::fs::write(d.join("sensor.json"), sensor_model(&gpus_of(&d), 0.1)).unwrap();
    let out = collate_dir(&d);
    assert_exit(&out, 1);
    let err = text(&out.stderr);
    assert!(
        err.contains("sensor.json") && err.contains("records none"),
        "{err}"
    );
}

/// The setup of the `run --sensor` cases: a finished run (kept alive), its
/// GPUs, a scratch directory and a one-rung duty campaign in it.
fn sensor_case() -> (
    Run,
    Vec<(String, String, String)>,
    tempfile::TempDir,
    std::path::PathBuf,
) {
    let first = finished_run();
    let here = gpus_of(first.dir());
    let tmp = tempfile::tempdir().unwrap();
    let file = write_campaign(
        tmp.path(),
        "[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiods_ms = [500]\nduration_s = 4\n",
    );
    (first, here, tmp, file)
}

/// Issue 31, defect 1: `run --sensor` took an A10G's calibration on an H200
/// node, a model that names no GPU, one of other GPUs of the same model,
/// and a 0.1 ms buffered window; each is refused before anything runs. A
/// model measured on this node's GPUs is taken, bound to the run, and said.
#[test]
fn run_sensor_refuses_a_model_of_other_gpus_or_an_implausible_window() {
    let (_first, here, tmp, file) = sensor_case();
    let runs = tmp.path().join("runs");
    let a10g: Vec<_> = here
        .iter()
        .map(|(k, _, u)| (k.clone(), "NVIDIA A10G (simulated)".to_string(), u.clone()))
        .collect();
    let foreign: Vec<_> = here
        .iter()
        .map(|(k, n, _)| (k.clone(), n.clone(), format!("GPU-not-here-{k}")))
        .collect();
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        ("a10g", sensor_model(&a10g, 6.0), vec!["A10G", "H200"]),
        ("unbound", sensor_model(&[], 6.0), vec!["measured on"]),
        (
            "foreign",
            sensor_model(&foreign, 6.0),
            vec!["GPU-not-here-gpu0"],
        ),
        ("narrow", sensor_model(&here, 0.1), vec!["window_ms = 0.1"]),
    ];
    for (name, model, says) in cases {
        let path = tmp.path().join(format!("{name}.json"));
        let model = if name == "unbound" {
            // A model that names no GPU at all, as older versions wrote.
            let mut v: serde_json::Value = serde_json::from_str(&model).unwrap();
            v.as_object_mut().unwrap().remove("measured_on");
            v["gpus"] = serde_json::json!([{"gpu": "gpu0", "paths": [{"instrument": "buffered_w",
                "update_period_ms": 20.0, "window_ms": 6.0, "latency_ms": 1.0,
                "board_fall_tau_ms": null, "fit_rms": null, "edges_used": 40, "read_period_ms": 5.0}],
                "probes": []}]);
            v.to_string()
        } else {
            model
        };
        std::fs::write(&path, model).unwrap();
        let out = powerlab_output([
            "run",
            file.to_str().unwrap(),
            "--backend",
            "sim",
            "--sim-gpus",
            "2",
            "--sim-profile",
            "h200",
            "--sim-epoch-ns",
            &EPOCH.to_string(),
            "--results",
            runs.to_str().unwrap(),
            "--sensor",
            path.to_str().unwrap(),
        ]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        for s in says {
            assert!(err.contains(s), "{name} must say {s}: {err}");
        }
        assert!(run_dirs(&runs).is_empty(), "{name} ran anyway");
    }
    // This node's own model is taken, recorded in the manifest and said.
    let path = tmp.path().join("good.json");
    std::fs::write(&path, sensor_model(&here, 6.0)).unwrap();
    let out = powerlab_output([
        "run",
        file.to_str().unwrap(),
        "--backend",
        "sim",
        "--sim-gpus",
        "2",
        "--sim-epoch-ns",
        &EPOCH.to_string(),
        "--results",
        runs.to_str().unwrap(),
        "--sensor",
        path.to_str().unwrap(),
    ]);
    assert_exit(&out, 0);
    let d = run_dirs(&runs).pop().unwrap();
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["sensor"]["file"], "sensor.json", "{m}");
    let md = std::fs::read_to_string(d.join("report/report.md")).unwrap();
    assert!(md.contains("sensor.json given to the run"), "{md}");
    // Changed afterwards: refused by name.
    std::fs::write(d.join("sensor.json"), sensor_model(&here, 7.0)).unwrap();
    let out = collate_dir(&d);
    assert_exit(&out, 1);
    assert!(
        text(&out.stderr).contains("sensor.json"),
        "{}",
        text(&out.stderr)
    );
}

/// Issue 31 (hostile review): a model with `latency_ms = 500`, or missing
/// one of the run's GPUs, or a GPU's buffered path (or its window), was
/// taken, and the sample window fell back to 20 ms (or another GPU's)
/// silently. Each is refused before anything runs, naming the GPU, the path
/// or the field. A model without an instant-field path is taken, and the
/// run and its report say what is missing.
#[test]
fn run_sensor_refuses_a_model_that_cannot_judge_every_gpu() {
    let (_first, here, tmp, file) = sensor_case();
    let runs = tmp.path().join("runs");
    let edit = |f: &dyn Fn(&mut serde_json::Value)| {
        let mut v: serde_json::Value = serde_json::from_str(&sensor_model(&here, 6.0)).unwrap();
        f(&mut v);
        v.to_string()
    };
    let run = |name: &str, model: String| {
        let path = tmp.path().join(format!("{name}.json"));
        std::fs::write(&path, model).unwrap();
        powerlab()
            .args(["run", file.to_str().unwrap(), "--backend", "sim"])
            .args(["--sim-gpus", "2", "--sim-epoch-ns", &EPOCH.to_string()])
            .args(["--results", runs.to_str().unwrap(), "--sensor"])
            .arg(&path)
            .output()
            .unwrap()
    };
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "late",
            edit(&|v| v["gpus"][0]["paths"][0]["latency_ms"] = 500.0.into()),
            vec!["gpu0 buffered_w: latency_ms = 500", "25] ms"],
        ),
        (
            "one-gpu",
            edit(&|v| {
                v["gpus"].as_array_mut().unwrap().truncate(1);
            }),
            vec!["no entry for gpu1"],
        ),
        (
            "no-buffered",
            edit(&|v| {
                v["gpus"][1]["paths"].as_array_mut().unwrap().remove(0);
            }),
            vec!["gpu1 has no buffered_w path"],
        ),
        (
            "no-window",
            edit(&|v| v["gpus"][0]["paths"][0]["window_ms"] = serde_json::Value::Null),
            vec!["gpu0 buffered_w states no window_ms"],
        ),
    ];
    for (name, model, says) in cases {
        let out = run(name, model);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        for s in says {
            assert!(err.contains(s), "{name} must say {s}: {err}");
        }
        assert!(run_dirs(&runs).is_empty(), "{name} ran anyway");
    }
    // No instant-field path for gpu1: taken, and said.
    let out = run(
        "no-instant",
        edit(&|v| {
            v["gpus"][1]["paths"].as_array_mut().unwrap().remove(1);
        }),
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let gap = "gpu1 has no instant_w path";
    assert!(err.contains(gap), "{err}");
    let d = run_dirs(&runs).pop().unwrap();
    let md = std::fs::read_to_string(d.join("report/report.md")).unwrap();
    assert!(md.contains(gap), "{md}");
}
