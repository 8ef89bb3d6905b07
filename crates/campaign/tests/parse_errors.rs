#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Every rejection names file, line, column and field, and says what is allowed.

use powerlab_campaign::{CampaignError, Mode, NcclStep, PhaseKind, expand, parse_str};

const BASE: &str = r#"[campaign]
name = "t"

[[phase]]
kind = "duty"
periods_ms = [100, 20]
duty = 0.5
duration_s = 4
modes = ["in_phase", "staggered"]
repeats = 2
"#;

fn err(src: &str) -> CampaignError {
    parse_str("x.toml", src).expect_err("must be rejected")
}

#[test]
fn unknown_key_is_located() {
    let src = BASE.replace("duty = 0.5", "dutty = 0.5");
    let e = err(&src);
    assert_eq!(e.file, "x.toml");
    assert_eq!(e.line, 7, "{e}");
    assert!(e.message.contains("unknown field `dutty`"), "{e}");
    assert!(e.to_string().starts_with("x.toml:7:"), "{e}");
}

#[test]
fn unknown_top_level_table_is_an_error() {
    let e = err(&format!("{BASE}\n[samplng]\npoll_interval_ms = 10\n"));
    assert!(e.message.contains("samplng"), "{e}");
}

#[test]
fn out_of_range_duty_names_field_and_allowed() {
    let e = err(&BASE.replace("duty = 0.5", "duty = 1.5"));
    assert_eq!((e.line, e.field.as_deref()), (7, Some("phase[0].duty")));
    assert_eq!(e.allowed.as_deref(), Some("0 < duty <= 1"));
}

#[test]
fn wrong_type_is_located() {
    let e = err(&BASE.replace("duration_s = 4", "duration_s = \"four\""));
    assert_eq!(e.line, 8, "{e}");
    assert_eq!(e.field.as_deref(), Some("duration_s"));
}

#[test]
fn key_not_allowed_for_kind() {
    let src =
        "[campaign]\nname = \"t\"\n[[phase]]\nkind = \"soak\"\nduration_s = 5\nperiod_ms = 20\n";
    let e = err(src);
    assert_eq!(
        (e.line, e.field.as_deref()),
        (6, Some("phase[0].period_ms"))
    );
    assert!(e.message.contains("not allowed in a `soak` phase"), "{e}");
    assert!(e.allowed.unwrap().contains("duration_s"));
}

#[test]
fn unknown_kind_and_mode_list_what_is_allowed() {
    let e = err(&BASE.replace("kind = \"duty\"", "kind = \"dutycycle\""));
    assert_eq!(
        e.allowed.as_deref(),
        Some("idle, sustained, duty, nccl, soak")
    );
    let e = err(&BASE.replace("\"staggered\"]", "\"stagger\"]"));
    assert_eq!(e.allowed.as_deref(), Some("in_phase, staggered"));
}

#[test]
fn staggering_constant_load_is_rejected() {
    let src = "[campaign]\nname = \"t\"\n[[phase]]\nkind = \"sustained\"\nduration_s = 5\nmode = \"staggered\"\n";
    assert!(
        err(src)
            .message
            .contains("only duty phases can be staggered")
    );
}

#[test]
fn missing_duration_and_missing_name() {
    let e = err("[campaign]\nname = \"t\"\n[[phase]]\nkind = \"idle\"\n");
    assert_eq!(e.field.as_deref(), Some("phase[0].duration_s"));
    let e = err("[campaign]\n[[phase]]\nkind = \"idle\"\nduration_s = 1\n");
    assert!(e.message.contains("missing field `name`"), "{e}");
}

#[test]
fn valid_file_expands_with_repeats_and_offsets() {
    let c = parse_str("x.toml", BASE).unwrap();
    let p = expand(&c, 4, None).unwrap();
    // 2 repeats x 2 periods x 2 modes, and the ramp-up (1 and 2 of the 4
    // GPUs) before the first in-phase rung.
    let duty = p.rungs.iter().filter(|r| r.kind == PhaseKind::Duty).count();
    assert_eq!((duty, p.rungs.len()), (8, 10));
    let st: Vec<_> = p
        .rungs
        .iter()
        .filter(|r| r.mode == Mode::Staggered && r.nominal_period_ms == Some(100.0))
        .collect();
    // Even stagger: quarters of the period the GPUs run (detuned from 100 ms).
    let period_ns = st[0].period_ms.unwrap() * 1e6;
    assert!(period_ns > 100e6 && period_ns < 102e6, "{period_ns}");
    let quarters: Vec<i64> = (0..4)
        .map(|i| (i as f64 * period_ns / 4.0).round() as i64)
        .collect();
    assert_eq!(st[0].offsets_ns, quarters);
    assert!(
        p.rungs
            .iter()
            .filter(|r| r.mode == Mode::InPhase)
            .all(|r| r.offsets_ns.iter().all(|o| *o == 0))
    );
    // --repeats overrides the file.
    assert_eq!(expand(&c, 4, Some(3)).unwrap().rungs.len(), 12 + 2);
    let labels: std::collections::HashSet<_> = p.rungs.iter().map(|r| r.label.clone()).collect();
    assert_eq!(labels.len(), p.rungs.len(), "labels are unique");
}

#[test]
fn nccl_moves_before_duty_and_soak_last() {
    let src = r#"[campaign]
name = "t"
[[phase]]
kind = "soak"
duration_s = 10
[[phase]]
kind = "duty"
period_ms = 100
duration_s = 2
[[phase]]
kind = "nccl"
duration_s = 3
"#;
    let c = parse_str("x.toml", src).unwrap();
    let p = expand(&c, 2, None).unwrap();
    let kinds: Vec<_> = p.rungs.iter().map(|r| r.kind).collect();
    // An NCCL phase is a sweep rung and a fabric rung.
    assert_eq!(
        kinds,
        vec![
            PhaseKind::Nccl,
            PhaseKind::Nccl,
            PhaseKind::Duty,
            PhaseKind::Soak
        ]
    );
    let steps: Vec<_> = p.rungs.iter().filter_map(|r| r.nccl_step).collect();
    assert_eq!(steps, vec![NcclStep::Sweep, NcclStep::Fabric]);
    assert_eq!(
        p.rungs[0].duration_ns, 60_000_000_000,
        "the sweep's window is sweep_s (default 60 s)"
    );
    assert_eq!(
        p.rungs[1].duration_ns, 3_000_000_000,
        "the fabric rung lasts duration_s"
    );
    assert_eq!(p.notes.len(), 3, "{:?}", p.notes);
    assert!(p.notes[2].contains("100 → 101.43 ms"), "{:?}", p.notes);
    let kept = parse_str(
        "x.toml",
        &src.replace("name = \"t\"", "name = \"t\"\nnccl_first = false"),
    )
    .unwrap();
    let kinds: Vec<_> = expand(&kept, 2, None)
        .unwrap()
        .rungs
        .iter()
        .map(|r| r.kind)
        .collect();
    assert_eq!(
        kinds,
        vec![
            PhaseKind::Duty,
            PhaseKind::Nccl,
            PhaseKind::Nccl,
            PhaseKind::Soak
        ]
    );
}

#[test]
fn nccl_phase_sizes_and_bulk_synchronous_rung() {
    let src = "[campaign]\nname = \"t\"\n[[phase]]\nkind = \"nccl\"\nduration_s = 5\nmin_bytes = 8\nmax_bytes = 1024\nstep_factor = 4\nbsp_compute_ms = 30\nsweep_s = 20\n";
    let c = parse_str("x.toml", src).unwrap();
    let n = c.phases[0].nccl.clone().unwrap();
    assert_eq!(n.sizes(), vec![8, 32, 128, 512]);
    let p = expand(&c, 2, None).unwrap();
    let labels: Vec<_> = p.rungs.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels, vec!["nccl-0/sweep", "nccl-0/fabric", "nccl-0/bsp"]);
    let e = parse_str("x.toml", &src.replace("step_factor = 4", "step_factor = 3")).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("phase[0].step_factor"));
    assert_eq!(e.allowed.as_deref(), Some("2, 4 or 8"));
    let e = parse_str(
        "x.toml",
        &src.replace("sweep_s = 20", "sweep_s = 20\nsend_s = 1"),
    )
    .unwrap_err();
    assert!(e.to_string().contains("send_s"), "{e}");
}

#[test]
fn in_phase_swing_over_four_gpus_needs_consent() {
    let c = parse_str("x.toml", BASE).unwrap();
    let e = expand(&c, 8, None).unwrap_err();
    assert!(e.allowed.unwrap().contains("confirm_node_swing"));
    let ok = parse_str(
        "x.toml",
        &BASE.replace("name = \"t\"", "name = \"t\"\nconfirm_node_swing = true"),
    )
    .unwrap();
    assert!(expand(&ok, 8, None).is_ok());
}

#[test]
fn explicit_offsets_must_match_gpu_count() {
    let src = BASE.replace("repeats = 2", "repeats = 2\noffsets_deg = [0, 90]");
    let c = parse_str("x.toml", &src).unwrap();
    assert!(expand(&c, 2, None).is_ok());
    let e = expand(&c, 4, None).unwrap_err();
    assert!(
        e.message
            .contains("2 offsets are given for 4 selected GPUs"),
        "{e}"
    );
}

#[test]
fn shipped_campaigns_validate_and_plan() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../campaigns");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let c = powerlab_campaign::load_file(&path).unwrap_or_else(|e| panic!("{e}"));
            // The device-* campaigns are for the lent one- and two-GPU machines.
            let all = if path
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("device-")
            {
                2
            } else {
                8
            };
            let n = c.gpus.count(all);
            let p = expand(&c, n, None).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(!p.rungs.is_empty());
            seen += 1;
        }
    }
    assert!(seen >= 3);
    let r3 = powerlab_campaign::load_file(&dir.join("node-r3.toml")).unwrap();
    let p = expand(&r3, 8, None).unwrap();
    assert_eq!(p.rungs.first().map(|r| r.kind), Some(PhaseKind::Idle));
    assert_eq!(
        p.rungs.last().map(|r| (r.kind, r.duration_ns)),
        Some((PhaseKind::Soak, 1_800_000_000_000))
    );
    let first_duty = p
        .rungs
        .iter()
        .position(|r| r.kind == PhaseKind::Duty)
        .unwrap();
    assert!(
        p.rungs[..first_duty]
            .iter()
            .any(|r| r.kind == PhaseKind::Nccl)
    );
    let st = p
        .rungs
        .iter()
        .find(|r| r.mode == Mode::Staggered && r.nominal_period_ms == Some(2000.0))
        .unwrap();
    assert_eq!(
        st.offsets_ns[1],
        (st.period_ms.unwrap() * 1e6 / 8.0).round() as i64,
        "45 degrees of the ~2 s period"
    );
}

#[test]
fn a_period_listed_twice_is_refused_not_counted_as_a_repeat() {
    let src = "[campaign]\nname = \"t\"\n[[phase]]\nkind = \"duty\"\nperiods_ms = [100, 500, 100]\nduration_s = 5\n";
    let e = err(src);
    assert_eq!(
        (e.line, e.field.as_deref()),
        (5, Some("phase[0].periods_ms"))
    );
    assert!(e.message.contains("100 ms is listed twice"), "{e}");
}

#[test]
fn ramp_up_is_a_campaign_key_held_to_the_same_rules() {
    let on = |v: &str| BASE.replace("name = \"t\"", &format!("name = \"t\"\nramp_up = {v}"));
    assert_eq!(
        parse_str("x.toml", &on("false")).unwrap().ramp_up,
        Some(false)
    );
    assert_eq!(
        parse_str("x.toml", &on("true")).unwrap().ramp_up,
        Some(true)
    );
    assert_eq!(parse_str("x.toml", BASE).unwrap().ramp_up, None);
    let e = err(&on("\"no\""));
    assert_eq!(e.line, 3, "{e}");
    assert!(e.to_string().contains("ramp_up"), "{e}");
    // A misspelt key is refused, and the refusal lists the real one.
    let e = err(&BASE.replace("name = \"t\"", "name = \"t\"\nramp_upp = false"));
    assert!(e.message.contains("unknown field `ramp_upp`"), "{e}");
    assert!(e.to_string().contains("`ramp_up`"), "{e}");
    // No campaign file can ask for the planner's own kind.
    let e = err(&BASE.replace("kind = \"duty\"", "kind = \"ramp_up\""));
    assert!(
        e.to_string().contains("idle, sustained, duty, nccl, soak"),
        "{e}"
    );
}
