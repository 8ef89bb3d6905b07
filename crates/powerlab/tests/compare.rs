#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! `powerlab compare A B` (issue 15): a known difference injected into one
//! simulated run is found, and nothing else; two clean runs of different
//! seeds differ by noise only; rungs of one run only are listed; a run
//! that failed is said first and its missing figures are not compared; a
//! stale report is refused by name; the idle health captures are diffed.

use crate::util::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Idle, sustained, and an in-phase and a staggered duty rung, twice each.
const RUNGS: &str = "[[phase]]\nkind = \"idle\"\nduration_s = 3\n\
[[phase]]\nkind = \"sustained\"\nduration_s = 6\n\
[[phase]]\nkind = \"duty\"\nname = \"sweep\"\nperiods_ms = [1000]\nduration_s = 6\nmodes = [\"in_phase\", \"staggered\"]\n";

const LOADED: [&str; 3] = [
    "sustained-1",
    "sweep/p1000ms/in_phase",
    "sweep/p1000ms/staggered",
];

fn sim(extra: &[&str]) -> Run {
    let mut args = vec!["--sim-gpus", "4", "--repeats", "2"];
    args.extend_from_slice(extra);
    let r = run_sim(&campaign(RUNGS), &args);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    r
}

/// `compare A B`'s Markdown on stdout.
fn markdown(a: &Path, b: &Path) -> String {
    let out = powerlab_output(["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    text(&out.stdout)
}

/// Runs `compare A B --json` with extra arguments: (exit code, JSON, stderr).
fn compare(a: &Path, b: &Path, extra: &[&str]) -> (i32, Option<Value>, String) {
    let out = capture(
        powerlab()
            .args([
                "compare",
                a.to_str().unwrap(),
                b.to_str().unwrap(),
                "--json",
            ])
            .args(extra),
    );
    let json = serde_json::from_slice(&out.stdout).ok();
    (out.status.code().unwrap_or(-1), json, text(&out.stderr))
}

/// (rung, figure) of every flagged node figure.
fn node_flags(c: &Value) -> Vec<(String, String)> {
    let mut v = Vec::new();
    for r in c["rungs"].as_array().unwrap() {
        for f in r["figures"].as_array().unwrap() {
            if f["regression"] == true {
                v.push((
                    r["label"].as_str().unwrap().to_string(),
                    f["figure"].as_str().unwrap().to_string(),
                ));
            }
        }
    }
    v
}

/// (rung, GPU of A) of every flagged GPU row.
fn gpu_flags(c: &Value) -> Vec<(String, String)> {
    c["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| {
            g["figures"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f["regression"] == true)
        })
        .map(|g| {
            (
                g["label"].as_str().unwrap().to_string(),
                g["gpu_a"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn figure<'a>(c: &'a Value, rung: &str, fig: &str) -> &'a Value {
    c["rungs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == rung)
        .unwrap_or_else(|| panic!("no rung {rung}"))["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["figure"] == fig)
        .unwrap()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn a_gpu_held_to_a_lower_limit_is_found_and_nothing_else() {
    let clean = sim(&[]);
    let faulty = sim(&["--sim-fault", "gpu2:power_limit_w=500"]);
    let (code, c, err) = compare(clean.dir(), faulty.dir(), &[]);
    let c = c.unwrap_or_else(|| panic!("no JSON; stderr: {err}"));
    assert_eq!(code, 1, "a regression exits 1: {err}");
    assert!(c["warnings"].as_array().unwrap().is_empty(), "{c:#}");
    // Same seed: the same GPUs, compared with themselves.
    assert_eq!(c["gpu_matching"]["by"], "uuid");
    assert!(c["unmatched_rungs"].as_array().unwrap().is_empty());

    // Per GPU: gpu2 in every loaded rung, no other GPU, never idle.
    let mut flagged = gpu_flags(&c);
    flagged.sort();
    let want: Vec<(String, String)> = LOADED
        .iter()
        .map(|l| (l.to_string(), "gpu2".to_string()))
        .collect();
    assert_eq!(flagged, want);
    // Its sustained mean is held at the 500 W limit: ~200 W below its
    // unlimited draw, which is near the 700 W default limit.
    let g2 = c["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["label"] == "sustained-1" && g["gpu_a"] == "gpu2")
        .unwrap();
    let mean = &g2["figures"][0];
    assert!((f(&mean["b_w"]) - 500.0).abs() < 15.0, "{g2}");
    assert!(f(&mean["a_w"]) > 650.0, "{g2}");

    // The node: idle is untouched; each loaded rung's mean moves by what
    // its GPUs' means moved (the sum of the per-GPU deltas), and is flagged.
    let flags = node_flags(&c);
    assert!(
        !flags.iter().any(|(r, _)| r.starts_with("idle")),
        "{flags:?}"
    );
    for rung in LOADED {
        assert!(
            flags.contains(&(rung.to_string(), "mean".to_string())),
            "{rung}: {flags:?}"
        );
        let gpu_sum: f64 = c["gpus"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| g["label"] == rung)
            .map(|g| f(&g["figures"][0]["delta_w"]))
            .sum();
        let node = f(&figure(&c, rung, "mean")["delta_w"]);
        assert!(
            (node - gpu_sum).abs() < 0.02 * gpu_sum.abs(),
            "{rung}: node {node} W, GPUs {gpu_sum} W"
        );
        assert!(node < -100.0, "{rung}: {node}");
    }
    // The sustained node mean drops by one GPU's 700 → 500 W: −7 % of ~2.8 kW.
    let s = figure(&c, "sustained-1", "mean");
    assert!((f(&s["delta_pct"]) + 7.1).abs() < 1.0, "{s}");
    // Every flagged node figure is a judged one, and beyond its interval.
    for (rung, fig) in &flags {
        let x = figure(&c, rung, fig);
        assert_eq!(x["judged"], true);
        assert!(f(&x["delta_pct"]).abs() > 3.0, "{x}");
        assert!(f(&x["delta_w"]).abs() > f(&x["ci95_w"]), "{x}");
        assert!(fig != "spread", "spread is never judged");
    }
    // Node figures within the threshold are not flagged (the duty peaks
    // move by less than 3 % here: the other GPUs still reach their peak).
    for (rung, fig) in [
        ("sweep/p1000ms/in_phase", "peak"),
        ("sweep/p1000ms/staggered", "peak"),
    ] {
        let x = figure(&c, rung, fig);
        assert_eq!(
            x["regression"] == true,
            f(&x["delta_pct"]).abs() > 3.0 && f(&x["delta_w"]).abs() > f(&x["ci95_w"]),
            "{x}"
        );
    }
    let total = flags.len() + gpu_flags(&c).len();
    assert_eq!(c["regressions"].as_u64(), Some(total as u64));

    // The files: CSV, JSON and Markdown, the Markdown naming the flags.
    let out = tempfile::tempdir().unwrap();
    let o = powerlab_output([
        "compare",
        clean.dir().to_str().unwrap(),
        faulty.dir().to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_exit(&o, 1);
    let md = std::fs::read_to_string(out.path().join("compare.md")).unwrap();
    assert!(
        md.contains(&format!(
            "**Verdict: REGRESSION** — {total} figure(s) changed beyond 3 %, in 3 node rung(s) and 3 GPU-rung(s)."
        )),
        "{md}"
    );
    assert!(md.contains("GPUs matched by **uuid**"), "{md}");
    assert!(md.contains("| sustained-1 | gpu2 | 2/2 |"), "{md}");
    let rows = csv_rows(&out.path().join("compare.csv"));
    assert_eq!(
        rows.iter().filter(|r| r["regression"] == "true").count(),
        total
    );
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("compare.json")).unwrap())
            .unwrap();
    assert_eq!(json["regressions"].as_u64(), Some(total as u64));
    println!("{md}");
}

#[test]
fn two_clean_runs_differ_by_noise_only() {
    let a = sim(&[]);
    let b = sim(&["--seed", "2"]);
    let (code, c, err) = compare(a.dir(), b.dir(), &[]);
    let c = c.unwrap_or_else(|| panic!("no JSON; stderr: {err}"));
    assert_eq!(code, 0, "{c:#}");
    assert_eq!(c["regressions"], 0, "{c:#}");
    assert!(node_flags(&c).is_empty() && gpu_flags(&c).is_empty());
    // Another seed: other UUIDs, so the GPUs are paired by position.
    assert_eq!(c["gpu_matching"]["by"], "position");
    let pairs = c["gpu_matching"]["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 4);
    assert!(pairs.iter().all(|p| p["uuid_a"] != p["uuid_b"]));
    // Noise is there (the runs are not identical), and every judged
    // figure has an interval from the two repeats.
    assert!(
        c["rungs"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["figures"].as_array().unwrap())
            .any(|f| f["delta_w"].as_f64().unwrap() != 0.0)
    );
    // (The idle before any context and the ramp-up steps run once.)
    for r in c["rungs"].as_array().unwrap() {
        let once = r["label"].as_str().unwrap().ends_with("/no-context")
            || r["label"].as_str().unwrap().starts_with("rampup/");
        for x in r["figures"].as_array().unwrap() {
            assert_eq!(x["ci95_w"].is_number(), !once, "{x}");
        }
    }
    assert_eq!(c["rungs"].as_array().unwrap().len(), 7);
}

#[test]
fn different_campaigns_and_gpu_counts_are_said_and_unmatched_rungs_listed() {
    let a = sim(&[]);
    let other = "[campaign]\nname = \"u\"\nconfirm_node_swing = true\n[defaults]\nwarmup_s = 1\ncooldown_s = 1\n\
[[phase]]\nkind = \"idle\"\nduration_s = 3\n[[phase]]\nkind = \"sustained\"\nduration_s = 6\n";
    let b = run_sim(other, &["--sim-gpus", "2"]);
    assert_eq!(b.code(), 0, "{}", b.stderr());
    let (_, c, err) = compare(a.dir(), b.dir(), &[]);
    let c = c.unwrap_or_else(|| panic!("no JSON; stderr: {err}"));
    let w: Vec<&str> = c["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert!(
        w.iter().any(|x| x.starts_with("DIFFERENT CAMPAIGNS")),
        "{w:?}"
    );
    assert!(
        w.iter().any(|x| x.starts_with("DIFFERENT GPU COUNTS")),
        "{w:?}"
    );
    let unmatched: Vec<(&str, &str)> = c["unmatched_rungs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| (u["label"].as_str().unwrap(), u["only_in"].as_str().unwrap()))
        .collect();
    assert_eq!(
        unmatched,
        vec![
            ("rampup/1of4/p1000ms", "A"),
            ("rampup/2of4/p1000ms", "A"),
            ("sweep/p1000ms/in_phase", "A"),
            ("sweep/p1000ms/staggered", "A")
        ]
    );
    // Same seed: B's 2 GPUs are A's first two (same UUIDs), compared with
    // themselves; A's other two have no partner.
    assert_eq!(c["gpu_matching"]["by"], "uuid");
    let lone: Vec<&str> = c["gpu_matching"]["unmatched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert_eq!(lone.len(), 2, "{lone:?}");
    assert!(lone[0].starts_with("A gpu2 (GPU-") && lone[1].starts_with("A gpu3 (GPU-"));
    let paired: Vec<&str> = c["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["gpu_b"].as_str().unwrap())
        .collect();
    assert!(
        paired.iter().all(|g| *g == "gpu0" || *g == "gpu1"),
        "{paired:?}"
    );
    // The Markdown says so at the top, before any table.
    let md = markdown(a.dir(), b.dir());
    let top = md.split("## Node").next().unwrap();
    assert!(top.contains("⚠ DIFFERENT CAMPAIGNS"), "{md}");
    assert!(md.contains("`sweep/p1000ms/staggered`: only in A"), "{md}");
}

#[test]
fn a_stale_report_is_refused_and_the_health_captures_are_diffed() {
    let a = sim(&["--no-collate"]);
    let b = sim(&["--no-collate"]);
    let health = |driver: &str, ecc: &str| {
        serde_json::json!({"facts": {"driver": driver}, "checks": [{"id": "ecc", "status": ecc}]})
            .to_string()
    };
    std::fs::write(a.dir().join("health.json"), health("550.54", "pass")).unwrap();
    std::fs::write(b.dir().join("health.json"), health("560.28", "fail")).unwrap();
    let (code, c, err) = compare(a.dir(), b.dir(), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(c.is_none());
    assert!(
        err.contains("not up to date") && err.contains("powerlab collate"),
        "{err}"
    );
    let (code, c, err) = compare(a.dir(), b.dir(), &["--collate"]);
    let c = c.unwrap_or_else(|| panic!("no JSON; stderr: {err}"));
    assert_eq!(code, 0, "{c:#}");
    let lines: Vec<&str> = c["health"]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert_eq!(
        lines,
        vec![
            "driver: \"550.54\" -> \"560.28\"",
            "check ecc: pass -> fail"
        ]
    );
    assert!(
        c["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().starts_with("A was collated now")),
        "{c:#}"
    );
    // Health differences alone are no regression (the run is the same).
    assert_eq!(c["regressions"], 0);
}

#[test]
fn a_run_that_failed_is_said_first_and_its_missing_figures_are_not_compared() {
    let a = sim(&[]);
    let b = run_sim(
        &campaign(RUNGS),
        &[
            "--sim-gpus",
            "4",
            "--repeats",
            "2",
            "--sim-fault",
            // Inside the first in-phase sweep rung's window (after the
            // idle before any context, 2 × idle, 2 × sustained and two
            // ramp-up steps).
            "gpu1:lost_at=53s",
        ],
    );
    assert_eq!(b.code(), 4, "{}", b.stderr());
    let (code, c, err) = compare(a.dir(), b.dir(), &["--collate"]);
    let c = c.unwrap_or_else(|| panic!("no JSON; stderr: {err}"));
    let w = c["warnings"][0].as_str().unwrap();
    assert!(
        w.starts_with("B DID NOT COMPLETE (failed:") && w.contains("GPU_IS_LOST"),
        "{c:#}"
    );
    // The rungs it never started are listed, not dropped.
    let unmatched: Vec<&str> = c["unmatched_rungs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["label"].as_str().unwrap())
        .collect();
    assert!(unmatched.contains(&"sweep/p1000ms/staggered"), "{c:#}");
    // The rung it died in has no figure in B: not compared, never a
    // regression, and marked as from incomplete data.
    let cut = c["rungs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["incomplete_data"] == true)
        .unwrap_or_else(|| panic!("no rung marked incomplete: {c:#}"));
    let missing: Vec<&Value> = cut["figures"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["b_w"].is_null())
        .collect();
    assert!(!missing.is_empty(), "{cut:#}");
    for x in missing {
        assert_eq!(x["interval"], "no figure in B", "{x}");
        assert!(x["delta_w"].is_null(), "{x}");
        assert_eq!(x["regression"], false, "{x}");
    }
    assert_eq!(code, 0, "nothing comparable changed: {c:#}");
    let md = markdown(a.dir(), b.dir());
    let top = md.split("## Node").next().unwrap();
    assert!(top.contains("⚠ B DID NOT COMPLETE"), "{md}");
    assert!(top.contains("Not compared: "), "{md}");
    assert!(md.contains("⚠ incomplete data"), "{md}");
}

#[test]
fn a_hand_edited_per_gpu_table_is_refused() {
    let a = sim(&[]);
    let b = sim(&[]);
    // One GPU's mean edited by hand: compare would report it as a regression.
    let path = b.dir().join("report/per_gpu.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let header: Vec<&str> = lines[0].split(',').collect();
    let col = header.iter().position(|h| *h == "mean_w").unwrap();
    let row = lines
        .iter()
        .position(|l| l.contains(",sustained-1/r1,gpu1,"))
        .unwrap();
    let mut cells: Vec<String> = lines[row].split(',').map(str::to_string).collect();
    cells[col] = "400.0".into();
    lines[row] = cells.join(",");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let (code, c, err) = compare(a.dir(), b.dir(), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(c.is_none(), "{c:?}");
    assert!(
        err.contains("not up to date") && err.contains("per_gpu.csv"),
        "{err}"
    );
}

#[test]
fn a_run_compared_with_itself_is_said_to_be_the_same_run() {
    let a = sim(&[]);
    let (code, c, err) = compare(a.dir(), a.dir(), &[]);
    let c = c.unwrap_or_else(|| panic!("no JSON; stderr: {err}"));
    assert_eq!(code, 0, "{c:#}");
    assert!(
        c["warnings"][0]
            .as_str()
            .unwrap()
            .starts_with("THE SAME RUN: "),
        "{c:#}"
    );
    assert_eq!(c["regressions"], 0);
}

/// Issue 31, defect 11: a candidate with no rung in common with the
/// baseline said "no regression … in 0 matched rung(s)" and exited 0, so a
/// CI gate passed an empty candidate. Nothing to compare is exit 2.
#[test]
fn a_candidate_with_no_matched_rung_cannot_be_compared() {
    let short = "[[phase]]\nkind = \"sustained\"\nname = \"s\"\nduration_s = 3\n";
    let a = run_sim(&campaign(short), &["--sim-gpus", "2"]);
    assert_eq!(a.code(), 0, "{}", a.stderr());
    let b = run_sim(
        &campaign(&short.replace("name = \"s\"", "name = \"other\"")),
        &["--sim-gpus", "2"],
    );
    assert_eq!(b.code(), 0, "{}", b.stderr());
    let (code, _, err) = compare(a.dir(), b.dir(), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("cannot compare") && err.contains("no rung"),
        "{err}"
    );
}

/// Hostile review of issue 31: two runs of one repeat on the same node
/// (seeds 3 and 4) flagged a staggered swing of +4.5 % as a REGRESSION with
/// "no interval (1 repeat)", while each run's own interval was about
/// ±33 W. The runs' own intervals now bound a one-repeat difference.
#[test]
fn one_repeat_a_side_is_judged_against_the_runs_own_intervals() {
    let one = |seed: &str| {
        let r = run_sim(
            &campaign(RUNGS),
            &["--sim-gpus", "2", "--repeats", "1", "--seed", seed],
        );
        assert_eq!(r.code(), 0, "{}", r.stderr());
        r
    };
    let (a, b) = (one("3"), one("4"));
    let (code, c, err) = compare(a.dir(), b.dir(), &[]);
    let c = c.unwrap_or_else(|| panic!("no JSON; stderr: {err}"));
    assert_eq!(c["regressions"], 0, "{c:#}");
    assert_eq!(code, 0, "{c:#}");
    for label in ["sweep/p1000ms/in_phase", "sweep/p1000ms/staggered"] {
        let swing = figure(&c, label, "swing");
        assert!(swing["ci95_w"].is_number(), "{swing}");
        assert!(
            swing["interval"].as_str().unwrap().contains("runs' own"),
            "{swing}"
        );
    }
}

/// Issue 45, lesser item 7: `compare` called a `cp -r` copy of a run stale
/// (its files' modification times moved). Freshness is now the files'
/// content: the copy is up to date; the same copy with one raw byte
/// changed (size and all else kept) is stale, naming the file.
#[test]
fn a_copy_of_a_run_is_up_to_date_and_a_changed_raw_file_is_stale() {
    let a = sim(&[]);
    let copy = a.results.path().join("copy");
    let cp =
        capture(Command::new("cp").args(["-r", a.dir().to_str().unwrap(), copy.to_str().unwrap()]));
    assert_exit(&cp, 0);
    let (code, c, err) = compare(a.dir(), &copy, &[]);
    assert_eq!(code, 0, "{err}");
    let c = c.unwrap_or_else(|| panic!("no JSON; stderr: {err}"));
    assert_eq!(c["regressions"], 0, "{c:#}");
    // One byte of a raw file, its size kept.
    let mut raw: Vec<_> = std::fs::read_dir(copy.join("raw"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.to_string_lossy().ends_with(".idx"))
        .collect();
    raw.sort();
    let mut bytes = std::fs::read(&raw[0]).unwrap();
    let k = bytes.len() / 2;
    bytes[k] = if bytes[k] == b'7' { b'8' } else { b'7' };
    std::fs::write(&raw[0], &bytes).unwrap();
    let (code, _, err) = compare(a.dir(), &copy, &[]);
    assert_eq!(code, 2, "{err}");
    let name = raw[0].strip_prefix(&copy).unwrap().display().to_string();
    assert!(
        err.contains("not up to date")
            && err.contains(&format!("{name} changed since its collation")),
        "{err}"
    );
}
