#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Faults on the simulated node: what is kept, what the user sees, the exit
//! code. Signals are delivered to the real process.

use crate::util::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn manifest(r: &Run) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(r.dir().join("manifest.json")).unwrap()).unwrap()
}

fn collates(dir: &std::path::Path) -> String {
    let out = powerlab_output(["collate", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "collate failed: {}",
        text(&out.stderr)
    );
    std::fs::read_to_string(dir.join("report/report.md")).unwrap()
}

const DUTY: &str = "[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiod_ms = 200\nduration_s = 8\n";

#[test]
fn lost_gpu_stops_the_run_with_evidence_and_keeps_the_data() {
    let r = run_sim(
        &campaign(DUTY),
        &["--sim-gpus", "2", "--sim-fault", "gpu1:lost_at=3s"],
    );
    assert_eq!(r.code(), 4, "{}", r.stderr());
    let m = manifest(&r);
    assert_eq!(m["status"]["state"], "failed");
    let reason = m["status"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("fell off the bus") || reason.contains("GPU_IS_LOST"),
        "{reason}"
    );
    assert!(
        r.events()
            .iter()
            .any(|e| e["event"] == "fault" && e["fatal"] == true)
    );
    let report = collates(r.dir());
    assert!(
        report.lines().next().unwrap().contains("RUN FAILED"),
        "{report}"
    );
}

#[test]
fn xid_event_stops_the_run() {
    let r = run_sim(
        &campaign(DUTY),
        &["--sim-gpus", "2", "--sim-fault", "gpu0:xid_at=2s@79"],
    );
    assert_eq!(r.code(), 4, "{}", r.stderr());
    let fault = r
        .events()
        .into_iter()
        .find(|e| e["event"] == "fault")
        .unwrap();
    assert_eq!(fault["kind"], "xid");
    assert!(fault["detail"].as_str().unwrap().contains("Xid 79"));
}

#[test]
fn transient_nvml_errors_are_counted_not_fatal() {
    let r = run_sim(
        &campaign(DUTY),
        &["--sim-gpus", "2", "--sim-fault", "gpu1:nvml_error_every=9"],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let note = r
        .events()
        .into_iter()
        .find(|e| e["event"] == "note" && e["topic"] == "samplers")
        .unwrap();
    let errors = note["detail"][1]["transient_errors"].as_u64().unwrap();
    assert!(errors > 10, "{note}");
    assert_eq!(note["detail"][0]["transient_errors"], 0);
}

#[test]
fn nvml_that_stops_answering_is_fatal() {
    let r = run_sim(
        &campaign(DUTY),
        &["--sim-gpus", "2", "--sim-fault", "gpu1:nvml_error_every=1"],
    );
    assert_eq!(r.code(), 4, "{}", r.stderr());
    assert!(
        manifest(&r)["status"]["reason"]
            .as_str()
            .unwrap()
            .contains("NVML stopped answering")
    );
}

#[test]
fn interlocks_name_the_limit_and_the_reading() {
    // HW power brake asserting.
    let r = run_sim(
        &campaign(DUTY),
        &["--sim-gpus", "2", "--sim-fault", "gpu1:power_brake_at=2s"],
    );
    assert_eq!(r.code(), 4, "{}", r.stderr());
    let i = r
        .events()
        .into_iter()
        .find(|e| e["event"] == "interlock")
        .unwrap();
    assert_eq!(i["limit"], "abort_on_hw_slowdown");
    assert!(
        i["reading"]
            .as_str()
            .unwrap()
            .contains("hw_power_brake_slowdown"),
        "{i}"
    );
    // Temperature.
    let hot = campaign(&format!("[limits]\nmax_gpu_temp_c = 60\n{DUTY}"));
    let r = run_sim(
        &hot,
        &["--sim-gpus", "2", "--sim-fault", "gpu0:extra_c_per_w=0.5"],
    );
    assert_eq!(r.code(), 4, "{}", r.stderr());
    let i = r
        .events()
        .into_iter()
        .find(|e| e["event"] == "interlock")
        .unwrap();
    assert_eq!(i["limit"], "max_gpu_temp_c");
    assert!(i["reading"].as_str().unwrap().contains("> limit 60"), "{i}");
    // Node power.
    let capped = campaign(&format!("[limits]\nmax_node_power_w = 1000\n{DUTY}"));
    let r = run_sim(&capped, &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 4, "{}", r.stderr());
    let i = r
        .events()
        .into_iter()
        .find(|e| e["event"] == "interlock")
        .unwrap();
    assert_eq!(i["limit"], "max_node_power_w");
}

#[test]
fn unwritable_results_directory_fails_before_load() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("c.toml");
    std::fs::write(&file, campaign(DUTY)).unwrap();
    let blocker = tmp.path().join("not-a-dir");
    std::fs::write(&blocker, "x").unwrap();
    let out = powerlab_output([
        "run",
        file.to_str().unwrap(),
        "--backend",
        "sim",
        "--sim-gpus",
        "2",
        "--results",
        blocker.join("r").to_str().unwrap(),
    ]);
    assert_exit(&out, 1);
    let err = text(&out.stderr);
    assert!(err.contains("not-a-dir"), "names the path: {err}");
}

fn spawn_realtime(c: &str, results: &std::path::Path) -> std::process::Child {
    let file = results.join("c.toml");
    std::fs::write(&file, c).unwrap();
    powerlab()
        .args([
            "run",
            file.to_str().unwrap(),
            "--backend",
            "sim",
            "--sim-gpus",
            "2",
            "--sim-pace",
            "realtime",
            "--json",
            "--results",
            results.join("runs").to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn signal(child: &std::process::Child, sig: &str) {
    assert!(
        Command::new("kill")
            .args([sig, &child.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
}

#[test]
fn sigint_mid_rung_stops_within_a_second_and_the_run_collates() {
    // SIGHUP is how a campaign started over ssh without tmux dies; SIGQUIT
    // and SIGUSR1 must not kill it either before the load is off.
    // Each exits 128 + its number, as a shell reports a process it killed.
    for (sig, code) in [
        ("-INT", 130),
        ("-TERM", 143),
        ("-HUP", 129),
        ("-QUIT", 131),
        ("-USR1", 138),
        ("-USR2", 140),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = spawn_realtime(&campaign(DUTY), tmp.path());
        std::thread::sleep(Duration::from_millis(3500));
        signal(&child, sig);
        let t0 = Instant::now();
        let status = child.wait().unwrap();
        let took = t0.elapsed();
        assert_eq!(status.code(), Some(code), "{sig}");
        assert!(
            took < Duration::from_millis(1500),
            "{sig}: exit took {took:?}"
        );
        let dir = run_dirs(&tmp.path().join("runs")).pop().unwrap();
        let m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap())
                .unwrap();
        assert_eq!(m["status"]["state"], "interrupted");
        assert!(
            m["status"]["reason"]
                .as_str()
                .unwrap()
                .contains(&format!("SIG{}", &sig[1..])),
            "{sig}: {}",
            m["status"]["reason"]
        );
        let report = collates(&dir);
        assert!(
            report.lines().next().unwrap().contains("RUN INTERRUPTED"),
            "{report}"
        );
        let raw = std::fs::read_to_string(dir.join("raw/gpu0.csv")).unwrap();
        assert!(
            raw.lines().filter(|l| l.contains("buffered_w")).count() > 100,
            "samples up to the interrupt are kept"
        );
    }
}

#[test]
fn kill_9_keeps_raw_samples_up_to_the_last_flush_and_they_collate() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = spawn_realtime(&campaign(DUTY), tmp.path());
    std::thread::sleep(Duration::from_millis(4000));
    let killed_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    signal(&child, "-KILL");
    let _ = child.wait();
    let dir = run_dirs(&tmp.path().join("runs")).pop().unwrap();
    let raw = std::fs::read_to_string(dir.join("raw/gpu1.csv")).unwrap();
    let last = raw
        .lines()
        .filter_map(|l| l.split(',').next()?.parse::<i64>().ok())
        .max()
        .unwrap();
    assert!(
        killed_at - last < 1_300_000_000,
        "the last kept sample is {} ms before the kill",
        (killed_at - last) / 1_000_000
    );
    // Rows written after the last index line (killed between a write and
    // the next flush's index) still collate, and the end is stated.
    let idx = std::fs::read_to_string(dir.join("raw/gpu1.idx")).unwrap();
    let indexed: usize = idx
        .lines()
        .last()
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(indexed < raw.lines().count());
    let report = collates(&dir);
    let first = report.lines().next().unwrap();
    assert!(
        first.contains("RUN DID NOT FINISH") && first.contains(" s after the start"),
        "{first}"
    );
}

#[test]
fn a_second_run_on_the_same_node_is_refused_naming_the_holder() {
    let tmp = tempfile::tempdir().unwrap();
    let mut first = spawn_realtime(&campaign(DUTY), tmp.path());
    std::thread::sleep(Duration::from_millis(1500));
    let file = tmp.path().join("second.toml");
    std::fs::write(&file, campaign(DUTY)).unwrap();
    let second = powerlab_output([
        "run",
        file.to_str().unwrap(),
        "--backend",
        "sim",
        "--sim-gpus",
        "2",
        "--results",
        tmp.path().join("runs").to_str().unwrap(),
    ]);
    signal(&first, "-INT");
    let _ = first.wait();
    let err = text(&second.stderr);
    assert_ne!(second.status.code(), Some(0), "{err}");
    assert!(
        err.contains("held by pid") && err.contains("campaign `t`"),
        "names the holder: {err}"
    );
    // The refused run created no run directory of its own.
    assert_eq!(run_dirs(&tmp.path().join("runs")).len(), 1);
}

#[test]
fn a_disk_that_fills_mid_run_stops_the_load_and_keeps_what_was_written() {
    // The file-size limit makes every write past 20 KiB fail (EFBIG) the
    // way a full disk fails them (ENOSPC); SIGXFSZ is ignored so the write
    // error reaches the sampler instead of killing the process.
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("c.toml");
    std::fs::write(&file, campaign(DUTY)).unwrap();
    let runs = tmp.path().join("runs");
    let cmd = format!(
        "trap '' XFSZ; ulimit -f 40; exec '{}' run '{}' --backend sim --sim-gpus 2 --results '{}' --sim-epoch-ns {EPOCH}",
        POWERLAB,
        file.display(),
        runs.display()
    );
    let out = Command::new("sh").args(["-c", &cmd]).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    let dir = run_dirs(&runs).pop().unwrap();
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["status"]["state"], "failed");
    let reason = m["status"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("writing raw samples failed") && reason.contains("load is stopped"),
        "{reason}"
    );
    // The rows written before the disk filled are intact and collate.
    let raw = std::fs::read_to_string(dir.join("raw/gpu0.csv")).unwrap();
    assert!(
        raw.lines().count() > 300,
        "rows before the failure are kept"
    );
    let report = collates(&dir);
    assert!(
        report.lines().next().unwrap().contains("RUN FAILED"),
        "{report}"
    );
}

/// The simulated node goes through the same preflight checks as a real one:
/// CUDA error 802 (fabric not ready) refuses the node before any load.
#[test]
fn a_node_where_cuda_returns_802_is_refused_before_load() {
    let r = run_sim(
        &campaign(DUTY),
        &["--sim-gpus", "2", "--sim-fault", "node:cuda_init=802"],
    );
    assert_eq!(r.code(), 3, "{}", r.stderr());
    let err = r.stderr();
    assert!(
        err.contains("PREFLIGHT FAILED") && err.contains("802"),
        "{err}"
    );
    assert!(err.contains("no load was started"), "{err}");
    assert!(r.dir.is_none(), "no run directory");
}

/// Started by mpirun as one of several processes, a build without MPI must
/// refuse: otherwise each process would run its own single-node campaign.
#[cfg(not(feature = "mpi"))]
#[test]
fn a_rack_launch_of_a_build_without_mpi_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(&file, campaign(DUTY)).unwrap();
    let out = capture(
        powerlab()
            .args([
                "run",
                file.to_str().unwrap(),
                "--backend",
                "sim",
                "--results",
                dir.path().join("runs").to_str().unwrap(),
            ])
            .env("OMPI_COMM_WORLD_SIZE", "4"),
    );
    assert_exit(&out, 1);
    let err = text(&out.stderr);
    assert!(
        err.contains("built without MPI support")
            && err.contains("--features mpi")
            && err.contains("OMPI_COMM_WORLD_SIZE"),
        "{err}"
    );
    assert!(!dir.path().join("runs").exists(), "nothing ran");
}

/// `collate --snapshot` taken again and again while a run ends (issue 31,
/// defect 5): the run's own end-of-run collation waits for a snapshot in
/// progress instead of failing, the run exits 0, and the report left
/// beside the `complete` manifest is the final one, never a snapshot's
/// "DID NOT FINISH".
#[test]
fn snapshots_racing_the_end_of_a_run_never_fail_it_or_outlive_it() {
    let tmp = tempfile::tempdir().unwrap();
    let body = "[[phase]]\nkind = \"sustained\"\nname = \"s\"\nduration_s = 2\n";
    let mut child = spawn_realtime(
        &campaign(body).replace(
            "confirm_node_swing = true",
            "confirm_node_swing = true\nramp_up = false",
        ),
        tmp.path(),
    );
    let runs = tmp.path().join("runs");
    let dir = loop {
        if let Some(d) = run_dirs(&runs).pop()
            && d.join("manifest.json").exists()
        {
            break d;
        }
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(20));
    };
    // Two snapshot loops, so that one is in flight whenever the run ends.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let loops: Vec<_> = (0..2)
        .map(|_| {
            let (dir, done) = (dir.clone(), done.clone());
            std::thread::spawn(move || {
                let mut n = 0;
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = powerlab_output(["collate", "--snapshot", dir.to_str().unwrap()]);
                    n += 1;
                }
                n
            })
        })
        .collect();
    let status = child.wait().unwrap();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let snapshots: usize = loops.into_iter().map(|l| l.join().unwrap()).sum();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(0), "{snapshots} snapshots; {err}");
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["status"]["state"], "complete");
    let report = std::fs::read_to_string(dir.join("report/report.md")).unwrap();
    assert!(
        !report.contains("DID NOT FINISH"),
        "{snapshots} snapshots; {}",
        report.lines().next().unwrap()
    );
}

/// SIGTERM in the middle of a duty rung (issue 31, defect 6): the edges the
/// GPUs achieved before the stop are kept in `edges.csv` (before, the whole
/// rung's edge log was lost), once each, and the collator folds the cycles
/// they close.
#[test]
fn a_signal_mid_rung_keeps_the_edges_achieved_before_it() {
    let (_tmp, dir, rung) = stopped_mid_rung("-TERM", Some(143), 300_000_000);
    let s = rung_summary(&dir, &rung);
    assert!(
        s["incomplete"].as_str().is_some_and(
            |m| m.contains("the part that was sampled") && m.contains("before the stop")
        ),
        "{s}"
    );
}

/// SIGKILL in the middle of a duty rung (issue 31, hostile review): the
/// rung's edges were written only at its end or on a caught signal, so a
/// killed run lost them all and the rung could not be folded. They now
/// reach `edges.csv` while the rung runs: those achieved up to a second
/// before the kill are there, once each, and the collator folds the
/// cycles they close, marked as ending with the records; so does a
/// snapshot taken while the rung runs.
#[test]
fn kill_9_mid_rung_keeps_the_edges_achieved_up_to_a_second_before_it() {
    let (_tmp, dir, rung) = stopped_mid_rung("-KILL", None, 1_000_000_000);
    let s = rung_summary(&dir, &rung);
    assert!(
        s["incomplete"]
            .as_str()
            .is_some_and(|m| m.contains("records end") && m.contains("whole cycles")),
        "{s}"
    );
}

/// Runs a 10 s duty rung of 200 ms in real time, sends `sig` about 6.5 s
/// into it and checks that `edges.csv` holds that rung's edges once each,
/// the last of every GPU at most 200 ms after the signal and at most
/// `lag_ns` before it. Returns the results root (kept while it lives), the
/// run directory and the rung's `rung_started`.
fn stopped_mid_rung(
    sig: &str,
    code: Option<i32>,
    lag_ns: i64,
) -> (tempfile::TempDir, std::path::PathBuf, serde_json::Value) {
    let tmp = tempfile::tempdir().unwrap();
    let body = "[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiod_ms = 200\nduration_s = 10\n";
    let mut child = spawn_realtime(
        &campaign(body).replace(
            "confirm_node_swing = true",
            "confirm_node_swing = true\nramp_up = false",
        ),
        tmp.path(),
    );
    let runs = tmp.path().join("runs");
    let started = loop {
        let events = run_dirs(&runs)
            .pop()
            .and_then(|d| std::fs::read_to_string(d.join("events.jsonl")).ok())
            .unwrap_or_default();
        if let Some(e) = events
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|e| e["event"] == "rung_started" && e["rung"]["kind"] == "duty")
        {
            break e;
        }
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(50));
    };
    std::thread::sleep(Duration::from_millis(6000));
    let dir = run_dirs(&runs).pop().unwrap();
    if code.is_none() {
        // A snapshot meanwhile folds the cycles the running rung has so far.
        let out = powerlab()
            .args(["collate", "--snapshot", dir.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let s = summary_row(&dir, &started);
        assert!(s["spread_w"].as_f64().is_some(), "snapshot: {s}");
        assert!(
            s["incomplete"]
                .as_str()
                .is_some_and(|m| m.contains("records end")),
            "snapshot: {s}"
        );
    }
    std::thread::sleep(Duration::from_millis(500));
    let stopped_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    signal(&child, sig);
    assert_eq!(child.wait().unwrap().code(), code, "{sig}");
    let rung = started["rung"]["id"].as_u64().unwrap().to_string();
    let edges: Vec<_> = csv_rows(&dir.join("edges.csv"))
        .into_iter()
        .filter(|e| e["rung_id"] == rung)
        .collect();
    let epoch = started["epoch_ns"].as_i64().unwrap();
    for gpu in ["gpu0", "gpu1"] {
        let mine: Vec<_> = edges.iter().filter(|e| e["gpu"] == gpu).collect();
        let indices: std::collections::BTreeSet<&str> =
            mine.iter().map(|e| e["index"].as_str()).collect();
        assert_eq!(
            indices.len(),
            mine.len(),
            "{sig} {gpu}: an edge has two rows"
        );
        let achieved: Vec<i64> = mine
            .iter()
            .map(|e| e["achieved_ns"].parse().unwrap())
            .collect();
        // 10 edges a second (a rise and a fall each 200 ms) for ~5.5 s or more.
        assert!(
            achieved.len() >= 50,
            "{sig} {gpu}: {} edges of the stopped rung kept",
            achieved.len()
        );
        let last = *achieved.iter().max().unwrap();
        assert!(
            last <= stopped_at + 200_000_000,
            "{sig} {gpu}: an edge {} ms after the signal is listed",
            (last - stopped_at) / 1_000_000
        );
        assert!(
            last >= stopped_at - lag_ns && last >= epoch + 5_000_000_000,
            "{sig} {gpu}: the last edge kept is {} ms before the signal",
            (stopped_at - last) / 1_000_000
        );
    }
    (tmp, dir, started)
}

/// The stopped rung's summary row once the run is collated: the cycles
/// that ran are folded, so it has its node figures.
fn rung_summary(dir: &std::path::Path, started: &serde_json::Value) -> serde_json::Value {
    let report = collates(dir);
    assert!(!report.contains("edges.csv is missing"), "{report}");
    let s = summary_row(dir, started);
    assert!(s["spread_w"].as_f64().is_some(), "{s}");
    s
}

/// The summary row of the rung `started` names, from the report.
fn summary_row(dir: &std::path::Path, started: &serde_json::Value) -> serde_json::Value {
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report/summary.json")).unwrap())
            .unwrap();
    summary["rungs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["rung_id"] == started["rung"]["id"])
        .unwrap()
        .clone()
}

/// A small tmpfs at `dir` (unmounted when dropped); None, with a notice,
/// where this process may not mount one.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    #[allow(clippy::print_stderr)] // the notice that the test is skipped
    fn mount(dir: &std::path::Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!(
                "notice: cannot mount a tmpfs here (not root?); the disk-full test is skipped"
            );
            return None;
        }
        Some(Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A disk that fills mid-run (issue 31, defect 8), on a real full
/// filesystem: exit 4 with the disk named, the manifest sealed as failed
/// with no `manifest.json.tmp` left, and the report saying the run failed
/// and why; a manifest never sealed still gets the end events.jsonl recorded.
#[test]
fn a_full_disk_fails_the_run_with_exit_4_and_a_sealed_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(fs) = Tmpfs::mount(&tmp.path().join("disk"), "48m") else {
        return;
    };
    let body = "[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiod_ms = 20\nduration_s = 30\n";
    let file = tmp.path().join("c.toml");
    std::fs::write(
        &file,
        campaign(body).replace(
            "confirm_node_swing = true",
            "confirm_node_swing = true\nramp_up = false",
        ),
    )
    .unwrap();
    let runs = fs.0.join("runs");
    let child = powerlab()
        .args([
            "run",
            file.to_str().unwrap(),
            "--backend",
            "sim",
            "--sim-gpus",
            "2",
        ])
        .args([
            "--sim-pace",
            "realtime",
            "--results",
            runs.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the duty rung runs, the rest of the disk is taken.
    let dir = loop {
        if let Some(d) = run_dirs(&runs).pop()
            && std::fs::read_to_string(d.join("events.jsonl"))
                .is_ok_and(|e| e.contains("\"rung_started\""))
        {
            break d;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // The manifest as sealed at the start, still `running`.
    let started = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let filler = fs.0.join("filler");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&filler).unwrap();
        let chunk = vec![1u8; 64 * 1024];
        while f.write_all(&chunk).is_ok() {}
        let mut small = vec![1u8; 512];
        while f.write_all(&small).is_ok() {}
        small.truncate(1);
        while f.write_all(&small).is_ok() {}
    }
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("disk"), "the message names the disk: {err}");
    assert!(
        !dir.join("manifest.json.tmp").exists(),
        "a manifest.json.tmp is left"
    );
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["status"]["state"], "failed", "{m}");
    let reason = m["status"]["reason"].as_str().unwrap();
    assert!(reason.contains("No space left"), "{reason}");
    std::fs::remove_file(&filler).unwrap();
    let report = collates(&dir);
    let first = report.lines().next().unwrap();
    assert!(
        first.contains("RUN FAILED") && first.contains("No space left"),
        "{first}"
    );
    // A manifest left `running` (sealing it failed too: the one sealed at
    // the start stays): the end that events.jsonl recorded is what the
    // report says, not "killed?".
    assert!(started.contains("running"), "{started}");
    std::fs::write(dir.join("manifest.json"), started).unwrap();
    let report = collates(&dir);
    let first = report.lines().next().unwrap();
    assert!(
        first.contains("RUN FAILED") && !first.contains("killed?"),
        "{first}"
    );
}

/// Issue 33 item 4: each GPU's power smoothing reaches the manifest and
/// report.md: "not supported" by default (as on an H200), and "on" with its
/// profile where a fault says, which the report's first line then notes.
#[test]
fn power_smoothing_is_recorded_in_the_manifest_and_the_report() {
    let r = run_sim(
        &campaign(DUTY),
        &[
            "--sim-gpus",
            "2",
            "--sim-fault",
            "gpu1:power_smoothing=on@1",
        ],
    );
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let m = manifest(&r);
    let gpus = &m["backend"]["gpus"];
    assert_eq!(gpus[0]["power_smoothing"]["state"], "not_supported");
    assert_eq!(gpus[0]["power_smoothing"]["code"], 3);
    assert_eq!(gpus[1]["power_smoothing"]["state"], "on");
    assert_eq!(gpus[1]["power_smoothing"]["profile"], 1);
    assert_eq!(gpus[1]["power_smoothing"]["ramp_up_w_per_s"], 1000.0);
    let report = collates(r.dir());
    assert!(
        report.contains("power smoothing: not supported (NVML return 3: NVML_ERROR_NOT_SUPPORTED)"),
        "{report}"
    );
    assert!(
        report.contains("power smoothing: on, profile 1: floor 60 % TMP, ramp up 1000 W/s, down 500 W/s, hysteresis 1000 ms"),
        "{report}"
    );
    let first = report.lines().next().unwrap();
    assert!(
        first.contains("POWER SMOOTHING ON (gpu1 profile 1)"),
        "{first}"
    );

    let plain = run_sim(&campaign(DUTY), &["--sim-gpus", "1"]);
    assert_eq!(plain.code(), 0, "{}", plain.stderr());
    let report = collates(plain.dir());
    assert!(!report.lines().next().unwrap().contains("POWER SMOOTHING"));
    assert!(
        report.contains("power smoothing: not supported (NVML"),
        "{report}"
    );
}
