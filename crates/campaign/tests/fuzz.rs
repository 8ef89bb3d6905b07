#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Fuzzing the campaign parser: arbitrary text and structured near-valid
//! campaigns. Nothing may panic; every rejection must name where it is
//! (line and column) or which field. Runs for `POWERLAB_FUZZ_SECS` seconds
//! (default 3; `scripts/bench/fuzz.sh` runs 600).

use powerlab_campaign::{expand, parse_str};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::time::{Duration, Instant};

fn budget() -> Duration {
    Duration::from_secs(
        std::env::var("POWERLAB_FUZZ_SECS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3),
    )
}

const KEYS: &[&str] = &[
    "name",
    "kind",
    "duration_s",
    "warmup_s",
    "cooldown_s",
    "repeats",
    "period_ms",
    "periods_ms",
    "duty",
    "ramp_s",
    "mode",
    "modes",
    "stagger_step_deg",
    "offsets_deg",
    "offsets_ms",
    "collectives",
    "min_bytes",
    "max_bytes",
    "step_factor",
    "iterations",
    "warmup_iters",
    "sweep_s",
    "fabric_bytes",
    "timeout_s",
    "bsp_compute_ms",
    "gpus",
    "nccl_first",
    "confirm_node_swing",
    "calibrate",
    "ramp_up",
    "poll_interval_ms",
    "buffer_interval_ms",
    "field_interval_ms",
    "grid_ms",
    "max_gpu_temp_c",
    "max_node_power_w",
    "abort_on_hw_slowdown",
    "barrier_tolerance_ms",
    "bogus",
];
const SECTIONS: &[&str] = &[
    "[campaign]",
    "[[phase]]",
    "[sampling]",
    "[limits]",
    "[defaults]",
    "[phase]",
    "[[campaign]]",
    "",
];
const VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "8",
    "1e309",
    "-0.0",
    "nan",
    "inf",
    "0.5",
    "1.5",
    "100",
    "20",
    "5",
    "9223372036854775807",
    "-9223372036854775808",
    "\"duty\"",
    "\"nccl\"",
    "\"idle\"",
    "\"sustained\"",
    "\"soak\"",
    "\"in_phase\"",
    "\"staggered\"",
    "\"all\"",
    "\"\"",
    "\"x\\u0000y\"",
    "[]",
    "[1, 2]",
    "[0, 90, 180]",
    "[\"all_reduce\"]",
    "[\"in_phase\", \"staggered\"]",
    "[2000, 500, 5]",
    "true",
    "false",
    "{}",
    "{ a = 1 }",
    "[[1]]",
    "\"GPU-00000000-0000-0000-0000-000000000000\"",
    "[0, 1, 1]",
];

fn structured() -> impl Strategy<Value = String> {
    let line =
        (0..SECTIONS.len(), 0..KEYS.len(), 0..VALUES.len(), 0u8..4).prop_map(|(s, k, v, shape)| {
            match shape {
                0 => SECTIONS[s].to_string(),
                1 => format!("{} = {}", KEYS[k], VALUES[v]),
                2 => format!(
                    "{} = {}\n{} = {}",
                    KEYS[k],
                    VALUES[v],
                    KEYS[(k + 7) % KEYS.len()],
                    VALUES[(v + 3) % VALUES.len()]
                ),
                _ => format!("{}\n{} = {}", SECTIONS[s], KEYS[k], VALUES[v]),
            }
        });
    proptest::collection::vec(line, 0..40)
        .prop_map(|lines| format!("[campaign]\nname = \"f\"\n{}", lines.join("\n")))
}

fn check(text: &str) -> Result<(), TestCaseError> {
    match parse_str("fuzz.toml", text) {
        Ok(c) => {
            for n in [1usize, 2, 5, 8] {
                if let Err(e) = expand(&c, n, Some(2)) {
                    prop_assert!(
                        e.field.is_some() && !e.message.is_empty(),
                        "plan rejection without a field: {e:?}"
                    );
                }
            }
        }
        Err(e) => {
            prop_assert!(!e.message.is_empty(), "empty message for {text:?}");
            prop_assert!(
                e.line > 0 || e.field.is_some(),
                "rejection names neither place nor field: {e:?} for {text:?}"
            );
            prop_assert!(
                e.to_string().contains("fuzz.toml"),
                "the file is named: {e}"
            );
        }
    }
    Ok(())
}

fn run_for(strategy: impl Strategy<Value = String>) -> u64 {
    let deadline = Instant::now() + budget();
    let cases = std::cell::Cell::new(0u64);
    while Instant::now() < deadline {
        // A fresh runner each round: a runner stops generating once it has
        // reached its case count, and each new one draws a new random seed.
        let mut runner = TestRunner::new(Config {
            cases: 256,
            failure_persistence: None,
            ..Config::default()
        });
        if let Err(e) = runner.run(&strategy, |t| {
            cases.set(cases.get() + 1);
            check(&t)
        }) {
            panic!("{e}");
        }
    }
    cases.get()
}

#[test]
fn arbitrary_text_never_panics_and_rejections_are_located() {
    let n = run_for(any::<String>());
    eprintln!("campaign parser: {n} arbitrary texts");
}

#[test]
fn near_valid_campaigns_never_panic_and_rejections_are_located() {
    let n = run_for(structured());
    eprintln!("campaign parser: {n} structured campaigns");
}

/// A valid campaign whose lines are known: (line, key, bad values).
const BASE: &str = "[campaign]\nname = \"f\"\n[sampling]\npoll_interval_ms = 20\ngrid_ms = 10\n[limits]\nmax_gpu_temp_c = 88\nedge_p99_us = 50\n[defaults]\nwarmup_s = 1\nrepeats = 2\n[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiod_ms = 100\nduty = 0.5\nduration_s = 4\nramp_s = 0\nmode = \"staggered\"\n";
const BAD: &[(usize, &str, &[&str])] = &[
    (
        4,
        "poll_interval_ms",
        &["0", "-1", "1e308", "nan", "inf", "\"x\"", "0.5", "5000"],
    ),
    (5, "grid_ms", &["0", "-1", "1e308", "nan", "0.001"]),
    (7, "max_gpu_temp_c", &["0", "1e6", "-5", "nan"]),
    (8, "edge_p99_us", &["0", "-1", "1e9", "nan"]),
    (10, "warmup_s", &["-1", "1e9", "nan", "inf", "true"]),
    (11, "repeats", &["0", "-1", "1001", "1.5", "\"2\""]),
    (15, "period_ms", &["0", "-5", "1e9", "nan", "0.5"]),
    (16, "duty", &["0", "1.5", "-0.5", "nan", "2"]),
    (
        17,
        "duration_s",
        &["0", "1e308", "1e-300", "-1", "nan", "\"4\"", "1e12"],
    ),
    (18, "ramp_s", &["-1", "4", "1e9", "nan"]),
    (19, "mode", &["\"sideways\"", "1", "[]"]),
];

/// One bad value put on a known line of a valid campaign: the rejection
/// must give exactly that line and name that field (a check that fails when
/// an error points elsewhere or names nothing).
#[test]
fn one_bad_value_is_rejected_at_its_own_line_and_field() {
    assert!(
        parse_str("fuzz.toml", BASE).is_ok(),
        "the base campaign is valid"
    );
    let strategy = (0..BAD.len(), 0usize..16).prop_map(|(i, v)| (i, v % BAD[i].2.len()));
    let deadline = Instant::now() + budget();
    let cases = std::cell::Cell::new(0u64);
    while Instant::now() < deadline {
        let mut runner = TestRunner::new(Config {
            cases: 128,
            failure_persistence: None,
            ..Config::default()
        });
        if let Err(e) = runner.run(&strategy, |(i, v)| {
            cases.set(cases.get() + 1);
            let (line, key, values) = BAD[i];
            let text: String = BASE
                .lines()
                .enumerate()
                .map(|(n, l)| {
                    if n + 1 == line {
                        format!("{key} = {}\n", values[v])
                    } else {
                        format!("{l}\n")
                    }
                })
                .collect();
            match parse_str("fuzz.toml", &text) {
                Ok(_) => prop_assert!(false, "`{key} = {}` on line {line} was accepted", values[v]),
                Err(e) => {
                    prop_assert_eq!(e.line, line, "`{} = {}`: {}", key, values[v], e);
                    let named = e.field.as_deref().is_some_and(|f| f.ends_with(key))
                        || e.message.contains(key);
                    prop_assert!(
                        named,
                        "`{key} = {}`: the field is not named: {e}",
                        values[v]
                    );
                    prop_assert!(e.to_string().starts_with("fuzz.toml:"), "{e}");
                }
            }
            Ok(())
        }) {
            panic!("{e}");
        }
    }
    eprintln!("campaign parser: {} single bad values", cases.get());
}
