#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Damaged raw files (cut short, missing, copied, rescaled, unlisted, a
//! damaged index, rows appended, a gzip copy beside the file): named, and
//! never silent figures.

use crate::util::fixtures::*;
use crate::util::*;
use std::process::Command;

fn rungs_of(dir: &std::path::Path) -> Vec<serde_json::Value> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report/summary.json")).unwrap())
            .unwrap();
    v["rungs"].as_array().unwrap().clone()
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
        text(&out.stderr).contains("gpu2.csv") && text(&out.stderr).contains("another unit"),
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
