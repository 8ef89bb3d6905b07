#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Arguments and campaign values out of range, refused before anything
//! runs: durations that overflow the clock or round to nothing, repeats and
//! GPU counts beyond their bounds, `--sensor` files that are not sensor
//! models, `--sim-fault` values and targets a node cannot have, and
//! `health-diff` given what is not a health capture (`docs/faults.md`,
//! cases 4, 5 and 11).

use crate::util::fixtures::*;
use crate::util::*;
use std::time::Duration;

/// Case 4: durations that overflow the clock or round to nothing are refused
/// at `validate`, and so are repeats of 0 or beyond the file limit.
#[test]
fn out_of_range_durations_and_repeats_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    for d in ["1e308", "1e12", "1e-300", "0.01"] {
        let file = write_campaign(
            tmp.path(),
            &format!("[[phase]]\nkind = \"sustained\"\nname = \"s\"\nduration_s = {d}\n"),
        );
        let out = powerlab_output(["validate", file.to_str().unwrap()]);
        assert_eq!(
            out.status.code(),
            Some(1),
            "duration_s = {d} accepted: {}",
            text(&out.stdout)
        );
        let err = text(&out.stderr);
        assert!(
            err.contains("duration_s") && err.contains("604800"),
            "{d}: {err}"
        );
    }
    let file = write_campaign(tmp.path(), DUTY);
    for (cmd, n) in [("plan", "0"), ("plan", "100000"), ("run", "0")] {
        let out = powerlab_output(
            [
                cmd,
                file.to_str().unwrap(),
                "--repeats",
                n,
                "--backend",
                "sim",
            ]
            .iter()
            .take(if cmd == "plan" { 4 } else { 6 }),
        );
        assert_eq!(
            out.status.code(),
            Some(2),
            "{cmd} --repeats {n}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("--repeats"),
            "{}",
            text(&out.stderr)
        );
    }
    // The largest allowed rung times the largest repeat count is refused by
    // the planner's checked total, not wrapped into a negative duration.
    let file = write_campaign(
        tmp.path(),
        "[[phase]]\nkind = \"sustained\"\nname = \"s\"\nduration_s = 604800\nrepeats = 1000\n",
    );
    // Refused at once, before any schedule is expanded (3 periods × 2 modes ×
    // 1000 repeats of a week took seconds per repeat to expand).
    for cmd in ["validate", "plan"] {
        let t0 = std::time::Instant::now();
        let out = powerlab_output([cmd, file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {}", text(&out.stdout));
        assert!(
            text(&out.stderr).contains("366 days"),
            "{}",
            text(&out.stderr)
        );
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "{cmd} took {:?}",
            t0.elapsed()
        );
    }
    // Within a year per file, beyond it with --repeats: refused by the plan.
    let file = write_campaign(
        tmp.path(),
        "[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiods_ms = [400, 500, 600]\nmodes = [\"in_phase\", \"staggered\"]\nduration_s = 604800\n",
    );
    let out = powerlab_output(["plan", file.to_str().unwrap(), "--repeats", "1000"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("366 days"),
        "{}",
        text(&out.stderr)
    );
    // Limits that contradict each other.
    let file = write_campaign(
        tmp.path(),
        &format!("[limits]\nedge_p99_us = 80\nedge_max_us = 40\n{DUTY}"),
    );
    let out = powerlab_output(["validate", file.to_str().unwrap()]);
    assert_exit(&out, 1);
    assert!(
        text(&out.stderr).contains("edge_max_us"),
        "{}",
        text(&out.stderr)
    );
}

/// Case 5: a `--sensor` that is missing or not a sensor model, a fault for
/// a GPU the node lacks, an unphysical fault value: errors, exit non-zero,
/// and nothing is run.
#[test]
fn bad_sensor_files_and_faults_are_errors_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write_campaign(tmp.path(), DUTY);
    let garbage = tmp.path().join("garbage.json");
    std::fs::write(&garbage, "{\"not\": \"a sensor model\"}").unwrap();
    let missing = tmp.path().join("missing.json");
    let runs = tmp.path().join("runs");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["--sensor".into(), missing.display().to_string()],
            "missing.json",
        ),
        (
            vec!["--sensor".into(), garbage.display().to_string()],
            "garbage.json",
        ),
        (
            vec!["--sim-fault".into(), "gpu99:lost_at=1s".into()],
            "gpu99",
        ),
        (
            vec!["--sim-fault".into(), "gpu0:power_limit_w=-5".into()],
            "power_limit_w",
        ),
        (
            vec!["--sim-fault".into(), "gpu0:extra_c_per_w=nan".into()],
            "extra_c_per_w",
        ),
        (
            vec!["--sim-fault".into(), "gpu0:lost_at=1e300s".into()],
            "lost_at",
        ),
        (
            vec!["--sim-fault".into(), "gpu0:nvml_error_every=0".into()],
            "nvml_error_every",
        ),
        (
            vec!["--sim-epoch-ns".into(), "9223372036854775807".into()],
            "--sim-epoch-ns",
        ),
    ];
    for (args, names) in cases {
        let out = capture(
            powerlab()
                .args([
                    "run",
                    file.to_str().unwrap(),
                    "--backend",
                    "sim",
                    "--sim-gpus",
                    "2",
                    "--results",
                    runs.to_str().unwrap(),
                ])
                .args(&args),
        );
        let err = text(&out.stderr);
        // A file that does not hold a sensor model is an error (1); a
        // simulated-node option out of range is a usage error (2).
        let code = if args[0] == "--sensor" { 1 } else { 2 };
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(names), "{args:?} must name {names}: {err}");
        assert!(run_dirs(&runs).is_empty(), "{args:?} ran anyway");
    }
    // Beyond the documented maximum GPU count: refused before allocating.
    let out = powerlab_output([
        "run",
        file.to_str().unwrap(),
        "--backend",
        "sim",
        "--sim-gpus",
        "100000",
    ]);
    assert_exit(&out, 2);
    assert!(text(&out.stderr).contains("--sim-gpus"));
}

/// Issue 31, defect 9 (`plan --gpus` was unbounded: 10,000,000 GPUs took
/// 43 s and 14.7 GB) and defect 12 (`gpu00` was read as `gpu0`).
#[test]
fn issue31_defect9_and_12_plan_gpus_and_fault_targets_are_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write_campaign(tmp.path(), DUTY);
    let plan = |gpus: &str| powerlab_output(["plan", file.to_str().unwrap(), "--gpus", gpus]);
    let out = plan("5000");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("1 to 1024"),
        "{}",
        text(&out.stderr)
    );
    let out = plan("1024");
    assert_exit(&out, 0);
    assert!(text(&out.stdout).contains("on 1024 GPU(s)"));

    let runs = tmp.path().join("runs");
    for target in ["gpu00", "gpu01", "gpu+1"] {
        let out = powerlab_output([
            "run",
            file.to_str().unwrap(),
            "--backend",
            "sim",
            "--sim-gpus",
            "2",
            "--results",
            runs.to_str().unwrap(),
            "--sim-fault",
            &format!("{target}:lost_at=1s"),
        ]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{target}: {err}");
        assert!(err.contains("is not gpuN"), "{target}: {err}");
        assert!(run_dirs(&runs).is_empty(), "{target} ran anyway");
    }
}

/// Case 11: `health-diff` refuses files that are not health captures, and
/// a truncated one is named.
#[test]
fn health_diff_refuses_what_is_not_a_health_capture() {
    let tmp = tempfile::tempdir().unwrap();
    // preflight writes a capture on any machine (here: the driver is missing).
    let cap = powerlab_output([
        "preflight",
        "--out",
        tmp.path().to_str().unwrap(),
        "--stem",
        "good",
    ]);
    let good = tmp.path().join("good.json");
    assert!(good.is_file(), "{}", text(&cap.stderr));
    let whole = std::fs::read_to_string(&good).unwrap();
    let truncated = tmp.path().join("truncated.json");
    std::fs::write(&truncated, &whole[..whole.len() / 2]).unwrap();
    for (name, body) in [
        ("empty-object.json", "{}"),
        ("array.json", "[]"),
        ("null.json", "null"),
    ] {
        let p = tmp.path().join(name);
        std::fs::write(&p, body).unwrap();
        let out = powerlab_output(["health-diff", good.to_str().unwrap(), p.to_str().unwrap()]);
        // diff's convention: 2 is trouble, 1 is "they differ".
        assert_eq!(out.status.code(), Some(2), "{name}: {}", text(&out.stdout));
        assert!(
            text(&out.stderr).contains(name) && text(&out.stderr).contains("not a health capture"),
            "{}",
            text(&out.stderr)
        );
    }
    let out = powerlab_output([
        "health-diff",
        truncated.to_str().unwrap(),
        good.to_str().unwrap(),
    ]);
    assert_exit(&out, 2);
    assert!(
        text(&out.stderr).contains("truncated.json"),
        "{}",
        text(&out.stderr)
    );
    let out = powerlab_output([
        "health-diff",
        good.to_str().unwrap(),
        good.to_str().unwrap(),
    ]);
    assert!(
        out.status.success() && text(&out.stdout).contains("0 facts differ"),
        "{}",
        text(&out.stdout)
    );
    // Captures that differ exit 1, as diff does, and --json names the fact.
    let mut other: serde_json::Value = serde_json::from_str(&whole).unwrap();
    other["facts"]["host"] = serde_json::json!("another-host");
    let changed = tmp.path().join("changed.json");
    std::fs::write(&changed, other.to_string()).unwrap();
    for json in [false, true] {
        let mut args = vec![
            "health-diff",
            good.to_str().unwrap(),
            changed.to_str().unwrap(),
        ];
        if json {
            args.push("--json");
        }
        let out = powerlab_output(&args);
        assert_exit(&out, 1);
        if json {
            let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
            assert_eq!(v["differ"], 1, "{v}");
            assert!(
                v["lines"][0].as_str().unwrap().contains("another-host"),
                "{v}"
            );
        } else {
            assert!(
                text(&out.stdout).contains("1 facts differ"),
                "{}",
                text(&out.stdout)
            );
        }
    }
}
