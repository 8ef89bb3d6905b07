#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Issue 19, tried as a hostile user would: bounds, arguments that used to be
//! ignored, collation that must never lose a report or read a live run,
//! results roots inside run directories, closed pipes. Each test failed on
//! the code before it.

use crate::util::*;
use std::process::{Command, Stdio};
use std::time::Duration;

const DUTY: &str = "[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiod_ms = 200\nduration_s = 4\n";

fn write_campaign(dir: &std::path::Path, body: &str) -> std::path::PathBuf {
    let file = dir.join("c.toml");
    std::fs::write(&file, campaign(body)).unwrap();
    file
}

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

/// Case 6: a second collation of the same directory refuses, naming the
/// holder; a run still being written refuses unless `--snapshot`.
#[test]
fn collation_is_exclusive_and_refuses_a_live_run_unless_asked() {
    let r = run_sim(&campaign(DUTY), &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let dir = powerlab_rundir::RunDir::open(r.dir()).unwrap();
    let before = std::fs::read(r.dir().join("report/summary.csv")).unwrap();
    {
        let _held =
            powerlab_rundir::lock::try_hold(&dir.collate_lock(), "collating this run").unwrap();
        let out = powerlab_output(["collate", r.dir().to_str().unwrap()]);
        assert_exit(&out, 1);
        let err = text(&out.stderr);
        assert!(
            err.contains("another collation")
                && err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
    }
    {
        let _held = powerlab_rundir::lock::try_hold(&dir.run_lock(), "writing this run").unwrap();
        let out = powerlab_output(["collate", r.dir().to_str().unwrap()]);
        assert_exit(&out, 1);
        assert!(
            text(&out.stderr).contains("still being written")
                && text(&out.stderr).contains("--snapshot"),
            "{}",
            text(&out.stderr)
        );
        let out = powerlab_output(["collate", "--snapshot", r.dir().to_str().unwrap()]);
        assert_exit(&out, 0);
    }
    assert_eq!(
        std::fs::read(r.dir().join("report/summary.csv")).unwrap(),
        before,
        "the same files give the same summary"
    );
}

/// Issue 31: `.run.lock` and `.collate.lock` stayed in every run directory
/// (and the simulated node's lock in the results root) after their holders
/// ended. They go when the run and the collation end; a lock file a killed
/// process left (its pid dead, no flock) is still taken as free.
#[test]
fn lock_files_go_with_their_holders_and_a_dead_holders_lock_is_stale() {
    let r = run_sim(&campaign(DUTY), &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let locks = |d: &std::path::Path| -> Vec<String> {
        std::fs::read_dir(d)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".lock"))
            .collect()
    };
    assert_eq!(locks(r.dir()), Vec::<String>::new(), "after the run");
    assert_eq!(
        locks(r.dir().parent().unwrap()),
        Vec::<String>::new(),
        "the simulated node's lock in the results root"
    );
    let out = powerlab()
        .args(["collate", r.dir().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(locks(r.dir()), Vec::<String>::new(), "after a collation");
    // A crash leaves the file, naming a pid that is gone: still free.
    let dir = powerlab_rundir::RunDir::open(r.dir()).unwrap();
    std::fs::write(dir.run_lock(), "pid 4194303 writing this run").unwrap();
    std::fs::write(dir.collate_lock(), "pid 4194303 collating this run").unwrap();
    let out = powerlab()
        .args(["collate", r.dir().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        locks(r.dir()),
        vec![".run.lock".to_string()],
        "the collation takes and removes its own lock, and leaves the run's"
    );
}

/// Issue 31: a duty rung without a period in the event log was folded over
/// an assumed 1000 ms (or not at all); the collation now refuses it,
/// naming the rung.
#[test]
fn a_duty_rung_without_a_period_in_the_event_log_is_refused_naming_it() {
    let r = run_sim(&campaign(DUTY), &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let path = r.dir().join("events.jsonl");
    let mut label = String::new();
    let lines: Vec<String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| {
            let mut e: serde_json::Value = serde_json::from_str(l).unwrap();
            if e["event"] == "rung_started" && e["rung"]["kind"] == "duty" {
                label = e["rung"]["label"].as_str().unwrap().to_string();
                e["rung"]["period_ms"] = serde_json::Value::Null;
            }
            serde_json::to_string(&e).unwrap()
        })
        .collect();
    assert!(!label.is_empty());
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    // As a run killed before its end leaves its manifest: still running,
    // no checksums (so nothing else notices the edit).
    let mpath = r.dir().join("manifest.json");
    let mut m = powerlab_rundir::Manifest::read(&mpath).unwrap();
    m.status = powerlab_rundir::RunStatus::Running;
    m.ended_ns = None;
    m.checksums.clear();
    m.write(&mpath).unwrap();
    let out = powerlab()
        .args(["collate", r.dir().to_str().unwrap()])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&label) && err.contains("period_ms") && err.contains("events.jsonl"),
        "names the file, the rung and the field: {err}"
    );
}

/// Case 6: Ctrl-C in the middle of a collation keeps the previous report
/// whole (it used to be deleted first, leaving an empty `plots/`).
#[test]
fn ctrl_c_during_collate_keeps_the_previous_report() {
    let c = campaign(
        "[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiods_ms = [500, 200, 100]\nmodes = [\"in_phase\", \"staggered\"]\nduration_s = 20\n",
    );
    let r = run_sim(&c, &["--sim-gpus", "4"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let list = |d: &std::path::Path| {
        let mut v: Vec<String> = walk(d)
            .into_iter()
            .map(|p| p.strip_prefix(d).unwrap().display().to_string())
            .collect();
        v.sort();
        v
    };
    let report = r.dir().join("report");
    let files = list(&report);
    let summary = std::fs::read(report.join("summary.csv")).unwrap();
    // Interrupt at several moments of a collation.
    for delay_ms in [40u64, 90, 160, 250] {
        let child = powerlab()
            .args(["collate", r.dir().to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        let mut child = child;
        let _ = child.wait();
        assert_eq!(
            list(&report),
            files,
            "after SIGINT at {delay_ms} ms the report is whole"
        );
        assert_eq!(std::fs::read(report.join("summary.csv")).unwrap(), summary);
    }
    // The next collation tidies what the interrupted ones left and succeeds.
    let out = powerlab_output(["collate", r.dir().to_str().unwrap()]);
    assert_exit(&out, 0);
    let stray: Vec<_> = std::fs::read_dir(r.dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("report."))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
}

fn walk(d: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Case 7: a results root inside a run directory (its `report/` or `raw/`)
/// is refused: the next collate of the outer run would delete it.
#[test]
fn a_results_root_inside_a_run_directory_is_refused() {
    let r = run_sim(&campaign(DUTY), &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let file = write_campaign(r.results.path(), DUTY);
    for inner in ["report", "raw", "report/deeper/still"] {
        let root = r.dir().join(inner);
        let out = powerlab_output([
            "run",
            file.to_str().unwrap(),
            "--backend",
            "sim",
            "--sim-gpus",
            "2",
            "--results",
            root.to_str().unwrap(),
        ]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{inner}: {err}");
        assert!(err.contains("inside the run directory"), "{inner}: {err}");
    }
    assert!(
        !r.dir().join("report/deeper").exists(),
        "nothing was created inside the run"
    );
}

/// Case 8: a closed stdout (`| head -1`, `> /dev/full`) never panics; the
/// run goes on to the end and its manifest says complete.
#[test]
fn a_closed_stdout_never_panics() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write_campaign(tmp.path(), DUTY);
    let runs = tmp.path().join("runs");
    let epoch = EPOCH.to_string();
    // Reader gone before the first line (EPIPE), and a full device (ENOSPC).
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    for (what, stdout) in [("closed pipe", None), ("/dev/full", Some(full))] {
        let mut cmd = powerlab();
        cmd.args([
            "run",
            file.to_str().unwrap(),
            "--backend",
            "sim",
            "--sim-gpus",
            "2",
            "--json",
            "--results",
            runs.to_str().unwrap(),
            "--sim-epoch-ns",
            &epoch,
        ]);
        let out = match stdout {
            Some(f) => capture(cmd.stdout(Stdio::from(f)).stderr(Stdio::piped())),
            None => {
                let mut child = cmd
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap();
                drop(child.stdout.take());
                child.wait_with_output().unwrap()
            }
        };
        let err = text(&out.stderr);
        assert!(!err.contains("panicked"), "{what}: {err}");
        assert_eq!(out.status.code(), Some(0), "{what}: {err}");
        let dir = run_dirs(&runs).pop().unwrap();
        let m = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
        assert!(m.contains("\"complete\""), "{what}: {m}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
    let mut child = powerlab()
        .args(["plan", file.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert!(
        !text(&out.stderr).contains("panicked"),
        "{}",
        text(&out.stderr)
    );
    assert_ne!(out.status.code(), Some(101));
}

/// Case 10: a results directory that cannot be written says so (not "another
/// campaign is running"), and a run refused for lack of disk leaves nothing.
#[test]
fn unwritable_or_too_small_results_directories_are_named_and_left_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write_campaign(tmp.path(), DUTY);
    // A read-only filesystem is read-only for root too.
    let ro = std::path::Path::new("/proc/self/powerlab-results");
    let out = powerlab_output([
        "run",
        file.to_str().unwrap(),
        "--backend",
        "sim",
        "--sim-gpus",
        "2",
        "--results",
        ro.to_str().unwrap(),
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("results directory")
            && err.contains("powerlab-results")
            && !err.contains("another campaign"),
        "{err}"
    );
    // Far more raw data than any disk here holds: refused, nothing created.
    let big = write_campaign(
        tmp.path(),
        "[[phase]]\nkind = \"sustained\"\nname = \"s\"\nduration_s = 600000\nrepeats = 40\n",
    );
    let runs = tmp.path().join("runs");
    let out = powerlab_output([
        "run",
        big.to_str().unwrap(),
        "--backend",
        "sim",
        "--sim-gpus",
        "8",
        "--results",
        runs.to_str().unwrap(),
    ]);
    let err = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("MB free"), "{err}");
    assert!(
        run_dirs(&runs).is_empty(),
        "a refused run left {:?}",
        run_dirs(&runs)
    );
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

fn rungs_of(dir: &std::path::Path) -> Vec<serde_json::Value> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report/summary.json")).unwrap())
            .unwrap();
    v["rungs"].as_array().unwrap().clone()
}

/// Makes a run directory look written before raw indexes existed (format
/// 1, no seal, no index).
fn older_than_indexes(d: &std::path::Path) {
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("manifest.json")).unwrap()).unwrap();
    m["format_version"] = serde_json::json!(1);
    m.as_object_mut().unwrap().remove("seal");
    m.as_object_mut().unwrap().remove("raw_index");
    m.as_object_mut().unwrap().remove("checksums");
    std::fs::write(d.join("manifest.json"), serde_json::to_string(&m).unwrap()).unwrap();
    for e in std::fs::read_dir(d.join("raw")).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "idx") {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
}

const FIGURES: [&str; 6] = [
    "mean_w",
    "peak_w",
    "spread_w",
    "swing_w",
    "raw_mean_w",
    "raw_spread_w",
];

/// Cases 1 and 2: damaged raw files. A file cut short or missing is named
/// on the report's first line, and every rung whose figures differ from the
/// intact run's is marked incomplete; copied, rescaled or unlisted files are
/// refused by name.
#[test]
fn damaged_raw_files_are_named_and_never_give_silent_figures() {
    let c = campaign(
        "[[phase]]\nkind = \"sustained\"\nname = \"s\"\nduration_s = 3\n[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiods_ms = [500, 200]\nmodes = [\"in_phase\", \"staggered\"]\nduration_s = 4\n",
    );
    let r = run_sim(&c, &["--sim-gpus", "4"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let intact = rungs_of(r.dir());
    assert!(
        intact.iter().all(|x| x["incomplete"].is_null()),
        "the intact run is whole"
    );
    let work = r.results.path().join("damaged");
    let fresh = |name: &str| {
        let d = work.join(name);
        copy_run(r.dir(), &d, true);
        d
    };
    let collate = |d: &std::path::Path| powerlab_output(["collate", d.to_str().unwrap()]);

    // 1. gpu3.csv cut in half.
    let d = fresh("cut");
    let raw = std::fs::read(d.join("raw/gpu3.csv")).unwrap();
    std::fs::write(d.join("raw/gpu3.csv"), &raw[..raw.len() / 2]).unwrap();
    let out = collate(&d);
    assert_exit(&out, 0);
    let first = std::fs::read_to_string(d.join("report/report.md"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    assert!(
        first.contains("INCOMPLETE RAW DATA") && first.contains("gpu3.csv is cut short"),
        "{first}"
    );
    let cut = rungs_of(&d);
    let mut marked = 0;
    for (a, b) in intact.iter().zip(&cut) {
        let same = FIGURES.iter().all(|f| a[f] == b[f]);
        if !b["incomplete"].is_null() {
            marked += 1;
        }
        assert!(
            same || !b["incomplete"].is_null(),
            "{}: figures changed without a mark: {a} vs {b}",
            b["label"]
        );
    }
    assert!(marked > 0, "the rungs after the cut are marked");

    // 2a. gpu1.csv deleted: named, every rung marked, no node figures.
    let d = fresh("deleted");
    std::fs::remove_file(d.join("raw/gpu1.csv")).unwrap();
    let out = collate(&d);
    assert_exit(&out, 0);
    let first = std::fs::read_to_string(d.join("report/report.md"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    assert!(first.contains("gpu1.csv is missing"), "{first}");
    for b in rungs_of(&d) {
        assert!(!b["incomplete"].is_null(), "{b}");
        assert!(
            FIGURES.iter().all(|f| b[f].is_null()),
            "a node figure without gpu1: {b}"
        );
    }

    // 2b-d. Copied, rescaled and unlisted files: refused by name.
    let d = fresh("copied");
    let gpu0 = std::fs::read(d.join("raw/gpu0.csv")).unwrap();
    std::fs::write(d.join("raw/gpu1.csv"), &gpu0).unwrap();
    // The file no longer matches the checksum its index recorded...
    let out = collate(&d);
    assert_exit(&out, 1);
    assert!(
        text(&out.stderr).contains("gpu1.csv") && text(&out.stderr).contains("checksum"),
        "{}",
        text(&out.stderr)
    );
    // ...a missing index is itself refused...
    std::fs::remove_file(d.join("raw/gpu1.idx")).unwrap();
    let out = collate(&d);
    assert_exit(&out, 1);
    assert!(
        text(&out.stderr).contains("gpu1.idx") && text(&out.stderr).contains("missing"),
        "{}",
        text(&out.stderr)
    );
    // ...and in a run from before indexes its rows still give it away.
    older_than_indexes(&d);
    let out = collate(&d);
    assert_exit(&out, 1);
    assert!(
        text(&out.stderr).contains("gpu1.csv") && text(&out.stderr).contains("rows of `gpu0`"),
        "{}",
        text(&out.stderr)
    );

    let d = fresh("scaled");
    let scaled: String = std::fs::read_to_string(d.join("raw/gpu2.csv"))
        .unwrap()
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let f: Vec<&str> = l.split(',').collect();
            if i == 0 || f[3] == "energy_mj" || f.len() != 5 {
                format!("{l}\n")
            } else {
                format!(
                    "{},{},{},{},{}\n",
                    f[0],
                    f[1],
                    f[2],
                    f[3],
                    f[4].parse::<f64>().unwrap() * 1000.0
                )
            }
        })
        .collect();
    std::fs::write(d.join("raw/gpu2.csv"), scaled).unwrap();
    // In a run from before indexes: the range check.
    older_than_indexes(&d);
    let out = collate(&d);
    assert_exit(&out, 1);
    assert!(
        text(&out.stderr).contains("gpu2.csv") && text(&out.stderr).contains("rescaled"),
        "{}",
        text(&out.stderr)
    );

    // (In a run of today's format the edited manifest is refused first; see
    // `an_edited_manifest_of_a_finished_run_is_refused`.)
    let d = fresh("unlisted");
    older_than_indexes(&d);
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("manifest.json")).unwrap()).unwrap();
    m["backend"]["gpus"].as_array_mut().unwrap().truncate(2);
    std::fs::write(d.join("manifest.json"), serde_json::to_string(&m).unwrap()).unwrap();
    let out = collate(&d);
    assert_exit(&out, 1);
    assert!(
        text(&out.stderr).contains("gpu2.csv")
            && text(&out.stderr).contains("not a GPU of this run"),
        "{}",
        text(&out.stderr)
    );

    // The index itself: emptied, reversed, cut mid-CRC, or another run's;
    // and rows appended after a complete run. All refused by name.
    let idx0 = std::fs::read_to_string(r.dir().join("raw/gpu0.idx")).unwrap();
    let mut reversed: Vec<&str> = idx0.lines().collect();
    reversed[1..].reverse();
    type Damage<'a> = Box<dyn Fn(&std::path::Path) + 'a>;
    let cases: Vec<(&str, Damage<'_>, &str)> = vec![
        (
            "emptied",
            Box::new(|d| std::fs::write(d.join("raw/gpu0.idx"), "").unwrap()),
            "no first line",
        ),
        (
            "reversed",
            Box::new(move |d| {
                std::fs::write(d.join("raw/gpu0.idx"), reversed.join("\n") + "\n").unwrap()
            }),
            "do not grow",
        ),
        (
            "garbled",
            Box::new(|d| {
                std::fs::write(d.join("raw/gpu0.idx"), idx0.replacen(",", ";", 3)).unwrap()
            }),
            "is not a checkpoint",
        ),
        (
            "cut-crc",
            Box::new(|d| {
                let t = std::fs::read_to_string(d.join("raw/gpu0.idx")).unwrap();
                let lines: Vec<&str> = t.lines().collect();
                let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                let k = out.len() / 2;
                let n = out[k].len() - 4;
                out[k].truncate(n);
                std::fs::write(d.join("raw/gpu0.idx"), out.join("\n") + "\n").unwrap();
            }),
            "is not a checkpoint",
        ),
        (
            "other-run",
            Box::new(|d| {
                let t = std::fs::read_to_string(d.join("raw/gpu0.idx"))
                    .unwrap()
                    .replacen("run 1", "run 2", 1);
                std::fs::write(d.join("raw/gpu0.idx"), t).unwrap();
            }),
            "not by this run",
        ),
        (
            "appended",
            Box::new(|d| {
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(d.join("raw/gpu0.csv"))
                    .unwrap();
                std::io::Write::write_all(
                    &mut f,
                    format!(
                        "{},sim-node-0,gpu0,buffered_w,2000\n",
                        EPOCH + 5_000_000_000
                    )
                    .as_bytes(),
                )
                .unwrap();
            }),
            "never indexed",
        ),
    ];
    for (name, damage, says) in cases {
        let d = fresh(name);
        damage(&d);
        let out = collate(&d);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out.stdout));
        assert!(
            text(&out.stderr).contains("gpu0.csv") && text(&out.stderr).contains(says),
            "{name}: {}",
            text(&out.stderr)
        );
    }

    // The other files of a complete run carry their length and CRC-32 in the
    // manifest: edges.csv deleted, a row duplicated, or edited, is refused.
    for (name, says) in [
        ("edges-deleted", "is missing"),
        ("edges-edited", "was changed"),
    ] {
        let d = fresh(name);
        if name == "edges-deleted" {
            std::fs::remove_file(d.join("edges.csv")).unwrap();
        } else {
            let t = std::fs::read_to_string(d.join("edges.csv")).unwrap();
            let second = t.lines().nth(1).unwrap().to_string();
            std::fs::write(d.join("edges.csv"), format!("{t}{second}\n")).unwrap();
        }
        let out = collate(&d);
        assert_eq!(out.status.code(), Some(1), "{name}");
        assert!(
            text(&out.stderr).contains("edges.csv") && text(&out.stderr).contains(says),
            "{name}: {}",
            text(&out.stderr)
        );
    }
    // In a run from before checksums, a duplicated edge row still gives it away.
    let d = fresh("edges-duplicated-unsummed");
    older_than_indexes(&d);
    let t = std::fs::read_to_string(d.join("edges.csv")).unwrap();
    let second = t.lines().nth(1).unwrap().to_string();
    std::fs::write(d.join("edges.csv"), format!("{t}{second}\n")).unwrap();
    let out = collate(&d);
    assert_exit(&out, 1);
    assert!(
        text(&out.stderr).contains("listed twice"),
        "{}",
        text(&out.stderr)
    );
}

// ---- Issue 31: run-directory integrity and the collator's reading ----

/// A finished simulated run of 2 GPUs and two duty rungs (for the issue 31
/// cases; each case works on its own copy).
fn finished_run() -> Run {
    let c = campaign(
        "[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiods_ms = [500, 200]\nduration_s = 4\n",
    );
    let r = run_sim(&c, &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    r
}

fn collate_dir(d: &std::path::Path) -> std::process::Output {
    powerlab_output(["collate", d.to_str().unwrap()])
}

fn edit_manifest(d: &std::path::Path, f: impl Fn(&mut serde_json::Value)) {
    let p = d.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    f(&mut m);
    std::fs::write(&p, serde_json::to_string_pretty(&m).unwrap() + "\n").unwrap();
}

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

/// Issue 31, defect 3: deleting the manifest's `checksums` key turned the
/// events and edges check off; editing the limit, the backend or the GPU
/// list went unseen. Every such edit of a finished run is now refused,
/// naming the manifest.
#[test]
fn an_edited_manifest_of_a_finished_run_is_refused() {
    let r = finished_run();
    type Edit = Box<dyn Fn(&std::path::Path)>;
    let cases: Vec<(&str, Edit)> = vec![
        (
            "checksums-deleted",
            Box::new(|d| {
                edit_manifest(d, |m| {
                    m.as_object_mut().unwrap().remove("checksums");
                })
            }),
        ),
        (
            "checksums-deleted-window-shifted",
            Box::new(|d| {
                edit_manifest(d, |m| {
                    m.as_object_mut().unwrap().remove("checksums");
                });
                let ev = std::fs::read_to_string(d.join("events.jsonl")).unwrap();
                let shifted: Vec<String> = ev
                    .lines()
                    .map(|l| {
                        let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                        if let Some(x) = v.get_mut("measure_from_ns") {
                            *x = serde_json::json!(x.as_i64().unwrap() + 500_000_000);
                        }
                        v.to_string()
                    })
                    .collect();
                std::fs::write(d.join("events.jsonl"), shifted.join("\n") + "\n").unwrap();
            }),
        ),
        (
            "power-limit-halved",
            Box::new(|d| {
                edit_manifest(d, |m| {
                    m["backend"]["gpus"][0]["power_limit_w"] = serde_json::json!(350.0)
                })
            }),
        ),
        (
            "backend-cuda",
            Box::new(|d| edit_manifest(d, |m| m["backend"]["backend"] = serde_json::json!("cuda"))),
        ),
        (
            "gpu-dropped",
            Box::new(|d| {
                edit_manifest(d, |m| {
                    m["backend"]["gpus"].as_array_mut().unwrap().truncate(1)
                });
                std::fs::remove_file(d.join("raw/gpu1.csv")).unwrap();
                std::fs::remove_file(d.join("raw/gpu1.idx")).unwrap();
            }),
        ),
        (
            "seal-deleted",
            Box::new(|d| {
                edit_manifest(d, |m| {
                    m.as_object_mut().unwrap().remove("seal");
                    m.as_object_mut().unwrap().remove("checksums");
                })
            }),
        ),
        (
            // A run from before the seal: the limit is checked against the
            // raw file's own `power_limit_w` rows.
            "older-run-limit-halved",
            Box::new(|d| {
                older_than_indexes(d);
                edit_manifest(d, |m| {
                    m["backend"]["gpus"][0]["power_limit_w"] = serde_json::json!(350.0)
                });
            }),
        ),
        (
            "made-to-look-older",
            Box::new(|d| {
                edit_manifest(d, |m| {
                    m["format_version"] = serde_json::json!(1);
                    m.as_object_mut().unwrap().remove("seal");
                    m["backend"]["gpus"][0]["power_limit_w"] = serde_json::json!(350.0);
                })
            }),
        ),
    ];
    for (name, edit) in cases {
        let d = r.results.path().join(name);
        copy_run(r.dir(), &d, false);
        edit(&d);
        let out = collate_dir(&d);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains("manifest.json"), "{name}: {err}");
    }
}

/// Issue 31, defect 3: in a killed run (no checksums at its end) a rung
/// taken out of `events.jsonl` vanished from the report although the plan
/// lists it; now every planned rung without a record is named on the
/// report's first line.
#[test]
fn a_planned_rung_missing_from_a_killed_runs_events_is_named() {
    let c = campaign(
        "[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiods_ms = [500, 400, 300, 250]\nduration_s = 4\n",
    );
    let r = run_sim(&c, &["--sim-gpus", "2", "--sim-fault", "node:die_at=14s"]);
    assert_ne!(r.code(), 0, "{}", r.stderr());
    let d = r.dir().to_path_buf();
    let ev = std::fs::read_to_string(d.join("events.jsonl")).unwrap();
    let started: Vec<serde_json::Value> = ev
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["event"] == "rung_started")
        .collect();
    assert!(started.len() >= 2, "{ev}");
    let gone = started[0]["rung"]["label"].as_str().unwrap().to_string();
    let kept: Vec<&str> = ev
        .lines()
        .filter(|l| !(l.contains("\"rung_started\"") && l.contains(&format!("\"{gone}\""))))
        .collect();
    std::fs::write(d.join("events.jsonl"), kept.join("\n") + "\n").unwrap();
    let out = collate_dir(&d);
    assert_exit(&out, 0);
    let first = std::fs::read_to_string(d.join("report/report.md"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    assert!(first.contains(&gone), "{gone} not named: {first}");
    // The rungs never reached are named too.
    assert!(first.contains("d/p250ms"), "{first}");
}

/// Issue 45, defect 9: a duplicated `rung_started` line in a killed
/// run's `events.jsonl` (no checksums to catch it) made a fake repeat:
/// exit 0, the sustained rung twice in `summary.csv`, n = 2 with a 0 W
/// interval in `repeats.csv`. It is refused, as a duplicated `edges.csv`
/// row is, naming the file and the line.
#[test]
fn a_duplicated_rung_started_in_a_killed_runs_events_is_refused_naming_the_line() {
    let c = campaign(
        "[[phase]]\nkind = \"sustained\"\nname = \"s\"\nduration_s = 3\n[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiods_ms = [500, 400]\nduration_s = 4\n",
    );
    let r = run_sim(&c, &["--sim-gpus", "2", "--sim-fault", "node:die_at=14s"]);
    assert_ne!(r.code(), 0, "{}", r.stderr());
    let d = r.dir().to_path_buf();
    // As killed, the run collates.
    assert_exit(&collate_dir(&d), 0);
    let ev = std::fs::read_to_string(d.join("events.jsonl")).unwrap();
    let mut lines: Vec<&str> = ev.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("\"rung_started\"") && l.contains("\"kind\":\"sustained\""))
        .unwrap_or_else(|| panic!("no sustained rung started: {ev}"));
    lines.insert(at + 1, lines[at]);
    std::fs::write(d.join("events.jsonl"), lines.join("\n") + "\n").unwrap();
    let out = collate_dir(&d);
    let err = text(&out.stderr);
    assert_exit(&out, 1);
    assert!(
        err.contains("events.jsonl")
            && err.contains(&format!("line {}:", at + 2))
            && err.contains("starts a second time")
            && err.contains("remove it"),
        "names the file, the line and what to do: {err}"
    );
}

/// Issue 31, defect 9: an `events.jsonl` that is a link to `/dev/zero` made
/// collate abort on a 4 GB allocation; a raw file that is a link was read
/// as the run's. Files of a run directory must be regular files.
#[test]
fn run_directory_files_that_are_not_regular_files_are_refused() {
    let r = finished_run();
    let d = r.results.path().join("zero");
    copy_run(r.dir(), &d, false);
    std::fs::remove_file(d.join("events.jsonl")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", d.join("events.jsonl")).unwrap();
    let out = collate_dir(&d);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("events.jsonl") && err.contains("not a regular file"),
        "{err}"
    );
    let d = r.results.path().join("linked-raw");
    copy_run(r.dir(), &d, false);
    let elsewhere = r.results.path().join("gpu0-elsewhere.csv");
    std::fs::rename(d.join("raw/gpu0.csv"), &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, d.join("raw/gpu0.csv")).unwrap();
    let out = collate_dir(&d);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("gpu0.csv") && err.contains("not a regular file"),
        "{err}"
    );
}

/// Issue 31, defect 13: a `report` that is a file left `report.old-PID`
/// behind for ever; `spectrum.csv` had no header row.
#[test]
fn a_report_that_is_a_file_is_replaced_without_leftovers() {
    let r = finished_run();
    let spectrum = std::fs::read_to_string(r.dir().join("report/spectrum.csv")).unwrap();
    assert_eq!(
        spectrum.lines().next().unwrap(),
        "rung_id,label,dominant_hz,share_0_1_to_2_hz,share_2_to_20_hz,nyquist_hz",
        "{spectrum}"
    );
    let report = r.dir().join("report");
    std::fs::remove_dir_all(&report).unwrap();
    std::fs::write(&report, "not a directory").unwrap();
    let out = collate_dir(r.dir());
    assert_exit(&out, 0);
    assert!(report.join("report.md").is_file());
    let stray: Vec<_> = std::fs::read_dir(r.dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("report."))
        .collect();
    assert!(stray.is_empty(), "{stray:?}");
}

/// The manifest `m` as text with a seal recomputed for it, as the runner
/// seals it: the CRC-32 of the text with the seal written as 00000000.
fn forge_seal(m: &mut serde_json::Value) -> String {
    m["seal"] = "00000000".into();
    let t = serde_json::to_string_pretty(m).unwrap() + "\n";
    let crc = format!("{:08x}", crc32fast::hash(t.as_bytes()));
    t.replacen("\"seal\": \"00000000\"", &format!("\"seal\": \"{crc}\""), 1)
}

/// A Markdown table row's cells: the `|` that are not backslash-escaped.
fn cell_bars(line: &str) -> usize {
    let b = line.as_bytes();
    (0..b.len())
        .filter(|&i| b[i] == b'|' && (i == 0 || b[i - 1] != b'\\'))
        .count()
}

/// The table under `heading` in `md`: its lines, header first.
fn table_after<'a>(md: &'a str, heading: &str) -> Vec<&'a str> {
    md.lines()
        .skip_while(|l| !l.starts_with(heading))
        .skip(1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| !l.trim().is_empty())
        .collect()
}

/// Issue 31, defect 10: a name with a newline, `|` or `<script>` broke
/// report.md's tables and put live tags in report.html. Names are refused
/// at validation now and a hand-edited manifest breaks its seal, so the
/// names come from a manifest edited by a forger who recomputes the seal
/// (what the README says the check cannot catch): the collated report.md
/// keeps every table's column count and report.html holds no tag from them.
#[test]
fn issue31_defect10_a_hand_edited_name_reaches_no_report_as_markup() {
    let r = run_sim(&campaign(DUTY), &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let path = r.dir().join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let evil = "x|y<script>alert(1)</script>\n| z | w |";
    m["campaign"] = evil.into();
    m["backend"]["gpus"][0]["name"] = format!("H200 {evil}").into();
    std::fs::write(&path, forge_seal(&mut m)).unwrap();
    let out = powerlab_output(["collate", r.dir().to_str().unwrap()]);
    assert_exit(&out, 0);
    let md = std::fs::read_to_string(r.dir().join("report/report.md")).unwrap();
    let html = std::fs::read_to_string(r.dir().join("report/report.html")).unwrap();
    assert!(!html.contains("<script"), "a live tag in report.html");
    assert!(
        html.contains("&lt;script&gt;alert(1)"),
        "the name is shown, as text"
    );
    for heading in ["## GPUs", "## Rungs"] {
        let rows = table_after(&md, heading);
        assert!(rows.len() >= 3, "{heading}: {rows:?}");
        let cols = cell_bars(rows[0]);
        for row in &rows {
            assert_eq!(cell_bars(row), cols, "{heading}: {row}");
        }
    }
    let gpu_rows = table_after(&md, "## GPUs");
    assert_eq!(gpu_rows.len(), 2 + 2, "one row per GPU: {gpu_rows:?}");
    // The headline is one line, and names the run as text.
    let first = md
        .lines()
        .find(|l| l.starts_with("Campaign `"))
        .unwrap_or("");
    assert!(
        first.contains("alert(1)") && first.ends_with(")."),
        "{first}"
    );
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

/// Issue 31, defect 12: `compare --out` inside a run's `report/` (which the
/// next collation replaces whole) wrote there, and the comparison was lost.
#[test]
fn issue31_defect12_compare_out_inside_a_report_is_refused() {
    let r = run_sim(&campaign(DUTY), &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let d = r.dir().to_str().unwrap().to_string();
    for inside in ["report/cmp", "report", "raw/../report/x/y"] {
        let out = powerlab_output(["compare", &d, &d, "--out", &format!("{d}/{inside}")]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{inside}: {err}");
        assert!(
            err.contains("inside the report/ folder of run"),
            "{inside}: {err}"
        );
        assert!(!r.dir().join("report/cmp").exists());
        assert!(!r.dir().join("report/compare.md").exists());
    }
    // Beside the run is fine.
    let beside = r.results.path().join("cmp");
    let out = powerlab_output(["compare", &d, &d, "--out", beside.to_str().unwrap()]);
    assert_exit(&out, 0);
    assert!(beside.join("compare.md").exists());
}

/// Issue 31, defect 13: the release tarball's first campaign,
/// `campaigns/device-smoke.toml`, said "too short to fold" on every duty
/// rung, so a first real run showed no swing at all. Run as shipped on the
/// simulated node, every duty rung now gets composed figures.
#[test]
fn issue31_defect13_the_shipped_smoke_campaign_folds_its_duty_rungs() {
    let file =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../campaigns/device-smoke.toml");
    let text_of = std::fs::read_to_string(&file).unwrap();
    let r = run_sim(&text_of, &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let rows = csv_rows(&r.dir().join("report/summary.csv"));
    let duty: Vec<_> = rows.iter().filter(|r| r["kind"] == "duty").collect();
    assert_eq!(duty.len(), 4, "{rows:?}");
    for d in &duty {
        assert!(
            !d["spread_w"].is_empty() && !d["swing_w"].is_empty(),
            "{}: no composed figures ({})",
            d["label"],
            d["verdict"]
        );
    }
    let md = std::fs::read_to_string(r.dir().join("report/report.md")).unwrap();
    assert!(!md.contains("too short to fold"), "{md}");
}

/// Hostile review of issue 31: a node-power file put into a sealed run
/// (a 2500 W "BMC" the run never read) and a manifest made to look like
/// format 1 with only edges.csv summed both changed the answer with exit
/// 0; both are refused now, naming the file.
#[test]
fn a_node_power_file_added_or_a_downgraded_manifest_is_refused() {
    let r = run_sim(&campaign(DUTY), &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let collate =
        |dir: &std::path::Path| powerlab_output(["collate", dir.to_str().unwrap(), "--force"]);
    // A meter's readings added afterwards.
    let tmp = tempfile::tempdir().unwrap();
    let added = tmp.path().join("added");
    copy_run(r.dir(), &added, false);
    std::fs::create_dir_all(added.join("node_power")).unwrap();
    std::fs::write(
        added.join("node_power/bmc.csv"),
        "sent_ns,received_ns,watts\n1,2,2500\n",
    )
    .unwrap();
    let out = collate(&added);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("bmc.csv"),
        "{}",
        text(&out.stderr)
    );
    // Format 1, no seal, the events' checksum dropped.
    let old = tmp.path().join("old");
    copy_run(r.dir(), &old, false);
    let path = old.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    m["format_version"] = 1.into();
    m.as_object_mut().unwrap().remove("seal");
    m["checksums"]
        .as_array_mut()
        .unwrap()
        .retain(|c| c["file"] == "edges.csv");
    std::fs::write(&path, serde_json::to_string_pretty(&m).unwrap()).unwrap();
    for e in std::fs::read_dir(old.join("raw")).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "idx") {
            let t = std::fs::read_to_string(e.path()).unwrap();
            assert!(t.lines().next().unwrap().contains("format 2"), "{t}");
            std::fs::write(e.path(), t.replacen("format 2", "format 1", 1)).unwrap();
        }
    }
    let out = collate(&old);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("manifest.json"),
        "{}",
        text(&out.stderr)
    );
}

/// A node whose `edges.csv` its own collation refuses (a link, a foreign
/// header) is a gap in the rack, named in the rack's report, not a reason
/// to refuse the rack and leave its old "complete" report in place.
#[test]
fn a_rack_whose_node_has_a_refused_edge_log_reports_that_node_as_a_gap() {
    let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../results/h200x2-2026-11-30-rack/2x1/h200-rack-20261130T215107Z-rack2");
    for damage in ["link", "header"] {
        let tmp = tempfile::tempdir().unwrap();
        let rack = tmp.path().join("rack");
        let ok = Command::new("cp")
            .arg("-a")
            .arg(&committed)
            .arg(&rack)
            .status()
            .unwrap()
            .success();
        assert!(ok, "cp -a {}", committed.display());
        let edges = rack.join("nodes/n001-vm/edges.csv");
        if damage == "link" {
            let moved = tmp.path().join("edges.csv");
            std::fs::rename(&edges, &moved).unwrap();
            std::os::unix::fs::symlink(&moved, &edges).unwrap();
        } else {
            let t = std::fs::read_to_string(&edges).unwrap();
            std::fs::write(&edges, t.replacen("rung_id", "rung", 1)).unwrap();
        }
        let out = powerlab_output(["collate", rack.to_str().unwrap(), "--force"]);
        assert_exit(&out, 1);
        assert!(
            text(&out.stderr).contains("the rack is incomplete")
                && text(&out.stderr).contains("n001-vm"),
            "{damage}: {}",
            text(&out.stderr)
        );
        let report = std::fs::read_to_string(rack.join("report/report.md")).unwrap();
        let first = report.lines().next().unwrap_or_default();
        assert!(
            first.contains("DID NOT COMPLETE") && first.contains("n001-vm"),
            "{damage}: the rack's report must say the node is missing: {first}"
        );
        assert!(
            report.contains("covers only the 1 of 2 nodes with a report: n001-vm is not in it"),
            "{damage}: the start skew must not claim the missing node"
        );
    }
}

/// One GPU's samples in two raw files (`gpu1.csv` and a `gzip -k` copy
/// beside it) would be summed twice into a plausible node: refused, naming
/// both.
#[test]
fn a_raw_file_beside_its_own_gzip_copy_is_refused_not_summed_twice() {
    let c = campaign("[[phase]]\nkind = \"sustained\"\nname = \"s\"\nduration_s = 2\n");
    let r = run_sim(&c, &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let raw = r.dir().join("raw/gpu1.csv");
    let ok = Command::new("gzip")
        .arg("-k")
        .arg(&raw)
        .status()
        .unwrap()
        .success();
    assert!(ok, "gzip -k {}", raw.display());
    let out = powerlab_output(["collate", r.dir().to_str().unwrap()]);
    assert_exit(&out, 1);
    let err = text(&out.stderr);
    assert!(
        err.contains("gpu1.csv.gz") && err.contains("same GPU's samples"),
        "{err}"
    );
}
