#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Mitigation rungs: a duty phase's `smoothing` list, its expansion and
//! labels, and every refusal with its located message.

use powerlab_campaign::plan::render;
use powerlab_campaign::{CampaignError, PhaseKind, Plan, expand, parse_str};
use powerlab_core::smoothing::SmoothingSpec;

/// A duty phase named `mitigation` at 500 and 100 ms, both modes, with
/// `smoothing = LIST` appended (nothing when `list` is empty).
fn campaign(list: &str) -> String {
    let mut s = String::from(
        "[campaign]\nname = \"t\"\n[[phase]]\nkind = \"duty\"\nname = \"mitigation\"\nperiods_ms = [500, 100]\nmodes = [\"in_phase\", \"staggered\"]\nduration_s = 10\n",
    );
    if !list.is_empty() {
        s.push_str(&format!("smoothing = {list}\n"));
    }
    s
}

fn plan(src: &str) -> Plan {
    expand(&parse_str("m.toml", src).unwrap(), 2, None).unwrap()
}

fn err(src: &str) -> CampaignError {
    parse_str("m.toml", src).expect_err("must be refused")
}

fn labels(p: &Plan) -> Vec<&str> {
    p.rungs.iter().map(|r| r.label.as_str()).collect()
}

const BRIEF_LIST: &str = "[\n  {},\n  { floor_pct = 30 }, { floor_pct = 60 }, { floor_pct = 90 },\n  { ramp_up_w_per_s = 50000, ramp_down_w_per_s = 50000 },\n  { floor_pct = 60, ramp_down_w_per_s = 20000, ramp_down_hysteresis_ms = 5 },\n]";

#[test]
fn entries_nest_inside_periods_and_outside_modes() {
    let p = plan(&campaign(BRIEF_LIST));
    let duty: Vec<_> = p
        .rungs
        .iter()
        .filter(|r| r.kind == PhaseKind::Duty)
        .collect();
    assert_eq!(duty.len(), 2 * 6 * 2);
    let mut want = Vec::new();
    for period in ["p500ms", "p100ms"] {
        for m in [
            "plain",
            "floor30",
            "floor60",
            "floor90",
            "up50k-down50k",
            "floor60-down20k-h5ms",
        ] {
            for mode in ["in_phase", "staggered"] {
                want.push(format!("mitigation/{period}/{m}/{mode}"));
            }
        }
    }
    let got: Vec<&str> = duty.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(got, want);
    // The plain rungs carry no smoothing; the others carry their entry.
    assert!(duty[0].smoothing.is_none() && duty[1].smoothing.is_none());
    assert_eq!(
        duty[3].smoothing,
        Some(SmoothingSpec {
            floor_pct: 30.0,
            ..Default::default()
        })
    );
    let last = duty[11].smoothing.unwrap();
    assert_eq!(last.ramp_down_w_per_s, Some(20_000.0));
    assert_eq!(last.ramp_down_hysteresis_ms, 5.0);
    assert!(p.notes.iter().all(|n| !n.contains("no plain entry")));
}

#[test]
fn repeats_are_the_outermost_loop() {
    let src = campaign("[{}, { floor_pct = 60 }]")
        .replace("periods_ms = [500, 100]", "periods_ms = [500]\nrepeats = 2");
    let p = plan(&src);
    let duty: Vec<&str> = labels(&p)
        .into_iter()
        .filter(|l| l.starts_with("mitigation/"))
        .collect();
    assert_eq!(
        duty,
        vec![
            "mitigation/p500ms/plain/in_phase/r1",
            "mitigation/p500ms/plain/staggered/r1",
            "mitigation/p500ms/floor60/in_phase/r1",
            "mitigation/p500ms/floor60/staggered/r1",
            "mitigation/p500ms/plain/in_phase/r2",
            "mitigation/p500ms/plain/staggered/r2",
            "mitigation/p500ms/floor60/in_phase/r2",
            "mitigation/p500ms/floor60/staggered/r2",
        ]
    );
}

#[test]
fn without_the_key_the_plan_is_the_one_before() {
    let c = parse_str("m.toml", &campaign("")).unwrap();
    assert!(c.phases[0].smoothing.is_empty());
    let p = expand(&c, 2, None).unwrap();
    assert_eq!(
        labels(&p),
        vec![
            "mitigation/p500ms/in_phase",
            "mitigation/p500ms/staggered",
            "mitigation/p100ms/in_phase",
            "mitigation/p100ms/staggered",
        ]
    );
    assert!(p.rungs.iter().all(|r| r.smoothing.is_none()));
    let text = render(&p);
    assert!(!text.contains("mitigation:"), "{text}");
    assert!(!text.contains("plain"), "{text}");
    // The serialized campaign and plan gain no field either.
    let toml_plan = toml::to_string(&p).unwrap();
    assert!(!toml_plan.contains("smoothing"), "{toml_plan}");
    let toml_campaign = toml::to_string(&c).unwrap();
    assert!(!toml_campaign.contains("smoothing"), "{toml_campaign}");
    assert_eq!(
        powerlab_campaign::plan::estimated_rungs(&c, None),
        p.rungs.len() as u64
    );
}

#[test]
fn every_campaign_file_without_the_key_plans_no_mitigation() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../campaigns");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let c = powerlab_campaign::load_file(&path).unwrap();
        let p = expand(&c, 2, None).unwrap();
        for r in &p.rungs {
            let phase = c.phases.iter().find(|q| q.name == r.phase);
            let listed = phase.is_some_and(|q| !q.smoothing.is_empty());
            if !listed {
                assert!(r.smoothing.is_none(), "{}: {}", path.display(), r.label);
                assert!(
                    !r.label.contains("/plain"),
                    "{}: {}",
                    path.display(),
                    r.label
                );
            }
        }
    }
}

#[test]
fn the_rendered_plan_says_each_mitigation_in_words() {
    let p = plan(&campaign(BRIEF_LIST));
    let text = render(&p);
    assert!(
        text.contains(
            "mitigation: floor at 60 % of the power limit while the work is off (per GPU)"
        ),
        "{text}"
    );
    assert!(
        text.contains("mitigation: rises at most 50 kW/s; falls at most 50 kW/s (per GPU)"),
        "{text}"
    );
    assert!(
        text.contains("mitigation: floor at 60 % of the power limit while the work is off; holds the draw 5 ms after the work stops; falls at most 20 kW/s (per GPU)"),
        "{text}"
    );
    assert!(text.contains("mitigation: none (the plain rung"), "{text}");
    assert!(text.contains("emulates it with calibrated load"), "{text}");
}

#[test]
fn a_list_without_a_plain_entry_gets_a_note_and_no_plain_rung() {
    let p = plan(&campaign("[{ floor_pct = 60 }]"));
    assert!(p.rungs.iter().all(|r| !r.label.contains("plain")));
    let note = p
        .notes
        .iter()
        .find(|n| n.contains("no plain entry"))
        .unwrap();
    assert!(
        note.contains("needs a plain rung of the same period and mode"),
        "{note}"
    );
    assert!(render(&p).contains(note.as_str()));
}

#[test]
fn a_floor_beside_a_duty_ramp_is_planned() {
    let src = campaign("[{}, { floor_pct = 60 }]")
        .replace("duration_s = 10", "duration_s = 10\nramp_s = 2");
    let p = plan(&src);
    let r = p
        .rungs
        .iter()
        .find(|r| r.label == "mitigation/p100ms/floor60/staggered")
        .unwrap();
    assert_eq!(r.ramp_ns, 2_000_000_000);
    assert_eq!(r.smoothing.unwrap().floor_pct, 60.0);
}

#[test]
fn smoothing_outside_a_duty_phase_is_refused_naming_key_and_phase() {
    let src = "[campaign]\nname = \"t\"\n[[phase]]\nkind = \"sustained\"\nname = \"steady\"\nduration_s = 5\nsmoothing = [{ floor_pct = 60 }]\n";
    let e = err(src);
    assert_eq!(
        (e.line, e.field.as_deref()),
        (7, Some("phases.steady.smoothing"))
    );
    assert!(
        e.message
            .contains("`smoothing` is not allowed in phase `steady`, a `sustained` phase"),
        "{e}"
    );
    assert!(e.allowed.unwrap().contains("kind = \"duty\""));
}

/// The refusal of `list`: its line, field, a part of its message and of
/// what it allows.
fn refused(list: &str, field: &str, message: &str, allowed: &str) {
    let e = err(&campaign(list));
    assert_eq!(e.line, 9, "{e}");
    assert_eq!(e.field.as_deref(), Some(field), "{e}");
    assert!(e.message.contains(message), "{e}");
    assert!(e.allowed.as_deref().unwrap_or("").contains(allowed), "{e}");
}

#[test]
fn out_of_range_entries_are_refused_with_their_field() {
    refused(
        "[{}, { floor_pct = 60 }, { floor_pct = 100 }]",
        "phases.mitigation.smoothing[2].floor_pct",
        "a floor of 100 % is out of range",
        "0 <= floor_pct < 100",
    );
    refused(
        "[{ floor_pct = -5 }]",
        "phases.mitigation.smoothing[0].floor_pct",
        "out of range",
        "e.g. 60",
    );
    refused(
        "[{ ramp_up_w_per_s = 0 }]",
        "phases.mitigation.smoothing[0].ramp_up_w_per_s",
        "a rate of 0 W/s is out of range",
        "1 <= ramp_up_w_per_s <= 1e9",
    );
    // A ramp of a nano-watt per second (hostile review: it overflowed the
    // ramp's step arithmetic mid-run) is refused before anything runs.
    refused(
        "[{ ramp_down_w_per_s = 1e-9 }]",
        "phases.mitigation.smoothing[0].ramp_down_w_per_s",
        "out of range",
        "1 <= ramp_down_w_per_s",
    );
    refused(
        "[{ ramp_down_w_per_s = inf }]",
        "phases.mitigation.smoothing[0].ramp_down_w_per_s",
        "out of range",
        "e.g. 50000",
    );
    refused(
        "[{ ramp_down_w_per_s = 1000, ramp_down_hysteresis_ms = -1 }]",
        "phases.mitigation.smoothing[0].ramp_down_hysteresis_ms",
        "a hysteresis of -1 ms is out of range",
        "0 <= ramp_down_hysteresis_ms < 50",
    );
    refused(
        "[{ floor_pct = \"sixty\" }]",
        "phases.mitigation.smoothing[0].floor_pct",
        "expected a number, found a string",
        "a number",
    );
}

#[test]
fn a_hysteresis_must_end_within_every_off_phase() {
    // Duty 0.5: off for 50 ms at 100 ms, 250 ms at 500 ms.
    refused(
        "[{ floor_pct = 60, ramp_down_hysteresis_ms = 50 }]",
        "phases.mitigation.smoothing[0].ramp_down_hysteresis_ms",
        "not shorter than the off-phase at 100 ms (50 ms = period × (1 − duty))",
        "0 <= ramp_down_hysteresis_ms < 50 (the off-phase at 100 ms)",
    );
    let p = plan(&campaign(
        "[{ floor_pct = 60, ramp_down_hysteresis_ms = 49 }]",
    ));
    assert_eq!(p.rungs[0].smoothing.unwrap().ramp_down_hysteresis_ms, 49.0);
}

/// Issue 45, defect 8: `{ ramp_up_w_per_s = 1, ramp_down_w_per_s = 1 }`
/// validated, and the simulated node then ran the wave upside down (129 W
/// on, 706 W off). A ramp must cross the reference GPU's step (700 W
/// limit, 100 W idle: 600 W from idle, less above a floor) within the
/// longest on-phase (up) or off-phase after the hysteresis (down) of the
/// phase; here duty 0.5 at 500 ms: 250 ms.
#[test]
fn a_ramp_that_no_period_lets_finish_is_refused() {
    refused(
        "[{}, { ramp_up_w_per_s = 1, ramp_down_w_per_s = 1 }]",
        "phases.mitigation.smoothing[1].ramp_up_w_per_s",
        "a ramp of 1 W/s crosses 0.25 W in the longest on-phase (250 ms, at 500 ms), short of the 600 W a 700 W GPU steps from idle to full: no period of the phase lets the ramp finish",
        "ramp_up_w_per_s >= 2400 W/s (the 600 W step within 250 ms), or a longer period in periods_ms",
    );
    refused(
        "[{}, { ramp_down_w_per_s = 2000 }]",
        "phases.mitigation.smoothing[1].ramp_down_w_per_s",
        "crosses 500 W in the longest off-phase (250 ms, at 500 ms), short of the 600 W",
        "ramp_down_w_per_s >= 2400 W/s",
    );
    // Above a floor of 60 % the step is 280 W; the hysteresis comes first.
    refused(
        "[{ floor_pct = 60, ramp_down_w_per_s = 1300, ramp_down_hysteresis_ms = 40 }]",
        "phases.mitigation.smoothing[0].ramp_down_w_per_s",
        "crosses 273 W in the longest off-phase (210 ms after the 40 ms hysteresis, at 500 ms), short of the 280 W a 700 W GPU steps from a floor of 60 % to full",
        "ramp_down_w_per_s >= 1334 W/s",
    );
    // A rate the longest period lets finish is planned, though the 100 ms
    // rungs cut it (the collator says so); above a floor of 90 % the step
    // is 70 W.
    let p = plan(&campaign(
        "[{}, { ramp_up_w_per_s = 2400, ramp_down_w_per_s = 2400 }, { floor_pct = 90, ramp_up_w_per_s = 280 }]",
    ));
    assert!(
        labels(&p).contains(&"mitigation/p100ms/up2k4-down2k4/in_phase"),
        "{:?}",
        labels(&p)
    );
    assert!(labels(&p).contains(&"mitigation/p500ms/floor90-up280/staggered"));
}

#[test]
fn a_hysteresis_alone_is_refused_with_advice() {
    refused(
        "[{}, { ramp_down_hysteresis_ms = 5 }]",
        "phases.mitigation.smoothing[1].ramp_down_hysteresis_ms",
        "alone has no effect",
        "ramp_down_w_per_s (e.g. 20000) or floor_pct (e.g. 60)",
    );
    // A ramp up does not make it act: it delays only a fall.
    refused(
        "[{ ramp_up_w_per_s = 10000, ramp_down_hysteresis_ms = 5 }]",
        "phases.mitigation.smoothing[0].ramp_down_hysteresis_ms",
        "alone has no effect",
        "no ramp_down_hysteresis_ms",
    );
}

#[test]
fn unknown_keys_in_an_entry_are_refused() {
    refused(
        "[{}, { floor = 60 }]",
        "phases.mitigation.smoothing[1].floor",
        "`floor` is not a smoothing key",
        "floor_pct, ramp_up_w_per_s, ramp_down_w_per_s, ramp_down_hysteresis_ms",
    );
}

#[test]
fn duplicates_and_a_second_plain_entry_name_both_positions() {
    refused(
        "[{}, { floor_pct = 60 }, { floor_pct = 60.0 }]",
        "phases.mitigation.smoothing[2]",
        "smoothing[1] and smoothing[2] both ask for `floor60`",
        "distinct entries",
    );
    refused(
        "[{}, { floor_pct = 30 }, { floor_pct = 0 }]",
        "phases.mitigation.smoothing[2]",
        "smoothing[0] and smoothing[2] both ask for `plain` (`{}`, the plain rung, is listed at most once)",
        "distinct entries",
    );
}

#[test]
fn an_empty_list_and_a_constant_load_are_refused() {
    refused(
        "[]",
        "phases.mitigation.smoothing",
        "the list names no mitigation",
        "the plain rung",
    );
    let e = err(&campaign("[{}, { floor_pct = 60 }]")
        .replace("duration_s = 10", "duration_s = 10\nduty = 1"));
    assert_eq!(e.field.as_deref(), Some("phases.mitigation.smoothing"));
    assert!(e.message.contains("no swing to smooth"), "{e}");
}

#[test]
fn the_device_campaign_plans_28_duty_rungs() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../campaigns/device-mitigation.toml"
    );
    let c = powerlab_campaign::load_file(std::path::Path::new(path)).unwrap();
    let p = expand(&c, 2, None).unwrap();
    let duty = p.rungs.iter().filter(|r| r.kind == PhaseKind::Duty).count();
    assert_eq!(duty, 2 * 7 * 2);
    assert_eq!(
        p.rungs.iter().filter(|r| r.smoothing.is_some()).count(),
        2 * 6 * 2
    );
    assert!(c.supply.is_some() && c.grid.is_some());
    assert!(p.notes.iter().all(|n| !n.contains("no plain entry")));
}

/// Ramp-up steps swing plain: before a mitigated first in-phase rung the
/// plan says so (hostile review: a 2-of-4 step swung 1486 W where the
/// floor-90 rung it led to swung 566 W); before a plain one it says
/// nothing of mitigation.
#[test]
fn ramp_up_steps_before_a_mitigated_rung_are_said_to_swing_plain() {
    let src = campaign("[{ floor_pct = 90 }]").replace(
        "name = \"t\"\n",
        "name = \"t\"\nconfirm_node_swing = true\n",
    );
    let p = expand(&parse_str("m.toml", &src).unwrap(), 4, None).unwrap();
    let steps: Vec<_> = p
        .rungs
        .iter()
        .filter(|r| r.kind == PhaseKind::RampUp)
        .collect();
    assert_eq!(steps.len(), 2, "{:?}", labels(&p));
    assert!(steps.iter().all(|r| r.smoothing.is_none()));
    let note = p
        .notes
        .iter()
        .find(|n| n.contains("swing without"))
        .unwrap_or_else(|| panic!("{:?}", p.notes));
    assert!(
        note.contains("mitigation/p500ms/floor90/in_phase") && note.contains("floor90"),
        "{note}"
    );
    assert!(note.contains("up to 2 GPUs"), "{note}");
    let plain = expand(
        &parse_str(
            "m.toml",
            &campaign("[{}, { floor_pct = 90 }]").replace(
                "name = \"t\"\n",
                "name = \"t\"\nconfirm_node_swing = true\n",
            ),
        )
        .unwrap(),
        4,
        None,
    )
    .unwrap();
    assert!(plain.notes.iter().all(|n| !n.contains("swing without")));
}
