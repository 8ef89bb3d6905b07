#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Where output goes: a results root inside a run directory, one that
//! cannot be written or is too small, `compare --out` inside a run's
//! `report/`, and a closed or full stdout.

use crate::util::fixtures::*;
use crate::util::*;
use std::process::Stdio;

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
