//! Fuzzing the campaign parser: arbitrary text and structured near-valid
//! campaigns. Nothing may panic; every rejection must name where it is
//! (line and column) or which field. Runs for `POWERLAB_FUZZ_SECS` seconds
//! (default 3; `scripts/fuzz.sh` runs 600).

use powerlab_campaign::{expand, parse_str};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::time::{Duration, Instant};

fn budget() -> Duration {
    Duration::from_secs(std::env::var("POWERLAB_FUZZ_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(3))
}

const KEYS: &[&str] = &[
    "name", "kind", "duration_s", "warmup_s", "cooldown_s", "repeats", "period_ms", "periods_ms", "duty", "ramp_s", "mode", "modes", "stagger_step_deg",
    "offsets_deg", "offsets_ms", "collectives", "min_bytes", "max_bytes", "step_factor", "iterations", "warmup_iters", "sweep_s", "fabric_bytes", "timeout_s",
    "bsp_compute_ms", "gpus", "nccl_first", "confirm_node_swing", "calibrate", "poll_interval_ms", "buffer_interval_ms", "field_interval_ms", "grid_ms",
    "max_gpu_temp_c", "max_node_power_w", "abort_on_hw_slowdown", "barrier_tolerance_ms", "bogus",
];
const SECTIONS: &[&str] = &["[campaign]", "[[phase]]", "[sampling]", "[limits]", "[defaults]", "[phase]", "[[campaign]]", ""];
const VALUES: &[&str] = &[
    "0", "-1", "1", "2", "8", "1e309", "-0.0", "nan", "inf", "0.5", "1.5", "100", "20", "5", "9223372036854775807", "-9223372036854775808", "\"duty\"", "\"nccl\"",
    "\"idle\"", "\"sustained\"", "\"soak\"", "\"in_phase\"", "\"staggered\"", "\"all\"", "\"\"", "\"x\\u0000y\"", "[]", "[1, 2]", "[0, 90, 180]", "[\"all_reduce\"]",
    "[\"in_phase\", \"staggered\"]", "[2000, 500, 5]", "true", "false", "{}", "{ a = 1 }", "[[1]]", "\"GPU-00000000-0000-0000-0000-000000000000\"", "[0, 1, 1]",
];

fn structured() -> impl Strategy<Value = String> {
    let line = (0..SECTIONS.len(), 0..KEYS.len(), 0..VALUES.len(), 0u8..4).prop_map(|(s, k, v, shape)| match shape {
        0 => SECTIONS[s].to_string(),
        1 => format!("{} = {}", KEYS[k], VALUES[v]),
        2 => format!("{} = {}\n{} = {}", KEYS[k], VALUES[v], KEYS[(k + 7) % KEYS.len()], VALUES[(v + 3) % VALUES.len()]),
        _ => format!("{}\n{} = {}", SECTIONS[s], KEYS[k], VALUES[v]),
    });
    proptest::collection::vec(line, 0..40).prop_map(|lines| format!("[campaign]\nname = \"f\"\n{}", lines.join("\n")))
}

fn check(text: &str) -> Result<(), TestCaseError> {
    match parse_str("fuzz.toml", text) {
        Ok(c) => {
            for n in [1usize, 2, 5, 8] {
                if let Err(e) = expand(&c, n, Some(2)) {
                    prop_assert!(e.field.is_some() && !e.message.is_empty(), "plan rejection without a field: {e:?}");
                }
            }
        }
        Err(e) => {
            prop_assert!(!e.message.is_empty(), "empty message for {text:?}");
            prop_assert!(e.line > 0 || e.field.is_some(), "rejection names neither place nor field: {e:?} for {text:?}");
            prop_assert!(e.to_string().contains("fuzz.toml"), "the file is named: {e}");
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
        let mut runner = TestRunner::new(Config { cases: 256, failure_persistence: None, ..Config::default() });
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
