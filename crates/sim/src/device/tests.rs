//! Unit tests of the simulated GPU: physics and instruments.

use super::*;
use powerlab_core::HwError;
use powerlab_core::units::NS_PER_S;

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
