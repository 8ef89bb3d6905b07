#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Schedule files (`powerlab predict --schedule`): a full file read into
//! the expected struct, the defaults, and every cross-field rule refused
//! with its field path and line.

use powerlab_campaign::schedule::{
    Communication, Job, MAX_POINTS, MitigationChoice, Output, Override, Setting, Spread, StartEdge,
    Stragglers, parse_schedule_with,
};
use powerlab_campaign::{CampaignError, Excursion, Schedule, load_schedule, parse_schedule_str};

/// The smallest valid schedule: `[job]` on line 1, its keys on lines 2-4.
const JOB: &str = "[job]\ngpus = 64\niteration_ms = 100\ncompute_fraction = 0.7\n";

fn parse(src: &str) -> Result<Schedule, CampaignError> {
    parse_schedule_str("s.toml", src)
}

/// The error `extra` (appended after [`JOB`], from line 5) must give.
fn refused(extra: &str) -> CampaignError {
    parse(&format!("{JOB}{extra}")).expect_err(extra)
}

#[test]
fn a_full_schedule_parses_to_the_expected_struct() {
    let s = parse(
        r#"[job]
name = "big"
gpus = 1000
gpus_per_node = 8
iteration_ms = 500
compute_fraction = 0.8

[communication]
source = "given"
w_per_gpu = 350

[spread]
kind = "uniform"
width_ms = 10

[stragglers]
share = 0.01
delay_ms = 50

[mitigation]
profile = "floor60"
stagger_groups = 125

[output]
span_s = 60
resolution_ms = 0.5
seed = 7
"#,
    )
    .unwrap();
    assert_eq!(
        s.job,
        Job {
            name: "big".into(),
            gpus: 1000,
            gpus_per_node: Some(8),
            iteration_ms: 500.0,
            compute_fraction: 0.8,
            compute_w_per_gpu: None,
        }
    );
    assert_eq!(s.communication, Communication::Given { w_per_gpu: 350.0 });
    assert_eq!(s.spread, Spread::Uniform { width_ms: 10.0 });
    assert_eq!(
        s.stragglers,
        Some(Stragglers {
            share: 0.01,
            delay_ms: 50.0
        })
    );
    assert_eq!(
        s.mitigation,
        MitigationChoice {
            profile: Some("floor60".into()),
            stagger_groups: 125,
        }
    );
    assert_eq!(
        s.output,
        Output {
            span_s: 60.0,
            resolution_ms: 0.5,
            seed: 7
        }
    );
    assert!(s.supply.is_none() && s.grid.is_none());
}

#[test]
fn absent_tables_and_keys_take_their_defaults() {
    let s = parse(JOB).unwrap();
    assert_eq!(s.job.name, "job");
    assert_eq!(s.job.gpus_per_node, None);
    assert_eq!(s.communication, Communication::Off);
    assert_eq!(s.spread, Spread::None);
    assert_eq!(s.stragglers, None);
    assert_eq!(
        s.mitigation,
        MitigationChoice {
            profile: None,
            stagger_groups: 1
        }
    );
    assert_eq!(
        s.output,
        Output {
            span_s: 600.0,
            resolution_ms: 1.0,
            seed: 1
        }
    );
    // Empty tables are their defaults too; "plain" is no profile.
    let s = parse(&format!(
        "{JOB}[communication]\n[spread]\n[output]\n[mitigation]\nprofile = \"plain\"\n"
    ))
    .unwrap();
    assert_eq!(s.communication, Communication::Off);
    assert_eq!(s.spread, Spread::None);
    assert_eq!(s.mitigation.profile, None);
    assert_eq!(s.output.span_s, 600.0);
    let s = parse(&format!(
        "{JOB}[communication]\nsource = \"fabric\"\n[spread]\nkind = \"measured\"\n"
    ))
    .unwrap();
    assert_eq!(s.communication, Communication::Fabric);
    assert_eq!(s.spread, Spread::Measured);
}

#[test]
fn each_rule_is_refused_with_its_field_and_line() {
    for (extra, field, line, says) in [
        // A spread or a delay longer than the 100 ms iteration.
        (
            "[spread]\nkind = \"uniform\"\nwidth_ms = 101\n",
            "spread.width_ms",
            7,
            "iteration",
        ),
        (
            "[spread]\nkind = \"normal\"\nsigma_ms = 0\n",
            "spread.sigma_ms",
            7,
            "out of range",
        ),
        (
            "[spread]\nkind = \"normal\"\n",
            "spread.sigma_ms",
            6,
            "required",
        ),
        (
            "[spread]\nkind = \"uniform\"\nsigma_ms = 3\n",
            "spread.sigma_ms",
            7,
            "not taken",
        ),
        (
            "[spread]\nkind = \"gauss\"\n",
            "spread.kind",
            6,
            "unknown spread kind",
        ),
        (
            "[stragglers]\nshare = 0.1\ndelay_ms = 200\n",
            "stragglers.delay_ms",
            7,
            "iteration",
        ),
        (
            "[stragglers]\nshare = 1.5\ndelay_ms = 20\n",
            "stragglers.share",
            6,
            "out of range",
        ),
        (
            "[stragglers]\nshare = 0.1\n",
            "stragglers.delay_ms",
            5,
            "required",
        ),
        // A draw per GPU only with source = "given".
        (
            "[communication]\nsource = \"off\"\nw_per_gpu = 300\n",
            "communication.w_per_gpu",
            7,
            "source = \"off\"",
        ),
        (
            "[communication]\nw_per_gpu = 300\n",
            "communication.w_per_gpu",
            6,
            "source = \"off\"",
        ),
        (
            "[communication]\nsource = \"given\"\n",
            "communication.w_per_gpu",
            6,
            "required",
        ),
        (
            "[communication]\nsource = \"given\"\nw_per_gpu = 6000\n",
            "communication.w_per_gpu",
            7,
            "out of range",
        ),
        (
            "[communication]\nsource = \"nvlink\"\n",
            "communication.source",
            6,
            "unknown communication source",
        ),
        // 64 GPUs without gpus_per_node: at most 64 groups.
        (
            "[mitigation]\nstagger_groups = 65\n",
            "mitigation.stagger_groups",
            6,
            "from 1 to 64",
        ),
        (
            "[mitigation]\nprofile = \"../etc\"\n",
            "mitigation.profile",
            6,
            "not a profile label",
        ),
        (
            "[mitigation]\nprofile = \"\"\n",
            "mitigation.profile",
            6,
            "empty",
        ),
        // A quarter of the 100 ms iteration is 25 ms.
        (
            "[output]\nresolution_ms = 26\n",
            "output.resolution_ms",
            6,
            "quarter",
        ),
        (
            "[output]\nspan_s = 0.1\n",
            "output.span_s",
            6,
            "two iterations",
        ),
        // A day at 0.5 ms: 172.8 million points.
        (
            "[output]\nspan_s = 86400\nresolution_ms = 0.5\n",
            "output.resolution_ms",
            7,
            "more than the 20 million",
        ),
        ("[output]\nseed = -1\n", "output.seed", 6, "whole number"),
        // Unknown keys name their table.
        (
            "[spread]\nkind = \"uniform\"\nwidth = 10\n",
            "spread.width",
            7,
            "unknown field `width`",
        ),
        (
            "[supply]\nrated_w = 1e9\nexcursions = [\n  [20, 2e9],\n]\nfuse_w = 1\n",
            "supply.fuse_w",
            10,
            "unknown field `fuse_w`",
        ),
        // The campaign's [supply] and [grid] checks, at facility scale.
        (
            "[supply]\nrated_w = 2e10\n",
            "supply.rated_w",
            6,
            "out of range",
        ),
        (
            "[supply]\nexcursions = [[20, 2e9], [10, 1e9]]\n",
            "supply.excursions[1]",
            6,
            "does not follow",
        ),
        (
            "[grid]\nramp_up_mw_per_s = 10\n",
            "grid.ramp_up_mw_per_s",
            6,
            "GPU count",
        ),
    ] {
        let e = refused(extra);
        assert_eq!(e.field.as_deref(), Some(field), "{extra}: {e}");
        assert_eq!(e.line, line, "{extra}: {e}");
        assert!(e.message.contains(says), "{extra}: {e}");
        assert!(e.allowed.is_some(), "{extra}: {e}");
        assert!(e.to_string().starts_with(&format!("s.toml:{line}:")), "{e}");
    }
}

#[test]
fn job_keys_are_checked_and_required() {
    let job = |gpus: &str, per_node: &str, it: &str, cf: &str| {
        parse(&format!(
            "[job]\ngpus = {gpus}\ngpus_per_node = {per_node}\niteration_ms = {it}\ncompute_fraction = {cf}\n"
        ))
    };
    assert!(job("16", "8", "1000", "1").is_ok());
    for (e, field, line) in [
        (job("0", "8", "1000", "0.5"), "job.gpus", 2),
        (job("20000000", "8", "1000", "0.5"), "job.gpus", 2),
        (job("4", "8", "1000", "0.5"), "job.gpus_per_node", 3),
        (job("4096", "2048", "1000", "0.5"), "job.gpus_per_node", 3),
        (job("16", "8", "0.5", "0.5"), "job.iteration_ms", 4),
        (job("16", "8", "1000", "0"), "job.compute_fraction", 5),
        (job("16", "8", "1000", "1.1"), "job.compute_fraction", 5),
        (job("16.5", "8", "1000", "0.5"), "job.gpus", 2),
    ] {
        let e = e.expect_err(field);
        assert_eq!(e.field.as_deref(), Some(field), "{e}");
        assert_eq!(e.line, line, "{e}");
    }
    let e = parse("[job]\ngpus = 8\ncompute_fraction = 0.5\n").unwrap_err();
    assert_eq!(e.field.as_deref(), Some("job.iteration_ms"), "{e}");
    assert!(e.message.contains("required"), "{e}");
    let e = parse("[output]\nspan_s = 60\n").unwrap_err();
    assert_eq!(e.field.as_deref(), Some("job"), "{e}");
    let e = parse(&format!("{JOB}[sprad]\nkind = \"none\"\n")).unwrap_err();
    assert!(e.message.contains("sprad"), "{e}");
    assert_eq!(e.line, 5, "{e}");
}

#[test]
fn stagger_groups_stop_at_the_node_count() {
    // 100 GPUs, 8 a node: 13 nodes (the last one partly filled).
    let src = |groups: u32| {
        format!(
            "[job]\ngpus = 100\ngpus_per_node = 8\niteration_ms = 100\ncompute_fraction = 0.5\n[mitigation]\nstagger_groups = {groups}\n"
        )
    };
    assert_eq!(parse(&src(13)).unwrap().mitigation.stagger_groups, 13);
    let e = parse(&src(14)).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("mitigation.stagger_groups"), "{e}");
    assert_eq!(e.line, 7, "{e}");
    assert!(e.allowed.unwrap().contains("1..=13"));
}

#[test]
fn a_default_output_that_breaks_a_rule_is_refused_at_the_iteration() {
    // The default 1 ms resolution is above a quarter of a 2 ms iteration.
    let e = parse("[job]\ngpus = 8\niteration_ms = 2\ncompute_fraction = 0.5\n").unwrap_err();
    assert_eq!(e.field.as_deref(), Some("output.resolution_ms"), "{e}");
    assert_eq!(e.line, 3, "{e}");
    assert!(e.message.contains("the default"), "{e}");
    // The default 600 s span holds fewer than two 400 s iterations.
    let e = parse("[job]\ngpus = 8\niteration_ms = 400000\ncompute_fraction = 0.5\n").unwrap_err();
    assert_eq!(e.field.as_deref(), Some("output.span_s"), "{e}");
    assert_eq!(e.line, 3, "{e}");
}

#[test]
fn a_facility_supply_above_a_megawatt_is_accepted() {
    let s = parse(&format!(
        "{JOB}[supply]\nrated_w = 5e6\nexcursions = [[20, 9e6], [60000, 6e6]]\n"
    ))
    .unwrap();
    let supply = s.supply.unwrap();
    assert_eq!(supply.rated_w, Some(5e6));
    assert_eq!(supply.excursions[1].watts, 6e6);
    // The campaign's node [supply] still stops at 1 MW.
    let campaign = "[campaign]\nname = \"t\"\n[[phase]]\nkind = \"idle\"\nduration_s = 1\n[supply]\nrated_w = 5e6\n";
    let e = powerlab_campaign::parse_str("c.toml", campaign).unwrap_err();
    assert_eq!(e.field.as_deref(), Some("supply.rated_w"), "{e}");
}

#[test]
fn the_example_schedule_parses() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schedules/llm-100k.toml");
    let s = load_schedule(&path).unwrap();
    assert_eq!(s.job.name, "llm-100k");
    assert_eq!(s.job.gpus, 100_000);
    assert_eq!(s.job.gpus_per_node, Some(8));
    assert_eq!(s.job.iteration_ms, 2000.0);
    assert_eq!(s.job.compute_fraction, 0.75);
    assert_eq!(s.communication, Communication::Off);
    assert_eq!(s.spread, Spread::Normal { sigma_ms: 2.0 });
    assert_eq!(
        s.stragglers,
        Some(Stragglers {
            share: 0.001,
            delay_ms: 20.0
        })
    );
    assert_eq!(s.mitigation.stagger_groups, 1);
    assert_eq!(
        s.output,
        Output {
            span_s: 600.0,
            resolution_ms: 1.0,
            seed: 1
        }
    );
    let grid = s.grid.unwrap();
    assert_eq!(grid.gpus, Some(100_000));
    assert_eq!(grid.ramp_up_mw_per_s, Some(10.0));
    assert_eq!(grid.ramp_down_mw_per_s, Some(10.0));
    assert_eq!(grid.max_band_share_pct, Some(20.0));
    assert_eq!(grid.retune_iteration_pct, Some(10.0));
    // The 2000 ms iteration's fundamental in the first band, no harmonic
    // in the second.
    let names: Vec<&str> = grid.modes.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["inter-area", "plant"]);
    for (m, want) in grid.modes.iter().zip([[0.475, 0.525], [1.2, 1.4]]) {
        let band = m.band_hz();
        assert!((band[0] - want[0]).abs() < 1e-12 && (band[1] - want[1]).abs() < 1e-12);
    }
    assert_eq!(grid.max_step_mw, Some(50.0));
    assert_eq!(grid.ramp_down_mw_per_min, Some(30.0));
    assert_eq!(grid.max_load_loss_mw, Some(75.0));
    let lc = s.lifecycle.unwrap();
    assert_eq!(lc.start, StartEdge::Measured);
    assert_eq!(lc.crash_at_s, vec![4000.0]);
    assert_eq!(lc.end_at_s, Some(7000.0));
    assert_eq!(
        lc.checkpoint.map(|c| (c.every_s, c.duration_s)),
        Some((1800.0, 60.0))
    );
    let supply = s.supply.unwrap();
    assert_eq!(supply.rated_w, Some(90e6));
    let pair = |duration_ms, watts| Excursion { duration_ms, watts };
    assert_eq!(
        supply.excursions,
        vec![pair(20.0, 110e6), pair(1000.0, 100e6), pair(60000.0, 95e6)]
    );
}

#[test]
fn an_unreadable_file_is_an_error_at_line_0() {
    let e = load_schedule(std::path::Path::new("/nonexistent/s.toml")).unwrap_err();
    assert_eq!((e.line, e.column), (0, 0));
    assert!(e.message.contains("cannot read the schedule file"), "{e}");
}

/// A flag as `powerlab predict` passes it.
fn flag(name: &str, setting: Setting) -> Override {
    Override {
        flag: name.into(),
        setting,
    }
}

/// Issue 45, lesser item 1: with any flag the schedule was re-serialised
/// and its errors located in that document (`s.toml with the command
/// line's flags:9:12` for a key on line 7). A key of the file is now
/// located at its own line and column, a value a flag gave is named as the
/// flag, and a table only the flags made as the command line's.
#[test]
fn with_flags_an_error_stays_at_the_files_own_line_or_names_the_flag() {
    let gpus = flag("--gpus", Setting::Gpus(16));
    let src = format!("{JOB}[stragglers]\nshare = 0.1\ndelay_ms = 200\n");
    let e = parse_schedule_with("s.toml", &src, std::slice::from_ref(&gpus)).unwrap_err();
    assert_eq!(
        (e.file.as_str(), e.line, e.column),
        ("s.toml", 7, 12),
        "{e}"
    );
    assert_eq!(e.field.as_deref(), Some("stragglers.delay_ms"), "{e}");
    // A rule across a key of the file and a flag: at the file's key.
    let src = format!("{JOB}[spread]\nkind = \"normal\"\nsigma_ms = 50\n");
    let e = parse_schedule_with(
        "s.toml",
        &src,
        &[flag("--iteration-ms", Setting::IterationMs(40.0))],
    )
    .unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("s.toml", 7), "{e}");
    assert!(
        e.message.contains("may not exceed job.iteration_ms, 40 ms"),
        "{e}"
    );
    // A flag's own value: named as the flag.
    let cf = flag("--compute-fraction", Setting::ComputeFraction(1.5));
    let e = parse_schedule_with("s.toml", JOB, &[gpus.clone(), cf]).unwrap_err();
    assert_eq!(e.line, 0, "{e}");
    assert_eq!(e.file, "the command line's --compute-fraction 1.5", "{e}");
    assert_eq!(e.field.as_deref(), Some("job.compute_fraction"), "{e}");
    // Flags alone, a required key missing: the command line's.
    let e = parse_schedule_with("(command line)", "", std::slice::from_ref(&gpus)).unwrap_err();
    assert_eq!(
        (e.file.as_str(), e.line),
        ("the command line's flags", 0),
        "{e}"
    );
    assert_eq!(e.field.as_deref(), Some("job.iteration_ms"), "{e}");
    // The file's own errors (an unknown key) are where the file has them.
    let e = parse_schedule_with(
        "s.toml",
        &format!("{JOB}[output]\nspans = 3\n"),
        std::slice::from_ref(&gpus),
    )
    .unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("s.toml", 6), "{e}");
    // The flags replace their keys and nothing else.
    let s = parse_schedule_with(
        "s.toml",
        &format!("{JOB}[output]\nspan_s = 60\nseed = 9\n"),
        &[gpus, flag("--span-s", Setting::SpanS(30.0))],
    )
    .unwrap();
    assert_eq!((s.job.gpus, s.job.iteration_ms), (16, 100.0));
    assert_eq!((s.output.span_s, s.output.seed), (30.0, 9));
}

/// Issue 45, lesser item 2: `llm-100k.toml` said 100 million points where
/// the binary allows 20 million; the error now says the limit and the
/// longest span and finest resolution that fit.
#[test]
fn the_example_schedule_states_the_point_limit_and_the_error_says_how_to_fit() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schedules/llm-100k.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let stated: f64 = text
        .split("points, at most ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("llm-100k.toml states the point limit in millions");
    assert_eq!(
        stated * 1e6,
        MAX_POINTS as f64,
        "llm-100k.toml says {stated} million"
    );
    // A day at 0.5 ms: 172.8 million points.
    let e = refused("[output]\nspan_s = 86400\nresolution_ms = 0.5\n");
    assert!(e.message.contains("more than the 20 million"), "{e}");
    let allowed = e.allowed.unwrap();
    assert!(
        allowed.contains("at resolution_ms = 0.5, span_s <= 10000")
            && allowed.contains("at span_s = 86400, resolution_ms >= 4.32"),
        "{allowed}"
    );
}

/// Issue 45, lesser item 6: a supply whose limit rises with the window's
/// duration, or whose rating is above a window's limit, was accepted. Both
/// are refused, in a schedule's `[supply]` and in a campaign's, which the
/// same code reads.
#[test]
fn a_supply_limit_may_not_rise_with_duration_nor_the_rating_exceed_one() {
    let e = refused("[supply]\nexcursions = [[20, 1e8], [1000, 1.2e8]]\n");
    assert_eq!(e.field.as_deref(), Some("supply.excursions[1]"), "{e}");
    assert_eq!(e.line, 6, "{e}");
    assert!(e.message.contains("may not rise"), "{e}");
    assert!(
        e.allowed.as_ref().unwrap().contains("at most 100000000 W"),
        "{e}"
    );
    let e = refused("[supply]\nrated_w = 1.5e8\nexcursions = [[20, 2e8], [1000, 1e8]]\n");
    assert_eq!(e.field.as_deref(), Some("supply.rated_w"), "{e}");
    assert_eq!((e.line, e.column), (6, 11), "{e}");
    assert!(
        e.message
            .contains("above the 100000000 W allowed over 1000 ms"),
        "{e}"
    );
    assert!(
        e.allowed
            .as_ref()
            .unwrap()
            .contains("rated_w <= 100000000 W"),
        "{e}"
    );
    // Limits that stay level, and a rating equal to the lowest, stand.
    let s = parse(&format!(
        "{JOB}[supply]\nrated_w = 1e8\nexcursions = [[20, 1e8], [1000, 1e8]]\n"
    ))
    .unwrap();
    assert_eq!(s.supply.unwrap().rated_w, Some(1e8));
    // A campaign's node [supply]: the same rules.
    let campaign = |t: &str| {
        powerlab_campaign::parse_str(
            "c.toml",
            &format!("[campaign]\nname = \"t\"\n[[phase]]\nkind = \"idle\"\nduration_s = 1\n{t}"),
        )
    };
    let e = campaign("[supply]\nexcursions = [[10, 2500], [1000, 3500]]\n").unwrap_err();
    assert_eq!(e.field.as_deref(), Some("supply.excursions[1]"), "{e}");
    assert_eq!((e.file.as_str(), e.line), ("c.toml", 7), "{e}");
    let e = campaign("[supply]\nrated_w = 5000\nexcursions = [[10, 6000], [1000, 4200]]\n")
        .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("supply.rated_w"), "{e}");
    assert_eq!(e.line, 7, "{e}");
    assert!(
        campaign("[supply]\nrated_w = 4000\nexcursions = [[10, 6000], [1000, 4000]]\n").is_ok()
    );
}

/// Issue 45, lesser item 8: `--spread-sigma-ms 0` was refused with "it
/// may not exceed job.iteration_ms". 0 is now no spread; a negative σ, and
/// a σ of 0 written in the file, are refused for being below 0's bound,
/// saying how to write no spread.
#[test]
fn a_spread_of_zero_from_the_flag_is_no_spread_and_a_negative_one_is_refused_as_such() {
    let sigma = |x: f64| [flag("--spread-sigma-ms", Setting::SpreadSigmaMs(x))];
    // The flag replaces the file's [spread] whole.
    let src = format!("{JOB}[spread]\nkind = \"uniform\"\nwidth_ms = 10\n");
    let s = parse_schedule_with("s.toml", &src, &sigma(0.0)).unwrap();
    assert_eq!(s.spread, Spread::None);
    let s = parse_schedule_with("s.toml", &src, &sigma(3.0)).unwrap();
    assert_eq!(s.spread, Spread::Normal { sigma_ms: 3.0 });
    let e = parse_schedule_with("s.toml", &src, &sigma(-1.0)).unwrap_err();
    assert_eq!(e.file, "the command line's --spread-sigma-ms -1", "{e}");
    assert_eq!(e.field.as_deref(), Some("spread.sigma_ms"), "{e}");
    assert!(
        e.message.contains("must be above 0") && !e.message.contains("exceed"),
        "{e}"
    );
    let e = parse_schedule_with("s.toml", &src, &sigma(101.0)).unwrap_err();
    assert!(e.message.contains("may not exceed job.iteration_ms"), "{e}");
    // In the file: the bound it breaks, and how to write no spread.
    let e = refused("[spread]\nkind = \"normal\"\nsigma_ms = 0\n");
    assert!(
        e.message.contains("must be above 0")
            && e.message.contains("kind = \"none\"")
            && !e.message.contains("exceed"),
        "{e}"
    );
    let e = refused("[stragglers]\nshare = 0.1\ndelay_ms = -5\n");
    assert!(
        e.message.contains("must be above 0") && !e.message.contains("exceed"),
        "{e}"
    );
}

#[test]
fn a_lifecycle_out_of_order_or_half_declared_is_refused_at_its_key() {
    let cases = [
        (
            "[lifecycle]\nspan_s = 600\ncrash_at_s = [5]\n",
            "lifecycle.crash_at_s",
            7,
        ),
        (
            "[lifecycle]\nspan_s = 600\nend_at_s = 700\n",
            "lifecycle.end_at_s",
            7,
        ),
        (
            "[lifecycle]\ncheckpoint_every_s = 100\ncheckpoint_s = 90\n",
            "lifecycle.checkpoint_s",
            7,
        ),
        (
            "[lifecycle]\ncheckpoint_every_s = 100\n",
            "lifecycle.checkpoint_s",
            5,
        ),
        (
            "[lifecycle]\nstart = \"declared\"\n",
            "lifecycle.start_ramp_s",
            6,
        ),
        (
            "[lifecycle]\nstart = \"held\"\nstart_ramp_s = 3\n",
            "lifecycle.start_ramp_s",
            7,
        ),
        ("[lifecycle]\nstart = \"warm\"\n", "lifecycle.start", 6),
        (
            "[lifecycle]\nresolution_ms = 30\n",
            "lifecycle.resolution_ms",
            6,
        ),
        (
            "[lifecycle]\ncrash_per_hour = -1\n",
            "lifecycle.crash_per_hour",
            6,
        ),
        ("[grid]\nmax_load_loss_mw = 0\n", "grid.max_load_loss_mw", 6),
    ];
    for (extra, field, line) in cases {
        let e = refused(extra);
        assert_eq!(
            (e.field.as_deref(), e.line),
            (Some(field), line),
            "{extra}: {e}"
        );
    }
    let e = refused("[lifecycle]\nstart_at = 3\n");
    assert!(e.to_string().contains("start_at_s"), "{e}");
}
