//! Unit tests of the simulated GPU: physics and instruments.

use super::*;
use powerlab_core::units::NS_PER_S;
use powerlab_core::{HwError, Instrument};

fn setup(faults: GpuFaults, record_truth: bool) -> DeviceSetup {
    DeviceSetup {
        profile: Profile::h200(),
        index: 0,
        faults,
        run_start_ns: 0,
        seed: 1,
        node_seed: 1,
        step_us: 250,
        record_truth,
    }
}

fn dev() -> SimDevice {
    SimDevice::new(setup(GpuFaults::default(), true))
}

#[test]
fn sustained_virus_settles_at_the_cap_after_overshooting() {
    let mut d = dev();
    d.set_demand(NS_PER_S, Demand::KeepWarm(LoadKind::Virus));
    d.advance_to(6_000_000_000);
    let t = d.truth().unwrap();
    let peak = t.power_w[1000..1200].iter().cloned().fold(0.0f32, f32::max);
    assert!(peak > 760.0 && peak < 960.0, "overshoot peak {peak}");
    let settled = t.mean_between(4_000_000_000, 6_000_000_000).unwrap();
    assert!((settled - 700.0).abs() < 14.0, "settled {settled}");
    // No context was created: the bare idle before the load.
    let idle = t.mean_between(100_000_000, 900_000_000).unwrap();
    assert!((idle - 60.0).abs() < 1.0, "idle {idle}");
}

#[test]
fn buffered_samples_come_every_20ms_and_are_bounded_by_the_ring() {
    let mut d = dev();
    let s = d.drain_buffered(NS_PER_S).unwrap();
    let n = s
        .iter()
        .filter(|s| s.instrument == Instrument::BufferedW)
        .count();
    assert!((48..=51).contains(&n), "{n} buffered samples in 1 s");
    // Not reading for 5 s loses what the 119-sample ring cannot hold.
    let s = d.drain_buffered(6_000_000_000).unwrap();
    let n = s
        .iter()
        .filter(|s| s.instrument == Instrument::BufferedW)
        .count();
    assert!(
        (117..=119).contains(&n),
        "{n} samples survive in a 119-sample ring"
    );
    assert!(d.buffered_lost > 100);
}

#[test]
fn lost_gpu_reads_fail() {
    let f = GpuFaults {
        lost_at_ns: Some(500_000_000),
        ..Default::default()
    };
    let mut d = SimDevice::new(setup(f, false));
    assert!(d.drain_buffered(400_000_000).is_ok());
    assert!(matches!(
        d.read_instant(600_000_000),
        Err(HwError::DeviceFailed { .. })
    ));
}

#[test]
fn a_staircase_runs_the_level_load_on_its_curve() {
    use powerlab_core::smoothing::Draw;
    let mut d = dev();
    d.create_context(0);
    let step = NS_PER_S / 2;
    let shape = LoadShape::Staircase {
        steps: vec![
            Draw::Level(0.0),
            Draw::Level(0.02),
            Draw::Level(0.1),
            Draw::Level(0.3),
            Draw::Work,
        ],
        step_ns: step,
    };
    let start = NS_PER_S;
    d.set_demand(
        start,
        Demand::Run {
            shape,
            start,
            end: start + 5 * step,
        },
    );
    d.advance_to(start + 5 * step);
    let t = d.truth().unwrap();
    let mean = |k: i64| {
        t.mean_between(start + k * step + step / 2, start + (k + 1) * step)
            .unwrap()
    };
    let p = Profile::h200();
    // Level 0 is exactly idle; each level on the curve (uncapped here).
    assert!((mean(0) - p.idle_w).abs() < 1.0, "idle {}", mean(0));
    for (k, l) in [(1, 0.02), (2, 0.1), (3, 0.3)] {
        let want = p.level_w(l);
        assert!(
            (mean(k) - want).abs() < 0.02 * want,
            "level {l}: {} vs {want}",
            mean(k)
        );
    }
    // Not linear: level 0.1 already gives well over a tenth of the swing.
    assert!(p.level_w(0.1) - p.idle_w > 0.2 * (p.level_w(1.0) - p.idle_w));
    // The work: at the cap, still settling from its overshoot.
    assert!((mean(4) - p.power_limit_w).abs() < 60.0, "work {}", mean(4));
    assert_eq!(p.level_w(0.0), p.idle_w);
}
