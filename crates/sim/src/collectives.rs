//! The simulated fabric: how long a collective takes (a latency plus the
//! bus bytes over the profile's bus bandwidth, the model behind nccl-tests'
//! busbw) and what a sweep or fabric rung reports. No numbers here are
//! measurements; the H200 profile's bandwidth is set near what the lent
//! 2 × H200 machine showed so simulated tables look like real ones.

use crate::profile::Profile;
use powerlab_core::collective::{Collective, CollectiveTiming, FabricSpec, SweepSpec};
use powerlab_core::units::{us_to_ns_f64, us_to_ns_trunc};

/// Device time of one collective of `bytes` over `ranks` GPUs, ns.
pub fn op_ns(p: &Profile, c: Collective, bytes: u64, ranks: usize) -> i64 {
    if ranks <= 1 {
        return us_to_ns_trunc(p.collective_latency_us);
    }
    let (_, _, moved) = c.buffers(bytes, ranks);
    let bus_bytes = moved as f64 * c.bus_factor(ranks);
    (us_to_ns_f64(p.collective_latency_us) + bus_bytes / p.fabric_busbw_gbs) as i64
}

/// The sweep as the simulated GPU runs it from `start`: the timings of every
/// (collective, size) step that ends before `end`, and when the last one ended.
pub fn run_sweep(
    p: &Profile,
    spec: &SweepSpec,
    ranks: usize,
    start: i64,
    end: i64,
) -> (Vec<CollectiveTiming>, i64) {
    let mut t = start;
    let mut out = Vec::new();
    for &c in &spec.collectives {
        for &size in &spec.sizes {
            let op = op_ns(p, c, size, ranks);
            let step = op * i64::from(spec.warmup_iters + spec.iterations);
            if t + step > end {
                return (out, t);
            }
            t += step;
            let (_, _, moved) = c.buffers(size, ranks);
            out.push(CollectiveTiming {
                collective: c,
                bytes: moved,
                ranks,
                iterations: spec.iterations,
                elapsed_ns: op * i64::from(spec.iterations),
                ended_ns: t,
            });
        }
    }
    (out, t)
}

/// A fabric rung of back-to-back all-reduces over `[start, end)`: the
/// iterations that fit, as one timing.
pub fn run_fabric(
    p: &Profile,
    spec: &FabricSpec,
    ranks: usize,
    start: i64,
    end: i64,
) -> Vec<CollectiveTiming> {
    let op = op_ns(p, Collective::AllReduce, spec.bytes, ranks).max(1);
    let step = op + spec.compute_ns.unwrap_or(0);
    let n = ((end - start) / step.max(1)).max(0);
    if spec.compute_ns.is_some() || n == 0 {
        return Vec::new();
    }
    let (_, _, moved) = Collective::AllReduce.buffers(spec.bytes, ranks);
    vec![CollectiveTiming {
        collective: Collective::AllReduce,
        bytes: moved,
        ranks,
        iterations: n as u32,
        elapsed_ns: op * n,
        ended_ns: start + op * n,
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_messages_reach_the_profile_bus_bandwidth() {
        let p = Profile::h200();
        let t = CollectiveTiming {
            collective: Collective::AllReduce,
            bytes: 1 << 30,
            ranks: 8,
            iterations: 1,
            elapsed_ns: op_ns(&p, Collective::AllReduce, 1 << 30, 8),
            ended_ns: 0,
        };
        assert!(
            (t.busbw_gbs() / p.fabric_busbw_gbs - 1.0).abs() < 0.01,
            "{}",
            t.busbw_gbs()
        );
        // Small messages are latency-bound.
        let small = op_ns(&p, Collective::AllReduce, 8, 8);
        assert!((small as f64 - p.collective_latency_us * 1e3).abs() < 100.0);
    }

    #[test]
    fn a_sweep_stops_at_the_window_end() {
        let p = Profile::h200();
        let spec = SweepSpec {
            collectives: vec![Collective::AllReduce],
            sizes: (0..30).map(|k| 8u64 << k).collect(),
            warmup_iters: 5,
            iterations: 20,
            timeout_ns: 1,
        };
        let (all, _) = run_sweep(&p, &spec, 2, 0, i64::MAX / 2);
        assert_eq!(all.len(), 30);
        let (cut, ended) = run_sweep(&p, &spec, 2, 0, 50_000_000);
        assert!(cut.len() < 30 && !cut.is_empty());
        assert!(ended <= 50_000_000);
    }
}
