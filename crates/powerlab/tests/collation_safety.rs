#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! A collation never loses a report or reads a live run: it is exclusive,
//! its lock files go with their holders, Ctrl-C in the middle keeps the
//! previous report whole, and a `report` that is a file is replaced without
//! leftovers.

use crate::util::fixtures::*;
use crate::util::*;
use std::process::{Command, Stdio};
use std::time::Duration;

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
