#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! A finished run directory edited after the run: its manifest changed
//! (checksums, seal, limits, backend, GPUs, format), a node-power file
//! added, files that are links, names that would inject markup into the
//! reports.

use crate::util::fixtures::*;
use crate::util::*;

fn edit_manifest(d: &std::path::Path, f: impl Fn(&mut serde_json::Value)) {
    let p = d.join("manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    f(&mut m);
    std::fs::write(&p, serde_json::to_string_pretty(&m).unwrap() + "\n").unwrap();
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
/// (what docs/run-directory.md says the check cannot catch): the collated report.md
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
