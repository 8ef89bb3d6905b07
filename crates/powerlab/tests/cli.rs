#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! The command line's conventions (issue 18): `--version` says what was
//! built, enumerated flags list their values and refuse typos with clap's
//! usage code, `calibrate --help` shows the run options it takes, every
//! command that prints results has `--json`, and completions and a man page
//! come from the argument definitions.

use crate::util::*;

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../campaigns/demo.toml");

#[test]
fn version_names_the_revision_cuda_major_features_and_target() {
    let out = powerlab_output(["--version"]);
    assert_exit(&out, 0);
    let v = text(&out.stdout);
    assert!(v.starts_with("powerlab 0."), "{v}");
    for part in ["(git ", "CUDA 13", "features: ", "linux"] {
        assert!(v.contains(part), "--version lacks {part:?}: {v}");
    }
    assert!(!v.contains("git unknown"), "{v}");
    // -V says the same.
    let short = powerlab_output(["-V"]);
    assert_eq!(text(&short.stdout), v);
}

#[test]
fn enumerated_flags_list_their_values_and_refuse_a_typo_as_usage() {
    // -h: the short help lists each enum's values on one line.
    let help = text(&powerlab_output(["run", "-h"]).stdout);
    for values in [
        "mixed, gemm, hbm, mma",
        "bf16, fp16",
        "h200, b300, a10g",
        "virtual, realtime",
    ] {
        assert!(
            help.contains(values),
            "run --help lacks [{values}]:\n{help}"
        );
    }
    // The simulated node's flags are under their own heading, after the others.
    let heading = help.find("Simulated node (--backend sim):").expect(&help);
    assert!(help.find("--sim-gpus").unwrap() > heading);
    assert!(help.find("--virus").unwrap() < heading);
    let out = powerlab_output(["run", "x.toml", "--virus", "gemmm"]);
    assert_exit(&out, 2);
    assert!(text(&out.stderr).contains("possible values"));
}

#[test]
fn calibrate_help_shows_the_run_options_it_takes() {
    let help = text(&powerlab_output(["calibrate", "--help"]).stdout);
    for flag in ["--backend", "--results", "--sim-gpus", "--virus", "--json"] {
        assert!(
            help.contains(flag),
            "calibrate --help lacks {flag}:\n{help}"
        );
    }
    let out = powerlab_output(["calibrate", "--no-such-flag"]);
    assert_exit(&out, 2);
}

#[test]
fn validate_and_plan_speak_json() {
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("good.toml");
    std::fs::write(
        &good,
        campaign("[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiod_ms = 200\nduration_s = 4\n"),
    )
    .unwrap();
    let out = powerlab_output(["validate", "--json", good.to_str().unwrap()]);
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(v["ok"], true);
    assert!(v["phases"].as_u64().unwrap() >= 1, "{v}");

    let bad = tmp.path().join("bad.toml");
    std::fs::write(&bad, "name = 3\n").unwrap();
    let out = powerlab_output(["validate", "--json", bad.to_str().unwrap()]);
    assert_exit(&out, 1);
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(v["ok"], false);
    assert!(v["error"].as_str().unwrap().contains("bad.toml"), "{v}");

    let out = powerlab_output(["plan", "--json", good.to_str().unwrap()]);
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    // The disk the run needs, file by file (issue 31, defect 8).
    let disk = &v["disk"];
    assert!(
        disk["needed_bytes"].as_u64().unwrap()
            > disk["raw_bytes"].as_u64().unwrap() + disk["edges_bytes"].as_u64().unwrap(),
        "{disk}"
    );
    assert!(disk["edges_bytes"].as_u64().unwrap() > 0, "{disk}");
    let out = powerlab_output(["plan", good.to_str().unwrap()]);
    assert_exit(&out, 0);
    let t = text(&out.stdout);
    assert!(
        t.lines()
            .any(|l| l.starts_with("disk: the run directory needs about") && l.contains("edges")),
        "{t}"
    );
}

#[test]
fn collate_json_gives_the_rungs_of_the_summary() {
    let run = run_sim(
        &campaign("[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiod_ms = 200\nduration_s = 4\n"),
        &["--sim-gpus", "2"],
    );
    assert_eq!(run.code(), 0, "{}", run.stderr());
    let out = powerlab_output(["collate", "--json", run.dir().to_str().unwrap()]);
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    let rungs = v["rungs"].as_array().unwrap();
    assert_eq!(rungs.len(), run.summary().len());
    for (a, b) in rungs.iter().zip(run.summary()) {
        assert_eq!(a["label"], b["label"]);
        assert_eq!(a["mean_w"], b["mean_w"]);
    }
}

#[test]
fn completions_and_man_page_come_from_the_arguments() {
    for shell in ["bash", "zsh", "fish"] {
        let out = powerlab_output(["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let s = text(&out.stdout);
        for word in ["health-diff", "sim-gpus"] {
            assert!(s.contains(word), "{shell} completions lack {word}");
        }
    }
    let man = powerlab_output(["manpage"]);
    assert_exit(&man, 0);
    let m = text(&man.stdout);
    assert!(
        m.starts_with(".ie") || m.contains(".TH powerlab"),
        "{}",
        &m[..200.min(m.len())]
    );
    assert!(m.contains("health\\-diff") || m.contains("health-diff"));
}

#[test]
fn man_pages_for_every_subcommand_go_into_a_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let out = powerlab_output(["manpage", "--out-dir", tmp.path().to_str().unwrap()]);
    assert_exit(&out, 0);
    for page in [
        "powerlab",
        "powerlab-run",
        "powerlab-collate",
        "powerlab-health-diff",
        "powerlab-compare",
    ] {
        let roff = std::fs::read_to_string(tmp.path().join(format!("{page}.1"))).unwrap();
        assert!(roff.contains(".TH"), "{page}");
    }
    // The run page documents run's options; no page for hidden commands.
    let run = std::fs::read_to_string(tmp.path().join("powerlab-run.1")).unwrap();
    assert!(run.contains("sim\\-gpus") || run.contains("sim-gpus"));
    assert!(!tmp.path().join("powerlab-completions.1").exists());
    // The main page states the exit codes.
    let main = std::fs::read_to_string(tmp.path().join("powerlab.1")).unwrap();
    assert!(main.contains("143"), "exit codes missing from the man page");
}

#[test]
fn arguments_that_cannot_mean_anything_are_usage_errors() {
    for args in [
        vec!["observe", "--seconds", "-1"],
        vec!["observe", "--seconds", "nan"],
        vec!["observe", "--interval-ms", "0"],
        vec!["preflight", "--stem", "../../escape"],
        vec!["preflight", "--stem", ""],
        vec!["calibrate", "--backend", "sim", "--sensor", "x.json"],
        vec!["calibrate", "--backend", "sim", "--no-collate"],
        vec!["run", DEMO, "--backend", "sim", "--sim-step-us", "7"],
        vec![
            "run",
            DEMO,
            "--backend",
            "sim",
            "--sim-fault",
            "gpu99:lost_at=1s",
        ],
    ] {
        let out = powerlab_output(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn an_option_of_the_other_backend_is_a_usage_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("runs");
    let cases: [(&[&str], &str); 5] = [
        (&["--sim-gpus", "2"], "--sim-gpus"),
        (&["--sim-fault", "gpu0:lost_at=1s"], "--sim-fault"),
        (&["--sim-truth"], "--sim-truth"),
        (&["--backend", "sim", "--virus", "gemm"], "--virus"),
        (
            &["--backend", "sim", "--gemm-dtype", "fp16"],
            "--gemm-dtype",
        ),
    ];
    for (args, flag) in cases {
        for cmd in [&["run", DEMO][..], &["calibrate"][..]] {
            let out = capture(
                powerlab()
                    .args(cmd)
                    .args(args)
                    .args(["--results", results.to_str().unwrap()]),
            );
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{cmd:?} {args:?}: {err}");
            assert!(err.contains(flag), "{args:?} must name {flag}: {err}");
            assert!(
                err.contains("simulated node") && !err.contains("invalid value"),
                "{args:?}: the backend, not the value, is refused: {err}"
            );
        }
    }
    assert!(!results.exists(), "nothing ran");
}

#[test]
fn observe_without_nvml_does_not_suggest_the_simulated_node_it_refuses() {
    // observe has no simulated node: `--backend sim` is a usage error.
    let sim = powerlab_output(["observe", "--seconds", "0.1", "--backend", "sim"]);
    assert_eq!(sim.status.code(), Some(2), "{}", text(&sim.stderr));
    let out = powerlab_output(["observe", "--seconds", "0.1"]);
    let err = text(&out.stderr);
    if err.contains("NVML could not be initialised") {
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(!err.contains("--backend sim"), "{err}");
        assert!(err.contains("real GPUs only"), "{err}");
    } else {
        // A machine with NVML: observe ran.
        assert!(out.status.success(), "{err}");
    }
}
