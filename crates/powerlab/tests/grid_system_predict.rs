#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)] // a test that unwraps reports its failure by panicking
//! Issue 60: a schedule's `[grid.system]` (Kundur's two-area case, bus 9)
//! predicted at 100,000 GPUs from the simulated node's square waves, their
//! floor and ramp mitigations and its measured lifecycle edges, the screen
//! alone (`--no-grid-playback`): a screen and a swing row for every
//! scenario and event, every swing RoCoF the step's ΔP · f0 / (2 Σ H S)
//! from the committed model's own machines, the safe GPU count lowest
//! where a harmonic meets the inter-area mode, the floor's curve above
//! plain's, and the verdict rows in the report.

use crate::util::*;

const BODY: &str = "\
[[phase]]\nkind = \"duty\"\nname = \"held\"\nperiod_ms = 2000\nduty = 0.5\nduration_s = 10\n\
smoothing = [{}, { floor_pct = 60 }, { ramp_up_w_per_s = 60000, ramp_down_w_per_s = 60000 }]\n\
[[phase]]\nkind = \"workload\"\nname = \"kill\"\ncommand = [\"python3\", \"train.py\"]\n\
duration_s = 4\nwarmup_s = 2\ncooldown_s = 3\nrepeats = 2\nstop = \"sigkill\"\n\
sim = { iteration_ms = 241.7, compute_fraction = 1.0 }\n\
[[phase]]\nkind = \"workload\"\nname = \"exit\"\ncommand = [\"python3\", \"train.py\"]\n\
duration_s = 4\nwarmup_s = 2\ncooldown_s = 3\nrepeats = 2\nstop = \"exit\"\n\
sim = { iteration_ms = 241.7, compute_fraction = 1.0 }\n";

const SCHEDULE: &str = "[job]\nname = \"grid\"\ngpus = 100000\ngpus_per_node = 8\niteration_ms = 2000\ncompute_fraction = 0.5\n\
[output]\nspan_s = 20\nresolution_ms = 10\n\
[grid]\nmax_load_loss_mw = 50\n\
[grid.system]\ncase = \"kundur/kundur_full.xlsx\"\nbus = 9\nsteady_window_s = 30\nevent_window_s = 10\nstep_ms = 20\n\
max_osc_pp_mhz = 20\nmax_osc_pp_tie_mw = 10\nmax_rocof_hz_per_s = 0.5\n\
[lifecycle]\nspan_s = 900\nresolution_ms = 10\nstart_at_s = 60\nstart_spread_ms = 0\n\
checkpoint_every_s = 300\ncheckpoint_s = 30\ncrash_at_s = [500]\nrestart_after_s = 120\nend_at_s = 820\n";

fn num(r: &std::collections::HashMap<String, String>, k: &str) -> f64 {
    r[k].parse().unwrap_or(f64::NAN)
}

#[test]
fn the_screen_covers_every_scenario_and_event_and_its_safe_count_dips_at_the_inter_area_mode() {
    let r = run_sim(&campaign(BODY), &[]);
    assert_exit(&r.out, 0);
    let out = tempfile::tempdir().unwrap();
    let sched = out.path().join("s.toml");
    std::fs::write(&sched, SCHEDULE).unwrap();
    let dir = out.path().join("p");
    let o = powerlab_output([
        "predict",
        r.dir().to_str().unwrap(),
        "--square-waves",
        "--schedule",
        sched.to_str().unwrap(),
        "--no-grid-playback",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    let scenarios: Vec<String> = csv_rows(&dir.join("scenarios.csv"))
        .iter()
        .map(|s| s["label"].clone())
        .collect();
    assert!(
        scenarios.iter().any(|s| s.starts_with("floor")),
        "{scenarios:?}"
    );
    let rows = csv_rows(&dir.join("grid_response.csv"));
    let kinds = [
        "steady",
        "start",
        "checkpoint_begin",
        "checkpoint_end",
        "crash",
        "restart",
        "end",
    ];
    for s in &scenarios {
        for k in kinds {
            assert!(
                rows.iter()
                    .any(|r| r["source"] == "screen" && &r["scenario"] == s && r["window"] == k),
                "no screen row for {s} {k}"
            );
        }
    }
    assert!(rows.iter().all(|r| r["source"] != "andes"));
    // Every swing row from the committed model's own machines.
    let model: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../grids/models/kundur_full-bus9.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let sum_hs: f64 = model["machines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["h_s"].as_f64().unwrap() * m["s_mva"].as_f64().unwrap())
        .sum();
    let swing: Vec<_> = rows.iter().filter(|r| r["source"] == "swing").collect();
    // Start at 60 s, a checkpoint 360–390 s (counted from the start),
    // the crash at 500 s, the restart at 620 s, the end at 820 s; per
    // scenario.
    assert!(swing.len() >= 6 * scenarios.len(), "{}", swing.len());
    for r in &swing {
        let want = num(r, "load_step_mw").abs() * 60.0 / (2.0 * sum_hs);
        let got = num(r, "rocof_swing_hz_per_s");
        assert!(
            (got - want).abs() <= 1e-9 + 1e-6 * want,
            "{r:?}: {got} vs {want}"
        );
    }
    let crash = swing.iter().find(|r| r["window"] == "crash").unwrap();
    assert!(num(crash, "load_step_mw") < -10.0, "{crash:?}");
    // The safe count's minimum where a harmonic meets the inter-area mode.
    let safe = csv_rows(&dir.join("safe_gpus.csv"));
    let min_of = |s: &str| {
        safe.iter()
            .filter(|r| r["scenario"] == s)
            .min_by(|a, b| num(a, "safe_gpus").total_cmp(&num(b, "safe_gpus")))
            .unwrap()
            .clone()
    };
    let plain = min_of("plain");
    eprintln!("plain's fewest safe GPUs: {plain:?}");
    assert!(plain["danger"].contains("inter-area"), "{plain:?}");
    let floor = scenarios.iter().find(|s| s.starts_with("floor")).unwrap();
    let fl = min_of(floor);
    eprintln!("{floor}'s fewest: {fl:?}");
    assert!(num(&fl, "safe_gpus") > num(&plain, "safe_gpus"));
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("## What the grid sees"));
    assert!(report.contains("Grid: steady oscillation, peak-to-peak on the tie"));
    assert!(report.contains("--no-grid-playback"));
    assert!(dir.join("plots/safe_gpus.svg").is_file());
}
