#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! A workload phase's command misbehaving, with real child processes on
//! the simulated node in real time (`--sim-run-command`): a program that
//! is missing, one that exits 1 at once, one that ignores SIGTERM (and
//! leaves a child of its own), one that writes 1 GB to stdout. Each ends
//! the run with an error that names the command and what to do, keeps
//! every sample taken (the idle rung before it, and the workload's own up
//! to the stop), collates them, and leaves no process of the job behind.

use crate::util::{capture, powerlab, run_dirs, text};
use std::path::Path;
use std::process::Output;

/// An idle rung, then the workload phase running `command` (TOML array).
fn campaign(command: &str) -> String {
    format!(
        "[campaign]\nname = \"wf\"\n[defaults]\nwarmup_s = 0.5\ncooldown_s = 0.2\n\
         [[phase]]\nkind = \"idle\"\nname = \"before\"\nduration_s = 1\n\
         [[phase]]\nkind = \"workload\"\nname = \"job\"\ncommand = {command}\nduration_s = 2\nstop_grace_s = 1\n"
    )
}

/// Runs the campaign on one simulated GPU in real time, the command run
/// (from the test's own directory); returns the results root.
fn attempt(command: &str) -> (Output, tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("c.toml");
    std::fs::write(&file, campaign(command)).unwrap();
    let root = tmp.path().join("runs");
    let out = capture(powerlab().current_dir(tmp.path()).args([
        "run",
        file.to_str().unwrap(),
        "--backend",
        "sim",
        "--sim-pace",
        "realtime",
        "--sim-run-command",
        "--allow-programs",
        "--sim-gpus",
        "1",
        "--results",
        root.to_str().unwrap(),
    ]));
    (out, tmp, root)
}

/// [`attempt`], which made a run directory.
fn run(command: &str) -> (Output, tempfile::TempDir, std::path::PathBuf) {
    let (out, tmp, root) = attempt(command);
    let dir = run_dirs(&root).into_iter().next().expect("a run directory");
    (out, tmp, dir)
}

/// Buffered samples in the raw file, and the last one's time.
fn samples(dir: &Path) -> (usize, i64) {
    let text = std::fs::read_to_string(dir.join("raw/gpu0.csv")).unwrap();
    let rows: Vec<i64> = text
        .lines()
        .filter(|l| l.contains(",buffered_w,"))
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    (rows.len(), rows.iter().copied().max().unwrap_or(0))
}

/// The run ended failed, its reason and stderr naming `what`, every
/// sample kept and collated, and none of the pids in `pids` alive.
fn assert_clean_failure(out: &Output, dir: &Path, what: &[&str], tmp: &Path) {
    assert_eq!(out.status.code(), Some(4), "stderr:\n{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    for w in what {
        assert!(stderr.contains(w), "stderr lacks `{w}`:\n{stderr}");
    }
    let manifest = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    assert!(manifest.contains("\"failed\""), "{manifest}");
    // The idle rung's samples (1 s at 20 ms: ~50) at least, all collated.
    let (n, _) = samples(dir);
    assert!(n >= 45, "{n} buffered samples kept");
    let report = std::fs::read_to_string(dir.join("report/report.md")).unwrap();
    assert!(
        report.starts_with("# ⚠ RUN FAILED"),
        "{}",
        &report[..200.min(report.len())]
    );
    // No process of the job is left.
    let pids = std::fs::read_to_string(tmp.join("pids")).unwrap_or_default();
    for pid in pids.split_whitespace() {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let zombie_or_gone = status.is_empty() || status.contains("State:\tZ");
        assert!(
            zombie_or_gone,
            "process {pid} of the job is still running:\n{status}"
        );
    }
}

#[test]
fn a_missing_program_is_refused_before_any_load() {
    let (out, _tmp, root) = attempt(r#"["/nonexistent/train.py", "--steps", "10"]"#);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("`/nonexistent/train.py` is not found on this node"),
        "{stderr}"
    );
    assert!(stderr.contains("no load was started"), "{stderr}");
    assert!(run_dirs(&root).is_empty());
}

#[test]
fn a_program_that_cannot_start_is_named_and_the_samples_before_it_are_kept() {
    // The campaign file itself (the run's directory is the test's):
    // found, not executable, so the start fails.
    let (out, tmp, dir) = run(r#"["./c.toml"]"#);
    assert_clean_failure(
        &out,
        &dir,
        &[
            "`./c.toml` could not be started",
            "Permission denied",
            "chmod +x",
        ],
        tmp.path(),
    );
}

#[test]
fn a_command_that_exits_1_at_once_is_named_with_its_status_and_output() {
    let (out, tmp, dir) = run(r#"["sh", "-c", "echo $$ > pids; echo boom >&2; exit 1"]"#);
    assert_clean_failure(
        &out,
        &dir,
        &["exited with status 1", "workload/job.stderr"],
        tmp.path(),
    );
    let err = std::fs::read_to_string(dir.join("workload/job.stderr")).unwrap();
    assert_eq!(err, "boom\n");
    let ending: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("workload/job.json")).unwrap())
            .unwrap();
    assert_eq!(ending["exit_code"], 1);
    assert_eq!(ending["stopped_by"], "exited");
}

#[test]
fn a_command_that_ignores_sigterm_is_killed_with_its_children_after_the_grace() {
    let (out, tmp, dir) = run(
        r#"["sh", "-c", "trap '' TERM; echo $$ > pids; sleep 1000 & echo $! >> pids; wait; sleep 1000"]"#,
    );
    assert_clean_failure(
        &out,
        &dir,
        &["did not stop within 1.0 s of SIGTERM", "SIGKILL"],
        tmp.path(),
    );
    let pids = std::fs::read_to_string(tmp.path().join("pids")).unwrap();
    assert_eq!(pids.split_whitespace().count(), 2, "{pids}");
    // Its whole window was sampled: the last sample is past the window's end.
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let end_ns: i64 = events
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| e["event"] == "rung_started" && e["rung"]["kind"] == "workload")
        .and_then(|e| e["end_ns"].as_i64())
        .unwrap();
    assert!(
        samples(&dir).1 >= end_ns - 40_000_000,
        "samples stop before the window's end"
    );
    let ending = std::fs::read_to_string(dir.join("workload/job.json")).unwrap();
    assert!(ending.contains("\"sigkill\""), "{ending}");
}

#[test]
fn a_command_that_floods_stdout_is_stopped_and_its_first_64_mib_kept() {
    let (out, tmp, dir) =
        run(r#"["sh", "-c", "echo $$ > pids; head -c 1000000000 /dev/zero; sleep 1000"]"#);
    assert_clean_failure(
        &out,
        &dir,
        &["to stdout, more than the 64 MiB", "logging to a file"],
        tmp.path(),
    );
    let kept = std::fs::metadata(dir.join("workload/job.stdout"))
        .unwrap()
        .len();
    assert_eq!(kept, 64 << 20);
}

#[test]
fn a_process_that_leaves_the_group_is_found_killed_and_named() {
    let t0 = std::time::Instant::now();
    let (out, tmp, dir) =
        run(r#"["sh", "-c", "setsid sleep 300 & echo $! > pids; echo started; sleep 1000"]"#);
    assert_clean_failure(
        &out,
        &dir,
        &["left 1 process(es) outside its process group", "(sleep)"],
        tmp.path(),
    );
    // It did not wait for the escaped process (which held the output).
    assert!(t0.elapsed().as_secs() < 60, "{:?}", t0.elapsed());
    let ending = std::fs::read_to_string(dir.join("workload/job.json")).unwrap();
    assert!(ending.contains("\"escaped\""), "{ending}");
}

#[test]
fn a_command_that_dies_in_its_warm_up_stops_the_run_when_it_dies() {
    // A 6 s warm-up; the command dies after 1 s. It was noticed only when
    // the warm-up ended, and its end recorded then, 5 s late.
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("c.toml");
    let text_of = campaign(r#"["sh", "-c", "echo $$ > pids; sleep 1; exit 3"]"#)
        .replace("warmup_s = 0.5", "warmup_s = 6");
    std::fs::write(&file, text_of).unwrap();
    let root = tmp.path().join("runs");
    let started = std::time::Instant::now();
    let out = capture(powerlab().current_dir(tmp.path()).args([
        "run",
        file.to_str().unwrap(),
        "--backend",
        "sim",
        "--sim-pace",
        "realtime",
        "--sim-run-command",
        "--allow-programs",
        "--sim-gpus",
        "1",
        "--results",
        root.to_str().unwrap(),
    ]));
    let took = started.elapsed().as_secs_f64();
    let dir = run_dirs(&root).into_iter().next().expect("a run directory");
    assert_clean_failure(
        &out,
        &dir,
        &["exited with status 3", "before the phase's window began"],
        tmp.path(),
    );
    let ending: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("workload/job.json")).unwrap())
            .unwrap();
    let lived_s = (ending["ended_ns"].as_i64().unwrap() - ending["started_ns"].as_i64().unwrap())
        as f64
        / 1e9;
    assert!(
        (1.0..2.5).contains(&lived_s),
        "the job's end is recorded {lived_s:.2} s after its start (it died after 1 s)"
    );
    // The run ended soon after the job died, well before the warm-up's
    // 6 s would have ended.
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let after_s = (manifest["ended_ns"].as_i64().unwrap() - ending["ended_ns"].as_i64().unwrap())
        as f64
        / 1e9;
    assert!(
        after_s < 3.0,
        "the run ended {after_s:.1} s after the job died (took {took:.1} s)"
    );
}
