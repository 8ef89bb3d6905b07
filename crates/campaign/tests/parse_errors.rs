#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Every rejection names file, line, column and field, and says what is allowed.

use powerlab_campaign::{CampaignError, Mode, NcclStep, PeriodMs, PhaseKind, expand, parse_str};

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
    assert_eq!(
        e.allowed.as_deref(),
        Some(
            "duty = 1 (constant load), or 0.01 <= duty <= 0.99 with on and off parts each at least 0.5 ms"
        )
    );
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
        Some("idle, sustained, duty, nccl, soak, workload")
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
        .filter(|r| r.mode == Mode::Staggered && r.nominal_period_ms == Some(PeriodMs(100.0)))
        .collect();
    // Even stagger: quarters of the period the GPUs run (detuned from 100 ms).
    let period_ns = st[0].period_ms.unwrap().ns_f64();
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
        .find(|r| r.mode == Mode::Staggered && r.nominal_period_ms == Some(PeriodMs(2000.0)))
        .unwrap();
    assert_eq!(
        st.offsets_ns[1],
        (st.period_ms.unwrap().ns_f64() / 8.0).round() as i64,
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

/// Where `needle` last starts in `src`, as 1-based (line, column).
fn place_of(src: &str, needle: &str) -> (usize, usize) {
    let at = src.rfind(needle).expect("the needle is in the file");
    powerlab_campaign::error::line_col(src, at)
}

/// Issue 31, defect 2: a phase name could reproduce another rung's label
/// (`sweep/p500ms/in_phase` beside a duty phase `sweep`, `idle/no-context`),
/// take a planner rung's phase name, or carry markup and newlines into the
/// reports. Each is refused at the name, and the planner refuses any two
/// rungs with one label even when a campaign is built without the parser.
#[test]
fn defect2_a_phase_name_that_could_forge_a_label_is_refused_at_the_name() {
    let two = |name: &str| {
        format!(
            "[campaign]\nname = \"t\"\n[[phase]]\nkind = \"idle\"\nname = \"idle\"\nduration_s = 2\n[[phase]]\nkind = \"duty\"\nname = \"sweep\"\nperiod_ms = 500\nduration_s = 4\n[[phase]]\nkind = \"sustained\"\nname = {name}\nduration_s = 2\n"
        )
    };
    for name in [
        r#""sweep/p500ms/in_phase""#,
        r#""idle/no-context""#,
        r#""a\nb""#,
        r#""<script>alert(1)</script>""#,
        r#""x<b>""#,
        r#""a|b""#,
        r#""a#b""#,
        r#""a`b""#,
        r#""a&b""#,
        r#""rampup""#,
        r#""calibration""#,
        r#""idle""#,
    ] {
        let src = two(name);
        let e = parse_str("x.toml", &src).expect_err(name);
        let (line, _) = place_of(&src, &format!("name = {name}"));
        assert_eq!(
            (e.line, e.field.as_deref()),
            (line, Some("phase[2].name")),
            "{name}: {e}"
        );
        assert!(e.message.contains("cannot name a phase"), "{name}: {e}");
        assert!(e.allowed.is_some(), "{name}: {e}");
    }
    assert!(parse_str("x.toml", &two(r#""full-load_2.v1""#)).is_ok());

    // Belt and braces: a campaign built in code, past the parser.
    let mut c = parse_str("x.toml", &two(r#""full""#)).unwrap();
    c.phases[2].name = "sweep/p500ms/in_phase".into();
    let e = expand(&c, 2, None).expect_err("two rungs labelled alike");
    assert!(
        e.message
            .contains("two rungs would be labelled `sweep/p500ms/in_phase`"),
        "{e}"
    );
    c.phases[2].name = "idle/no-context".into();
    let e = expand(&c, 2, None).expect_err("the no-context rung's label");
    assert!(e.message.contains("`idle/no-context`"), "{e}");
}

/// Issue 31, defect 13 (one item): two phases with one name were reported
/// at `:0:0`; the error points at the second phase's name.
#[test]
fn defect13_a_duplicate_phase_name_is_located_at_the_second_name() {
    let src = "[campaign]\nname = \"t\"\n[[phase]]\nkind = \"idle\"\nname = \"base\"\nduration_s = 2\n[[phase]]\nkind = \"sustained\"\nduration_s = 2\nname = \"base\"\n";
    let e = err(src);
    assert_eq!((e.line, e.column), (10, 8), "{e}");
    assert_eq!(e.field.as_deref(), Some("phase[1].name"), "{e}");
    assert!(e.message.contains("two phases are named `base`"), "{e}");
    assert!(e.to_string().starts_with("x.toml:10:8:"), "{e}");
    // Unnamed: the default name collides; the second phase's table is named.
    let src = "[campaign]\nname = \"t\"\n[[phase]]\nkind = \"idle\"\nname = \"idle-1\"\nduration_s = 2\n[[phase]]\nkind = \"idle\"\nduration_s = 2\n";
    let e = err(src);
    assert!(e.line >= 7 && e.line <= 9, "{e}");
    assert_eq!(e.field.as_deref(), Some("phase[1].name"), "{e}");
}

/// Issue 31, defect 12: values that validated although nothing can run
/// them, each refused at its own line and field.
#[test]
fn defect12_accepted_nonsense_is_refused_at_its_line_and_field() {
    let duty = "[campaign]\nname = \"t\"\n[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiod_ms = 500\nduration_s = 4\n";
    let nccl =
        "[campaign]\nname = \"t\"\n[[phase]]\nkind = \"nccl\"\nname = \"n\"\nduration_s = 4\n";
    let long = format!("name = \"{}\"", "n".repeat(240));
    let cases: Vec<(String, String, &str)> = vec![
        // A 240-character campaign name (`run` failed: "File name too long").
        (
            duty.replace("name = \"t\"", &long),
            long.clone(),
            "campaign.name",
        ),
        // A duty that leaves no on part.
        (
            format!("{duty}duty = 1e-12\n"),
            "duty = 1e-12".into(),
            "phase[0].duty",
        ),
        (
            format!("{duty}duty = 0.999999\n"),
            "duty = 0.999999".into(),
            "phase[0].duty",
        ),
        // A 0.25 ms pulse at a 1 ms period.
        (
            duty.replace("period_ms = 500", "period_ms = 1\nduty = 0.25"),
            "duty = 0.25".into(),
            "phase[0].duty",
        ),
        // −2⁶³ warm-up iterations, in an NCCL phase and where they mean nothing.
        (
            format!("{nccl}warmup_iters = -9223372036854775808\n"),
            "warmup_iters".into(),
            "phase[0].warmup_iters",
        ),
        (
            format!("{duty}warmup_iters = -9223372036854775808\n"),
            "warmup_iters".into(),
            "phase[0].warmup_iters",
        ),
        (
            format!("{duty}sweep_s = 5\n"),
            "sweep_s".into(),
            "phase[0].sweep_s",
        ),
        // 3 offsets for the 2 GPUs the campaign lists.
        (
            duty.replace("name = \"t\"", "name = \"t\"\ngpus = [0, 1]")
                + "mode = \"staggered\"\noffsets_ms = [0, 100, 200]\n",
            "offsets_ms".into(),
            "phase[0].offsets_ms",
        ),
        (
            duty.replace("name = \"t\"", "name = \"t\"\ngpus = [0, 1]")
                + "mode = \"staggered\"\noffsets_deg = [0, 90, 180]\n",
            "offsets_deg".into(),
            "phase[0].offsets_deg",
        ),
        // No collectives, or one twice.
        (
            format!("{nccl}collectives = []\n"),
            "collectives".into(),
            "phase[0].collectives",
        ),
        (
            format!("{nccl}collectives = [\"all_reduce\", \"broadcast\", \"all_reduce\"]\n"),
            "collectives".into(),
            "phase[0].collectives",
        ),
        // A temperature limit an idle GPU trips.
        (
            duty.replace("[[phase]]", "[limits]\nmax_gpu_temp_c = 20\n[[phase]]"),
            "max_gpu_temp_c".into(),
            "limits.max_gpu_temp_c",
        ),
        (
            duty.replace("[[phase]]", "[limits]\nmax_memory_temp_c = 140\n[[phase]]"),
            "max_memory_temp_c".into(),
            "limits.max_memory_temp_c",
        ),
    ];
    for (src, at, field) in &cases {
        let e = parse_str("x.toml", src).expect_err(at);
        assert_eq!(
            (e.line, e.field.as_deref()),
            (place_of(src, at).0, Some(*field)),
            "{at}: {e}"
        );
        assert!(e.allowed.is_some(), "{at}: says what is allowed: {e}");
    }
    // What stays accepted: a 64-character name, duty 1 and 0.99, an offset
    // per listed GPU (or per GPU of a rack of such nodes), each collective once.
    for ok in [
        duty.replace("name = \"t\"", &format!("name = \"{}\"", "n".repeat(64))),
        format!("{duty}duty = 1\n"),
        format!("{duty}duty = 0.99\n"),
        duty.replace("name = \"t\"", "name = \"t\"\ngpus = [0, 1]")
            + "mode = \"staggered\"\noffsets_ms = [0, 100, 200, 300]\n",
        format!("{nccl}collectives = [\"all_reduce\", \"broadcast\"]\nwarmup_iters = 3\n"),
        duty.replace("[[phase]]", "[limits]\nmax_gpu_temp_c = 50\n[[phase]]"),
    ] {
        parse_str("x.toml", &ok).unwrap_or_else(|e| panic!("{ok}\n{e}"));
    }
}

/// Issue 31, defect 9: planning time grew with the cube of the number of
/// periods (3,200 took 18 s, 10,000 ran past 300 s) and `--gpus` was
/// unbounded. A phase at the new most periods (1,000, every one locked to
/// the sampling grid so that each is detuned) plans at once; one more
/// period, a campaign of more than 10,000 rungs, or a node of more than
/// 1,024 GPUs is refused, saying so.
#[test]
fn defect9_a_campaign_at_the_limits_plans_and_one_beyond_is_refused() {
    let periods = |n: usize| {
        let list: Vec<String> = (1..=n).map(|k| (20 * k).to_string()).collect();
        format!(
            "[campaign]\nname = \"t\"\n[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiods_ms = [{}]\nduration_s = 60\nwarmup_s = 0\ncooldown_s = 0\nmodes = [\"in_phase\", \"staggered\"]\n",
            list.join(", ")
        )
    };
    let c = parse_str("x.toml", &periods(1000)).unwrap();
    let t0 = std::time::Instant::now();
    let p = expand(&c, 4, None).unwrap();
    eprintln!(
        "1000 grid-locked periods x 2 modes on 4 GPUs planned in {:.2} s",
        t0.elapsed().as_secs_f64()
    );
    // 2,000 rungs and the ramp-up's 1 and 2 of 4 GPUs.
    assert_eq!(p.rungs.len(), 2002);
    let detuned = p
        .rungs
        .iter()
        .filter(|r| r.kind == PhaseKind::Duty && r.period_ms != r.nominal_period_ms)
        .count();
    // The periods whose 58 s window the 20 ms grid would not sweep (the
    // same 255 periods, in both modes, as the sort-based search chose).
    assert_eq!(detuned, 510, "grid-locked periods are detuned");

    let src = periods(1001);
    let e = err(&src);
    assert_eq!(
        (e.line, e.field.as_deref()),
        (6, Some("phase[0].periods_ms")),
        "{e}"
    );
    assert!(e.message.contains("1001 periods, more than 1000"), "{e}");

    // 1000 periods x 2 modes x 6 repeats: 12,000 rungs.
    let e = err(&periods(1000).replace("duration_s = 60", "duration_s = 1\nrepeats = 6"));
    assert!(e.message.contains("12000 rungs"), "{e}");
    assert!(e.allowed.as_deref().unwrap_or("").contains("10000"), "{e}");
    // --repeats that would do the same.
    let e = expand(&c, 4, Some(6)).unwrap_err();
    assert!(e.message.contains("12000 rungs"), "{e}");

    // A node of 1,024 GPUs at most.
    let idle = parse_str(
        "x.toml",
        "[campaign]\nname = \"t\"\n[[phase]]\nkind = \"idle\"\nduration_s = 1\n",
    )
    .unwrap();
    assert_eq!(expand(&idle, 1024, None).unwrap().gpu_count, 1024);
    let e = expand(&idle, 10_000_000, None).unwrap_err();
    assert!(e.message.contains("10000000 GPUs"), "{e}");
    assert!(e.allowed.as_deref().unwrap_or("").contains("1024"), "{e}");
}
