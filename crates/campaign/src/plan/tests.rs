//! Unit tests of the planner: ramp-up steps and rack offsets.

use super::*;
use crate::model::{Mode, PhaseKind};
use powerlab_core::units::ns_to_ms;

fn staggered(rack: &str, offsets: &str) -> Campaign {
    let text = format!(
        "[campaign]\nname = \"r\"\nconfirm_node_swing = true\n{rack}\n[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiod_ms = 800\nduration_s = 2\nmode = \"staggered\"\n{offsets}\n"
    );
    crate::parse_str("r.toml", &text).unwrap()
}

fn offsets_ms(c: &Campaign, gpus: usize, rank: usize, nodes: usize) -> Vec<f64> {
    let p = expand_on_rack(c, gpus, None, RackPosition { rank, nodes }).unwrap();
    p.rungs[0].offsets_ns.iter().map(|o| ns_to_ms(*o)).collect()
}

/// A staggered and an in-phase rung at 500 ms, then an in-phase one at
/// 100 ms; `header` goes into `[campaign]`.
fn swings(header: &str) -> Campaign {
    let text = format!(
        "[campaign]\nname = \"r\"\nconfirm_node_swing = true\n{header}\n[[phase]]\nkind = \"idle\"\nduration_s = 2\n[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiods_ms = [500, 100]\nduration_s = 20\nmodes = [\"staggered\", \"in_phase\"]\n"
    );
    crate::parse_str("r.toml", &text).unwrap()
}

fn labels(p: &Plan) -> Vec<&str> {
    p.rungs.iter().map(|r| r.label.as_str()).collect()
}

#[test]
fn ramp_up_steps_1_2_4_precede_the_first_in_phase_swing_on_8_gpus() {
    let p = expand(&swings(""), 8, None).unwrap();
    assert_eq!(
        labels(&p),
        vec![
            "idle-0/no-context",
            "idle-0",
            "d/p500ms/staggered",
            "rampup/1of8/p500ms",
            "rampup/2of8/p500ms",
            "rampup/4of8/p500ms",
            "d/p500ms/in_phase",
            "d/p100ms/staggered",
            "d/p100ms/in_phase",
        ]
    );
    let target = &p.rungs[6];
    for (step, k) in p.rungs[3..6].iter().zip([1usize, 2, 4]) {
        assert_eq!(step.kind, PhaseKind::RampUp);
        assert_eq!(step.mode, Mode::InPhase);
        assert_eq!(step.swinging, Some((0..k).collect::<Vec<_>>()));
        assert!((0..8).all(|i| step.loads_gpu(i) == (i < k)));
        assert_eq!(step.period_ms, target.period_ms);
        assert_eq!(step.duty, target.duty);
        assert_eq!(step.warmup_ns, target.warmup_ns);
        // max(5 s, 3 × 500 ms) = 5 s, shorter than the rung's 20 s.
        assert_eq!(step.duration_ns, 5_000_000_000);
    }
    // Ids follow the run order; no other rung is marked.
    assert!(p.rungs.iter().enumerate().all(|(i, r)| r.id == i as u32));
    assert!(
        p.rungs
            .iter()
            .filter(|r| r.kind != PhaseKind::RampUp)
            .all(|r| r.swinging.is_none() && r.loads_gpu(7))
    );
    assert!(
        p.notes
            .iter()
            .any(|n| n.starts_with("ramp-up: 1, 2, 4 of 8"))
    );
    let table = render(&p);
    assert!(
        table.contains("[0.000, 0.000, idle, idle, idle, idle, idle, idle]"),
        "{table}"
    );
}

#[test]
fn ramp_up_follows_the_gpu_count_and_the_campaign_key() {
    let steps = |c: &Campaign, n: usize| -> Vec<String> {
        expand(c, n, None)
            .unwrap()
            .rungs
            .iter()
            .filter(|r| r.kind == PhaseKind::RampUp)
            .map(|r| r.label.clone())
            .collect()
    };
    let default = swings("");
    assert_eq!(
        steps(&default, 3),
        vec!["rampup/1of3/p500ms", "rampup/2of3/p500ms"]
    );
    assert!(steps(&default, 2).is_empty());
    assert!(steps(&default, 1).is_empty());
    assert_eq!(steps(&default, 16).len(), 4);
    let off = swings("ramp_up = false");
    assert!(steps(&off, 8).is_empty());
    assert_eq!(
        expand(&off, 8, None).unwrap().rungs.len(),
        expand(&default, 8, None).unwrap().rungs.len() - 3
    );
    let on = swings("ramp_up = true");
    assert_eq!(steps(&on, 2), vec!["rampup/1of2/p500ms"]);
    assert!(steps(&on, 1).is_empty());
    // Long periods: three of them, but never longer than the rung's window.
    let long = crate::parse_str(
        "r.toml",
        "[campaign]\nname = \"r\"\nconfirm_node_swing = true\n[[phase]]\nkind = \"duty\"\nperiod_ms = 4000\nduration_s = 10\nexact_period = true\n",
    )
    .unwrap();
    let p = expand(&long, 4, None).unwrap();
    assert_eq!(p.rungs[0].duration_ns, 10_000_000_000);
    let long = crate::parse_str(
        "r.toml",
        "[campaign]\nname = \"r\"\nconfirm_node_swing = true\n[[phase]]\nkind = \"duty\"\nperiod_ms = 4000\nduration_s = 60\nexact_period = true\n",
    )
    .unwrap();
    assert_eq!(
        expand(&long, 4, None).unwrap().rungs[0].duration_ns,
        12_000_000_000
    );
}

#[test]
fn no_ramp_up_without_an_in_phase_swing_nor_across_a_rack() {
    let staggered_only = staggered("", "");
    let p = expand(&staggered_only, 8, None).unwrap();
    assert!(p.rungs.iter().all(|r| r.kind != PhaseKind::RampUp));
    let rack = expand_on_rack(&swings(""), 4, None, RackPosition { rank: 1, nodes: 2 }).unwrap();
    assert!(rack.rungs.iter().all(|r| r.kind != PhaseKind::RampUp));
    assert!(
        rack.notes
            .iter()
            .any(|n| n.starts_with("no ramp-up of swing depth in a rack run")),
        "{:?}",
        rack.notes
    );
    let e = expand_on_rack(
        &swings("ramp_up = true"),
        4,
        None,
        RackPosition { rank: 0, nodes: 2 },
    )
    .unwrap_err();
    assert_eq!(e.field.as_deref(), Some("campaign.ramp_up"));
}

#[test]
fn gpu_stagger_numbers_every_gpu_of_the_rack() {
    let c = staggered("", "");
    assert_eq!(offsets_ms(&c, 2, 0, 1), vec![0.0, 400.0]);
    // 4 nodes × 2 GPUs: node 2 holds global GPUs 4 and 5 of 8.
    assert_eq!(offsets_ms(&c, 2, 2, 4), vec![400.0, 500.0]);
    let step = staggered("", "stagger_step_deg = 45");
    assert_eq!(offsets_ms(&step, 2, 1, 2), vec![200.0, 300.0]);
}

#[test]
fn node_stagger_keeps_a_node_in_phase_and_spreads_the_nodes() {
    let c = staggered("[rack]\nstagger = \"node\"", "");
    assert_eq!(offsets_ms(&c, 3, 0, 4), vec![0.0; 3]);
    assert_eq!(offsets_ms(&c, 3, 3, 4), vec![600.0; 3]);
    let listed = staggered("[rack]\nstagger = \"node\"", "offsets_ms = [0, 10, 20]");
    assert_eq!(offsets_ms(&listed, 2, 2, 3), vec![20.0, 20.0]);
    let e = expand_on_rack(&listed, 2, None, RackPosition { rank: 0, nodes: 4 }).unwrap_err();
    assert!(
        e.message
            .contains("3 offsets are given for 4 nodes of the rack"),
        "{e}"
    );
}

#[test]
fn an_in_phase_rack_swing_needs_consent_and_a_rank_must_exist() {
    let text =
        "[campaign]\nname = \"r\"\n[[phase]]\nkind = \"duty\"\nperiod_ms = 100\nduration_s = 2\n";
    let c = crate::parse_str("r.toml", text).unwrap();
    assert!(expand_on_rack(&c, 2, None, RackPosition { rank: 0, nodes: 1 }).is_ok());
    let e = expand_on_rack(&c, 2, None, RackPosition { rank: 0, nodes: 4 }).unwrap_err();
    assert!(e.message.contains("8 GPUs swings the whole rack"), "{e}");
    assert!(expand_on_rack(&c, 2, None, RackPosition { rank: 4, nodes: 4 }).is_err());
}
