//! The simulated training job: what stands in for a workload phase's
//! command on the simulated node. One iteration is a compute pass (forward
//! and backward, at `compute_level`), an optimizer step at its end (at
//! `optimizer_level` for `optimizer_ms`), then communication (idle, or
//! streaming at `comm_level`) until the next iteration starts. Each
//! iteration starts `jitter_pct` % of the period early or late (not
//! accumulated: the mean period is the declared one), and its compute pass
//! is as much longer or shorter, as a real job's steps are.
//!
//! The defaults look like the 12-layer bf16 transformer measured on one
//! H200 (issue 46): a 139 ms step, then idle to 241.7 ms (a period off
//! the 20 ms sampling grid, as a real job's is: one locked to it would
//! show the sampler only some of its phases).

use crate::smoothing::Draw;
use crate::units::{EpochNs, NS_PER_MS};
use serde::{Deserialize, Serialize};

/// What a GPU does between compute passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum CommKind {
    /// It waits (all-reduce latency, a data loader): near idle.
    #[default]
    Idle,
    /// It streams (an all-reduce of large buckets, HBM copies).
    Stream,
}

impl CommKind {
    /// Name as written in campaign files.
    pub fn as_str(self) -> &'static str {
        match self {
            CommKind::Idle => "idle",
            CommKind::Stream => "stream",
        }
    }
}

/// A simulated training job's shape (a workload phase's `sim` keys).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TrainingSpec {
    /// Mean iteration period, ns.
    pub iteration_ns: i64,
    /// The compute pass's share of the period (optimizer included), (0, 1].
    pub compute_fraction: f64,
    /// The compute pass's draw as a level of the power virus's (1: the
    /// virus itself, held by the power cap).
    pub compute_level: f64,
    /// What the communication part does.
    pub comm: CommKind,
    /// Its draw as a level (0: idle).
    pub comm_level: f64,
    /// Standard spread of each iteration's start and compute length, % of
    /// the period.
    pub jitter_pct: f64,
    /// The optimizer step at the compute pass's end, ms (0: none).
    pub optimizer_ms: f64,
    /// Its draw as a level.
    pub optimizer_level: f64,
    /// Seed of the jitter.
    pub seed: u64,
}

impl Default for TrainingSpec {
    fn default() -> Self {
        TrainingSpec {
            iteration_ns: 241_700_000,
            compute_fraction: 0.575,
            compute_level: 1.0,
            comm: CommKind::Idle,
            comm_level: 0.0,
            jitter_pct: 1.0,
            optimizer_ms: 12.0,
            optimizer_level: 0.55,
            seed: 46,
        }
    }
}

/// A number in [-1, 1] drawn from `seed` and `k` (a hash: the same
/// iteration always jitters the same way).
fn unit(seed: u64, k: i64, salt: u64) -> f64 {
    let mut x = seed ^ (k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    (x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

impl TrainingSpec {
    /// The largest shift of an iteration's start, ns: three standard
    /// spreads of a uniform draw, at most a tenth of the period.
    fn shift_ns(&self, k: i64) -> i64 {
        let sd = self.jitter_pct.max(0.0) / 100.0 * self.iteration_ns as f64;
        // A uniform draw on [-a, a] has standard spread a / √3.
        let a = (sd * 3f64.sqrt()).min(0.1 * self.iteration_ns as f64);
        (a * unit(self.seed, k, 1)).round() as i64
    }

    /// When iteration `k` starts, with the job's origin at `origin_ns`.
    pub fn iteration_start_ns(&self, origin_ns: EpochNs, k: i64) -> EpochNs {
        origin_ns + k * self.iteration_ns + self.shift_ns(k)
    }

    /// Iteration `k`'s compute pass, ns (optimizer included).
    pub fn compute_ns(&self, k: i64) -> i64 {
        let sd = self.jitter_pct.max(0.0) / 100.0 * self.iteration_ns as f64;
        let a = (sd * 3f64.sqrt()).min(0.1 * self.iteration_ns as f64);
        let base = self.compute_fraction.clamp(0.0, 1.0) * self.iteration_ns as f64;
        (base + a * unit(self.seed, k, 2))
            .clamp(0.0, 0.98 * self.iteration_ns as f64)
            .round() as i64
    }

    /// When a job whose iteration 0 starts at `origin_ns` and whose time
    /// is up at `t` exits: it checks its time as each iteration starts
    /// (as `scripts/device/train_loop.py --duration-s` does), so it
    /// finishes the iteration `t` falls in and exits at the first
    /// iteration start at or after `t`.
    pub fn exit_ns(&self, origin_ns: EpochNs, t: EpochNs) -> EpochNs {
        let period = self.iteration_ns.max(1);
        // The shifts are under a tenth of the period: one step back
        // from the nearest whole period covers them.
        let mut k = ((t - origin_ns).div_euclid(period) - 1).max(0);
        while self.iteration_start_ns(origin_ns, k) < t {
            k += 1;
        }
        self.iteration_start_ns(origin_ns, k)
    }

    /// What the GPU draws at `t` of a job whose iteration 0 starts at
    /// `origin_ns`.
    pub fn draw_at(&self, origin_ns: EpochNs, t: EpochNs) -> Draw {
        if self.compute_fraction >= 1.0 {
            return self.compute_draw();
        }
        let period = self.iteration_ns.max(1);
        let mut k = (t - origin_ns).div_euclid(period);
        // The shifts are under a tenth of the period: the iteration is
        // this one or a neighbour.
        while t < self.iteration_start_ns(origin_ns, k) {
            k -= 1;
        }
        while t >= self.iteration_start_ns(origin_ns, k + 1) {
            k += 1;
        }
        let into = t - self.iteration_start_ns(origin_ns, k);
        let compute = self.compute_ns(k);
        let optimizer = (self.optimizer_ms.max(0.0) * NS_PER_MS as f64) as i64;
        if into < compute - optimizer.min(compute) {
            self.compute_draw()
        } else if into < compute {
            Draw::Level(self.optimizer_level)
        } else {
            Draw::Level(self.comm_level)
        }
    }

    fn compute_draw(&self) -> Draw {
        if self.compute_level >= 1.0 {
            Draw::Work
        } else {
            Draw::Level(self.compute_level)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iterations_follow_one_another_and_keep_the_mean_period() {
        let s = TrainingSpec::default();
        let starts: Vec<i64> = (0..2000).map(|k| s.iteration_start_ns(0, k)).collect();
        assert!(starts.windows(2).all(|w| w[1] > w[0]));
        let mean = (starts[1999] - starts[0]) as f64 / 1999.0;
        assert!((mean / s.iteration_ns as f64 - 1.0).abs() < 1e-3, "{mean}");
        let d: Vec<f64> = starts.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let m = d.iter().sum::<f64>() / d.len() as f64;
        let sd = (d.iter().map(|x| (x - m).powi(2)).sum::<f64>() / d.len() as f64).sqrt();
        // Two independent starts: √2 × 1 % of the period.
        let want = 2f64.sqrt() * 0.01 * s.iteration_ns as f64;
        assert!((sd / want - 1.0).abs() < 0.15, "{sd} vs {want}");
    }

    #[test]
    fn an_iteration_computes_then_steps_the_optimizer_then_communicates() {
        let s = TrainingSpec {
            jitter_pct: 0.0,
            ..TrainingSpec::default()
        };
        let ms = |x: f64| (x * NS_PER_MS as f64) as i64;
        assert_eq!(s.draw_at(0, ms(10.0)), Draw::Work);
        assert_eq!(s.draw_at(0, ms(130.0)), Draw::Level(0.55));
        assert_eq!(s.draw_at(0, ms(200.0)), Draw::Level(0.0));
        assert_eq!(s.draw_at(0, ms(250.0)), Draw::Work);
        assert_eq!(s.draw_at(0, ms(-10.0)), Draw::Level(0.0));
    }

    #[test]
    fn a_job_whose_time_is_up_finishes_its_iteration_then_exits() {
        let s = TrainingSpec {
            jitter_pct: 0.0,
            ..TrainingSpec::default()
        };
        let p = s.iteration_ns;
        assert_eq!(s.exit_ns(0, 10), p);
        assert_eq!(s.exit_ns(0, p - 1), p);
        assert_eq!(s.exit_ns(0, p), p);
        assert_eq!(s.exit_ns(0, p + 1), 2 * p);
        assert_eq!(s.exit_ns(1_000, -5_000), 1_000);
        let j = TrainingSpec::default();
        for t in [3 * p + 7, 40 * p + p / 2] {
            let e = j.exit_ns(0, t);
            assert!(e >= t && e - t <= p + p / 5, "{t} -> {e}");
        }
    }
}
