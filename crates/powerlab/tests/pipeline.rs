#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! End-to-end properties of run + collate on the simulated node.

use crate::util::*;
use std::collections::BTreeMap;

fn hash_tree(dir: &std::path::Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(dir).unwrap().display().to_string(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

const SWEEP: &str = "[[phase]]\nkind = \"idle\"\nduration_s = 2\n[[phase]]\nkind = \"duty\"\nname = \"sweep\"\nperiods_ms = [1000, 100]\nduration_s = 6\nmodes = [\"in_phase\", \"staggered\"]\nrepeats = 2\n";

#[test]
fn collate_regenerates_every_output_identically_from_raw_files() {
    let r = run_sim(&campaign(SWEEP), &["--sim-gpus", "4"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let report = r.dir().join("report");
    let before = hash_tree(&report);
    assert!(
        before.keys().any(|k| k.ends_with(".png")) && before.keys().any(|k| k.ends_with(".svg")),
        "{:?}",
        before.keys()
    );
    assert!(
        before.contains_key("report.md")
            && before.contains_key("summary.csv")
            && before.contains_key("in_phase_vs_staggered.csv")
    );
    std::fs::remove_dir_all(&report).unwrap();
    let out = powerlab_output(["collate", r.dir().to_str().unwrap()]);
    assert_exit(&out, 0);
    let after = hash_tree(&report);
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    for (k, v) in &before {
        assert!(after[k] == *v, "{k} differs after regeneration");
    }
}

#[test]
fn in_phase_and_staggered_have_the_same_mean_and_staggered_less_spread() {
    let r = run_sim(&campaign(SWEEP), &["--sim-gpus", "4"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let text = std::fs::read_to_string(r.dir().join("report/in_phase_vs_staggered.csv")).unwrap();
    let mut rdr = csv::Reader::from_reader(text.as_bytes());
    let rows: Vec<BTreeMap<String, String>> = rdr.deserialize().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 2);
    for row in rows {
        let f = |k: &str| row[k].parse::<f64>().unwrap();
        assert_eq!(row["n"], "2/2");
        assert!(
            f("delta_mean_w").abs() < 0.03 * f("in_phase_mean_w"),
            "{row:?}"
        );
        assert!(
            f("delta_spread_w") < -500.0,
            "staggering 4 GPUs evenly cancels most of the swing: {row:?}"
        );
        assert!(f("delta_peak_w") < 0.0, "{row:?}");
    }
    let repeats = std::fs::read_to_string(r.dir().join("report/repeats.csv")).unwrap();
    assert!(repeats.lines().next().unwrap().contains("mean_w_ci95"));
}

#[test]
fn raw_rows_carry_absolute_time_and_node_and_lose_no_buffered_sample() {
    let c = campaign("[[phase]]\nkind = \"sustained\"\nduration_s = 5\n");
    let r = run_sim(&c, &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(r.dir().join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["status"]["state"], "complete");
    assert_eq!(manifest["backend"]["backend"], "sim");
    let uuids: Vec<&str> = manifest["backend"]["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["uuid"].as_str().unwrap())
        .collect();
    assert!(uuids.iter().all(|u| u.starts_with("GPU-")));
    for key in ["gpu0", "gpu1"] {
        let text = std::fs::read_to_string(r.dir().join(format!("raw/{key}.csv"))).unwrap();
        let mut ts = Vec::new();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            assert_eq!(f.len(), 5, "{line}");
            let t: i64 = f[0].parse().unwrap();
            assert!(
                (EPOCH..EPOCH + 600_000_000_000).contains(&t),
                "absolute epoch time: {t}"
            );
            assert_eq!((f[1], f[2]), ("sim-node-0", key));
            if f[3] == "buffered_w" {
                ts.push(t);
            }
        }
        // Every reading the simulated driver took is in the file: one per
        // 20 ms grid point, less the ones the driver itself dropped (a gap
        // of two grid steps, 44–47 ms on the H200); readings land up to
        // ~3 ms off their grid point, a few further.
        let span = (ts[ts.len() - 1] - ts[0]) as f64 / 20e6;
        let gaps: Vec<i64> = ts.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(
            gaps.iter().all(|g| *g > 0 && *g < 52_000_000),
            "no gap beyond the driver's own: {gaps:?}"
        );
        let dropped: f64 = gaps.iter().map(|g| (*g as f64 / 20e6).round() - 1.0).sum();
        assert!(
            (ts.len() as f64 - 1.0 + dropped - span).abs() < 1.0,
            "{} buffered samples, {dropped} dropped by the driver, over {span} periods",
            ts.len()
        );
        let on_grid = gaps
            .iter()
            .filter(|g| (**g - 20_000_000).abs() <= 3_500_000)
            .count();
        assert!(
            on_grid * 10 >= gaps.len() * 9,
            "{on_grid} of {} spacings near 20 ms",
            gaps.len()
        );
    }
}

#[test]
fn same_seed_same_numbers_other_seed_other_noise() {
    let c = campaign("[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiod_ms = 100\nduration_s = 2\n");
    let a = run_sim(&c, &["--sim-gpus", "2", "--seed", "7"]);
    let b = run_sim(&c, &["--sim-gpus", "2", "--seed", "7"]);
    let d = run_sim(&c, &["--sim-gpus", "2", "--seed", "8"]);
    let read = |r: &Run| std::fs::read_to_string(r.dir().join("report/summary.csv")).unwrap();
    assert_eq!(read(&a), read(&b));
    assert_ne!(read(&a), read(&d));
}

#[test]
fn json_mode_prints_one_event_per_line() {
    let c = campaign("[[phase]]\nkind = \"sustained\"\nduration_s = 2\n");
    let r = run_sim(&c, &["--sim-gpus", "2", "--json"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let lines: Vec<serde_json::Value> = r
        .stdout()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    assert!(lines.iter().any(|v| v["event"] == "rung_started"));
    assert!(lines.iter().any(|v| v["event"] == "progress"));
    assert_eq!(lines.last().unwrap()["event"], "run_ended");
}

#[test]
fn without_backend_flag_it_never_falls_back_to_the_simulated_node() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("c.toml");
    std::fs::write(
        &file,
        campaign("[[phase]]\nkind = \"sustained\"\nduration_s = 2\n"),
    )
    .unwrap();
    let out = powerlab_output([
        "run",
        file.to_str().unwrap(),
        "--results",
        tmp.path().join("r").to_str().unwrap(),
    ]);
    let err = text(&out.stderr);
    // On this CI machine there is no NVIDIA driver: a clear error, no simulated numbers.
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("GPU") || err.contains("NVML"), "{err}");
    for d in run_dirs(&tmp.path().join("r")) {
        let m = std::fs::read_to_string(d.join("manifest.json")).unwrap_or_default();
        assert!(
            !m.contains("\"backend\": \"sim\""),
            "a simulated run was produced without --backend sim"
        );
    }
}

#[test]
fn validate_and_plan_from_the_command_line() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.toml");
    std::fs::write(&bad, "[campaign]\nname = \"x\"\n[[phase]]\nkind = \"duty\"\nperiod_ms = 100\nduty = 2\nduration_s = 1\n").unwrap();
    let out = powerlab_output(["validate", bad.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("bad.toml:6:8: field `phase[0].duty`"), "{err}");
    let demo = concat!(env!("CARGO_MANIFEST_DIR"), "/../../campaigns/node-r3.toml");
    let out = powerlab_output(["plan", demo, "--repeats", "1"]);
    let text = text(&out.stdout);
    assert_exit(&out, 0);
    assert!(text.contains("sweep/p20ms/staggered"), "{text}");
    assert!(
        text.lines().last().unwrap().starts_with("total: "),
        "{text}"
    );
    // "all" without --gpus: the plan says which count it assumed.
    assert!(
        text.lines()
            .nth(1)
            .unwrap()
            .contains("is planned for 8 GPUs here"),
        "{text}"
    );
    let out = powerlab_output(["plan", demo, "--repeats", "1", "--gpus", "2"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("campaign `") && text.contains("on 2 GPU(s)"),
        "{text}"
    );
    assert!(!text.contains("planned for"), "{text}");
    // --json says whether the count was assumed.
    for (args, assumed) in [(&[][..], true), (&["--gpus", "2"][..], false)] {
        let out = capture(powerlab().args(["plan", demo, "--json"]).args(args));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["gpu_count_assumed"], assumed, "{args:?}");
    }
}

/// A collation that fails (here: a damaged edges.csv) keeps the previous
/// report whole, and leaves no half-written one behind.
#[test]
fn a_failed_collate_keeps_the_previous_report() {
    let c = campaign("[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiod_ms = 500\nduration_s = 4\n");
    let r = run_sim(&c, &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let before = std::fs::read(r.dir().join("report/summary.csv")).unwrap();
    let edges = r.dir().join("edges.csv");
    let text = std::fs::read_to_string(&edges).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[3] = "0,gpu0,3,fall,abc,123".into();
    std::fs::write(&edges, lines.join("\n") + "\n").unwrap();
    let out = powerlab_output(["collate", r.dir().to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("edges.csv"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(r.dir().join("report/summary.csv")).unwrap(),
        before,
        "the previous report is kept"
    );
    assert!(
        r.dir().join("report/report.md").is_file()
            && r.dir().join("report/plots").read_dir().unwrap().count() > 0
    );
    let leftovers: Vec<_> = std::fs::read_dir(r.dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("report."))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// Issue 19 case 3: the same seed gives byte-identical summaries, reports
/// and plots, whatever the wall-clock start (here two starts 3.7 ms and
/// 41 s apart, off every grid). Only timestamps stated as such differ.
#[test]
fn the_same_seed_gives_identical_outputs_whatever_the_start_time() {
    let c = campaign(
        "[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiods_ms = [500, 100]\nmodes = [\"in_phase\", \"staggered\"]\nduration_s = 4\n[[phase]]\nkind = \"sustained\"\nname = \"s\"\nduration_s = 2\n",
    );
    let starts = [EPOCH, EPOCH + 3_700_001, EPOCH + 41_013_456_789];
    let runs: Vec<Run> = starts
        .iter()
        .map(|e| run_sim_at(&c, *e, &["--sim-gpus", "3", "--seed", "5"]))
        .collect();
    let mut compared = 0;
    for name in [
        "summary.csv",
        "summary.json",
        "repeats.csv",
        "in_phase_vs_staggered.csv",
        "envelope.csv",
        "grid.csv",
        "sensor_rungs.csv",
        "sensor_periods.csv",
        "spectrum.csv",
    ] {
        let files: Vec<Option<Vec<u8>>> = runs
            .iter()
            .map(|r| std::fs::read(r.dir().join("report").join(name)).ok())
            .collect();
        if files[0].is_none() {
            continue;
        }
        compared += 1;
        for (i, f) in files.iter().enumerate().skip(1) {
            assert!(
                f == &files[0],
                "{name} differs between starts {} and {}",
                starts[0],
                starts[i]
            );
        }
    }
    assert!(compared >= 5, "summary files were compared");
    // The report differs only in lines that state a time.
    let report: Vec<String> = runs
        .iter()
        .map(|r| std::fs::read_to_string(r.dir().join("report/report.md")).unwrap())
        .collect();
    for (i, other) in report.iter().enumerate().skip(1) {
        let differing: Vec<(&str, &str)> = report[0]
            .lines()
            .zip(other.lines())
            .filter(|(a, b)| a != b)
            .collect();
        assert_eq!(report[0].lines().count(), other.lines().count());
        for (a, b) in &differing {
            assert!(
                a.contains("UTC") || a.contains("started"),
                "report line differs between starts {} and {}:\n{a}\n{b}",
                starts[0],
                starts[i]
            );
        }
    }
    let plots = |r: &Run| {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(r.dir().join("report/plots"))
            .unwrap()
            .flatten()
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let p0 = plots(&runs[0]);
    assert!(!p0.is_empty());
    for r in &runs[1..] {
        for ((na, a), (nb, b)) in p0.iter().zip(plots(r).iter()) {
            assert_eq!(na, nb);
            assert!(a == b, "plot {na} differs between starts");
        }
    }
}

/// Issue 33 item 6: the verdict before the words. The swing and the
/// envelope plots are written and linked right under the title, above
/// "## The answer", in `report.md` and `report.html`; with `[grid]` and
/// `[supply]` they draw the limits, without them they say none is declared.
#[test]
fn the_verdict_plots_come_before_the_answer_with_and_without_limits() {
    const PHASES: &str = "[[phase]]\nkind = \"sustained\"\nname = \"s\"\nduration_s = 3\n\
        [[phase]]\nkind = \"duty\"\nname = \"sweep\"\nperiods_ms = [500, 100]\nduration_s = 5\nmodes = [\"in_phase\", \"staggered\"]\n\
        [[phase]]\nkind = \"duty\"\nname = \"mitigation\"\nperiod_ms = 500\nduration_s = 5\nsmoothing = [{}, { floor_pct = 60 }]\n";
    const LIMITS: &str = "[grid]\nmax_dynamic_range_w = 1500\n\
        [supply]\nrated_w = 3000\nexcursions = [[10, 4000], [1000, 3500], [10000, 3000]]\n";
    for (limits, swing_says, envelope_says) in [
        (
            LIMITS,
            "[grid] dynamic range limit 1500 W",
            "[supply] excursion limit",
        ),
        ("", "no [grid] limit declared", "no [supply] declared"),
    ] {
        let r = run_sim(
            &campaign(&format!("{limits}{PHASES}")),
            &["--sim-gpus", "2"],
        );
        assert_eq!(r.code(), 0, "{}", r.stderr());
        let report = r.dir().join("report");
        for f in [
            "verdict_swing.svg",
            "verdict_swing.png",
            "verdict_envelope.svg",
            "verdict_envelope.png",
        ] {
            assert!(report.join("plots").join(f).is_file(), "{f} ({limits:?})");
        }
        let svg = |f: &str| std::fs::read_to_string(report.join("plots").join(f)).unwrap();
        assert!(svg("verdict_swing.svg").contains(swing_says), "{limits:?}");
        assert!(svg("verdict_swing.svg").contains("mitigation floor60, in phase"));
        assert!(
            svg("verdict_envelope.svg").contains(envelope_says),
            "{limits:?}"
        );
        let md = std::fs::read_to_string(report.join("report.md")).unwrap();
        let answer = md.find("\n## The answer").expect("an answer block");
        for link in ["(plots/verdict_swing.svg)", "(plots/verdict_envelope.svg)"] {
            let at = md.find(link).unwrap_or_else(|| panic!("{link} in\n{md}"));
            assert!(at < answer, "{link} after the answer:\n{md}");
        }
        assert!(md[..answer].contains(&swing_says.replace('[', "\\[").replace(']', "\\]")));
        // Issue 49: the verdict table comes right after the plots, above
        // the answer: with limits, each declared one judged; without, none.
        let table = md.find("\n| spec item |").expect("a verdict table");
        assert!(md.find("(plots/verdict_envelope.svg)").unwrap() < table && table < answer);
        let rows: Vec<&str> = md[table + 1..answer]
            .lines()
            .take_while(|l| l.starts_with('|'))
            .skip(2)
            .collect();
        assert!(rows.len() >= 6, "{rows:?}");
        let row = |item: &str| {
            *rows
                .iter()
                .find(|r| r.starts_with(&format!("| {item}")))
                .unwrap()
        };
        if limits.is_empty() {
            assert!(
                rows.iter().all(|r| r.contains("no limit declared")),
                "{rows:?}"
            );
        } else {
            for (item, limit) in [
                ("Dynamic range (max", "1500 W"),
                ("Supply rating", "3000 W"),
            ] {
                let r = row(item);
                assert!(
                    r.contains(limit) && (r.contains("✔ pass") || r.contains("✘ fail")),
                    "{r}"
                );
            }
            assert!(row("Ramp up").contains("no limit declared"), "{rows:?}");
        }
        let html = std::fs::read_to_string(report.join("report.html")).unwrap();
        let answer = html.find("<h2>The answer").expect("an answer block");
        for src in ["plots/verdict_swing.svg", "plots/verdict_envelope.svg"] {
            let at = html
                .find(&format!("<figure class=\"plot\" data-src=\"{src}\"><svg"))
                .unwrap_or_else(|| panic!("{src} inline"));
            assert!(at < answer, "{src} after the answer");
        }
    }
}

/// Issue 49: the table `run` prints ends with the verdicts in one line,
/// and gives each composed figure its ± (or the bound an interval only
/// gives); the line's dynamic range verdict is `grid.csv`'s.
#[test]
fn the_terminal_table_carries_intervals_and_a_closing_verdict() {
    let body = "[grid]\nmax_dynamic_range_w = 1500\n[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiods_ms = [500]\nduration_s = 6\nmodes = [\"in_phase\", \"staggered\"]\n";
    let r = run_sim(&campaign(body), &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let out = r.stdout();
    let row = |label: &str| {
        out.lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no row {label}:\n{out}"))
            .to_string()
    };
    let in_phase = row("d/p500ms/in_phase");
    assert_eq!(in_phase.matches(" ± ").count(), 4, "{in_phase}");
    assert!(row("d/p500ms/staggered").contains(" W"), "{out}");
    let verdict = out
        .lines()
        .find(|l| l.starts_with("verdict: "))
        .unwrap_or_else(|| panic!("no verdict line:\n{out}"));
    let fails = csv_rows(&r.dir().join("report/grid.csv")).iter().any(|g| {
        g["metric"] == "dynamic_range" && g["label"].starts_with("d/") && g["verdict"] == "fail"
    });
    let said = if fails {
        "Dynamic range (max − min): ✘ fail"
    } else {
        "Dynamic range (max − min): ✔ pass"
    };
    assert!(verdict.contains(said), "{verdict}");
    assert!(
        verdict.contains("; no limit declared for Supply excursion"),
        "{verdict}"
    );
}
