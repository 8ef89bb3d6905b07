//! When a simulated instrument takes its readings, shaped after the H200's
//! driver-buffered samples (results/h200x2-2026-11-30): each GPU samples on
//! an exact grid (20.000 ms) with its own phase and a few ppm of clock
//! drift; single readings land ~3 ms early or late now and then (17 and
//! 23 ms spacings are common around the 20 ms mean), a few are further off;
//! and the driver now and then drops a reading on every GPU of the node at
//! the same moment (44–47 ms gaps on all GPUs at once).

use powerlab_core::units::{ms_to_ns_f64, ms_to_ns_trunc, ppm_to_fraction, secs_to_ns_trunc};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Reading times of one instrument of one GPU.
#[derive(Debug, Clone)]
pub struct SampleClock {
    origin_ns: i64,
    period_ns: f64,
    k: i64,
    jitter_ms: f64,
    rng: ChaCha8Rng,
    drops: Option<DropSchedule>,
    next_ns: i64,
}

impl SampleClock {
    /// A clock on a grid of `period_ms` from `origin_ns` (the GPU's own
    /// phase), running `drift_ppm` fast, with readings displaced by about
    /// ±`jitter_ms` now and then, and the node's dropped readings.
    pub fn new(
        origin_ns: i64,
        period_ms: f64,
        drift_ppm: f64,
        jitter_ms: f64,
        seed: u64,
        drops: Option<DropSchedule>,
    ) -> Self {
        let mut c = SampleClock {
            origin_ns,
            period_ns: ms_to_ns_f64(period_ms) * (1.0 + ppm_to_fraction(drift_ppm)),
            k: 0,
            jitter_ms,
            rng: ChaCha8Rng::seed_from_u64(seed),
            drops,
            next_ns: origin_ns,
        };
        c.next_ns = c.take();
        c
    }

    /// The time of the next reading.
    pub fn peek(&self) -> i64 {
        self.next_ns
    }

    /// Moves on to the reading after the current one.
    pub fn advance(&mut self) {
        self.next_ns = self.take();
    }

    fn take(&mut self) -> i64 {
        loop {
            let grid = self.origin_ns + (self.k as f64 * self.period_ns).round() as i64;
            self.k += 1;
            let u: f64 = self.rng.random();
            let small = (self.rng.random::<f64>() - 0.5) * 0.6;
            let jitter_ms = if self.jitter_ms <= 0.0 {
                0.0
            } else if u < 0.64 {
                small
            } else if u < 0.82 {
                -self.jitter_ms + small
            } else if u < 0.98 {
                self.jitter_ms + small
            } else {
                (self.rng.random::<f64>() - 0.5) * 4.0 * self.jitter_ms
            };
            let t = grid + ms_to_ns_trunc(jitter_ms);
            if let Some(d) = self.drops.as_mut()
                && d.drops(t, self.period_ns as i64)
            {
                continue;
            }
            return t;
        }
    }
}

/// The moments at which the node's driver drops a reading: the same
/// sequence for every GPU of the node (it is drawn from the node's seed).
#[derive(Debug, Clone)]
pub struct DropSchedule {
    rng: ChaCha8Rng,
    rate_per_s: f64,
    next_ns: i64,
}

impl DropSchedule {
    /// Drops at `rate_per_s` on average from `start_ns` on.
    pub fn new(node_seed: u64, start_ns: i64, rate_per_s: f64) -> Self {
        let mut s = DropSchedule {
            rng: ChaCha8Rng::seed_from_u64(node_seed ^ 0xD509_D509_D509_D509),
            rate_per_s,
            next_ns: start_ns,
        };
        s.next_ns = s.after(start_ns);
        s
    }

    fn after(&mut self, t: i64) -> i64 {
        if self.rate_per_s <= 0.0 {
            return i64::MAX;
        }
        let u: f64 = self.rng.random::<f64>().max(1e-12);
        t + secs_to_ns_trunc(-u.ln() / self.rate_per_s)
    }

    /// Whether the reading at `t` is the first one at or after a drop
    /// moment (each GPU loses the reading that follows the moment).
    fn drops(&mut self, t: i64, period_ns: i64) -> bool {
        if t < self.next_ns {
            return false;
        }
        let hit = t - self.next_ns < 2 * period_ns;
        self.next_ns = self.after(self.next_ns.max(t - period_ns));
        hit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_keep_to_the_grid_with_jitter_and_shared_drops() {
        let drops = || Some(DropSchedule::new(7, 0, 0.5));
        let mut a = SampleClock::new(3_000_000, 20.0, 0.0, 3.0, 1, drops());
        let mut b = SampleClock::new(17_000_000, 20.0, 0.0, 3.0, 2, drops());
        let times = |c: &mut SampleClock| -> Vec<i64> {
            let mut v = Vec::new();
            while c.peek() < 60_000_000_000 {
                v.push(c.peek());
                c.advance();
            }
            v
        };
        let (ta, tb) = (times(&mut a), times(&mut b));
        let gaps = |t: &[i64]| -> Vec<i64> { t.windows(2).map(|w| w[1] - w[0]).collect() };
        let ga = gaps(&ta);
        // Mostly 20 ms, and 17 and 23 ms spacings are common.
        let near = |g: &[i64], ms: i64| {
            g.iter()
                .filter(|x| (**x - ms * 1_000_000).abs() < 700_000)
                .count()
        };
        assert!(near(&ga, 20) > ga.len() / 3, "{}", near(&ga, 20));
        assert!(near(&ga, 17) > ga.len() / 20 && near(&ga, 23) > ga.len() / 20);
        // Phases stay on the grid: no drift at 0 ppm.
        let median_phase = {
            let mut p: Vec<i64> = ta.iter().map(|t| t.rem_euclid(20_000_000)).collect();
            p.sort_unstable();
            p[p.len() / 2]
        };
        assert!((median_phase - 3_000_000).abs() < 400_000, "{median_phase}");
        // Drops: long gaps on both GPUs at the same moments.
        let long = |t: &[i64]| -> Vec<i64> {
            t.windows(2)
                .filter(|w| w[1] - w[0] > 35_000_000)
                .map(|w| w[0])
                .collect()
        };
        let (la, lb) = (long(&ta), long(&tb));
        assert!(la.len() >= 15, "{} drops in 60 s at 0.5/s", la.len());
        let shared = la
            .iter()
            .filter(|x| lb.iter().any(|y| (*y - **x).abs() < 30_000_000))
            .count();
        assert!(
            shared * 10 >= la.len() * 8,
            "{shared} of {} drops shared",
            la.len()
        );
    }
}
