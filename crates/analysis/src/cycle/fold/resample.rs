//! Every bootstrap replicate's bins and mean of one GPU's fold, all at
//! once.
//!
//! One replicate's bin sums and mean are running sums over the fold's
//! points, each addition waiting on the one before: a chain the core
//! cannot overlap, about a third of a 4-hour 8-GPU run's cycle
//! composition. Here the replicates sit side by side, so that each point
//! adds into every replicate's sums in one pass the core can run in
//! parallel lanes. Each replicate's sums are still added in the points'
//! order, exactly as [`binned`](super::binned) and
//! [`GpuFold::mean`](super::GpuFold::mean) add them, so every figure is the
//! same bit for bit: a block a replicate did not draw adds 0 to its sums
//! (where the one-at-a-time sums skip it), which leaves a sum as it was
//! (readings are finite, and a sum that starts at +0 never becomes −0).

use super::GpuFold;
use crate::fft::Planner;

/// Every replicate's bin sums, bin counts and mean of one fold.
pub(in crate::cycle) struct Resampled {
    /// Bins per replicate.
    bins: usize,
    /// Replicate r's bins at `r * bins ..`.
    sum: Vec<f64>,
    /// As `sum`.
    cnt: Vec<f64>,
    /// Each replicate's mean (see [`GpuFold::mean`]).
    mean: Vec<Option<f64>>,
}

impl GpuFold {
    /// The bins and mean of `reps` replicates: `weights[block * reps + r]`
    /// is replicate r's weight of a block (every block of the fold).
    pub(in crate::cycle) fn resampled(&self, weights: &[f64], reps: usize) -> Resampled {
        let lane = |i: usize| i * reps..(i + 1) * reps;
        let mut sum = vec![0.0; self.bins * reps];
        let mut cnt = vec![0.0; self.bins * reps];
        let mut start = 0;
        for &(block, end) in &self.placed.runs {
            let w = &weights[lane(block)];
            for p in &self.placed.items[start..end] {
                let at = lane(p.bin as usize);
                for ((s, c), w) in sum[at.clone()].iter_mut().zip(&mut cnt[at]).zip(w) {
                    *s += w * p.value;
                    *c += w;
                }
            }
            start = end;
        }
        let (mut s, mut n) = (vec![0.0; reps], vec![0.0; reps]);
        let mut start = 0;
        for &(block, end) in &self.whole.runs {
            let w = &weights[lane(block)];
            for p in &self.whole.items[start..end] {
                for ((s, n), w) in s.iter_mut().zip(&mut n).zip(w) {
                    let w = w * p.span_ns;
                    *s += w * p.value;
                    *n += w;
                }
            }
            start = end;
        }
        let mean = s
            .iter()
            .zip(&n)
            .map(|(s, n)| (*n > 0.0).then(|| s / n))
            .collect();
        Resampled {
            bins: self.bins,
            sum: by_replicate(&sum, reps),
            cnt: by_replicate(&cnt, reps),
            mean,
        }
    }

    /// Replicate `r`'s cycle (see [`GpuFold::values`]) from `resampled`.
    pub(in crate::cycle) fn replicate_values(
        &self,
        planner: &mut Planner,
        resampled: &Resampled,
        r: usize,
    ) -> Vec<f64> {
        let at = r * resampled.bins..(r + 1) * resampled.bins;
        let (sum, cnt) = (&resampled.sum[at.clone()], &resampled.cnt[at]);
        self.shaped(planner, sum, cnt, resampled.mean[r], true)
    }
}

/// `by_bin` (bin b of replicate r at `b * reps + r`) laid replicate by
/// replicate (at `r * bins + b`), so that each replicate's bins are read
/// as one slice.
fn by_replicate(by_bin: &[f64], reps: usize) -> Vec<f64> {
    let reps = reps.max(1);
    let bins = by_bin.len() / reps;
    let mut out = vec![0.0; by_bin.len()];
    for (b, row) in by_bin.chunks_exact(reps).enumerate() {
        for (r, v) in row.iter().enumerate() {
            out[r * bins + b] = *v;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
    use super::super::fold_gpu;
    use crate::fft::Planner;
    use powerlab_samples::load::RungWindow;
    use proptest::prelude::*;

    /// A 100 ms duty rung measured from 1 s to 9 s (80 cycles).
    fn window() -> RungWindow {
        let info = serde_json::from_str(
            r#"{"id":3,"label":"d/p100ms/in_phase","phase":"d","kind":"duty","mode":"in_phase","period_ms":100.0,"duty":0.5,"repeat":1,"repeats":1}"#,
        )
        .unwrap();
        RungWindow {
            info,
            epoch_ns: 0,
            measure_from_ns: 1_000_000_000,
            end_ns: 9_000_000_000,
            stopped_from_ns: None,
            records_end: false,
            offsets_ns: vec![0],
            start_error_ns: None,
            barrier_ok: None,
            lead_ns: None,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

        /// Every replicate's cycle from the bins of all replicates at once
        /// is the one binned for that replicate alone, bit for bit, whatever
        /// the draw (blocks drawn no time, once or many times).
        #[test]
        fn all_replicates_at_once_give_each_replicate_bit_for_bit(
            jitter in prop::collection::vec(0i64..3_000_000, 500),
            noise in prop::collection::vec(-30.0f64..30.0, 500),
            draws in prop::collection::vec(0usize..1_000, 81 * 7),
        ) {
            // Samples 20 ms apart (with jitter), on 300 W, off 100 W.
            let samples: Vec<(i64, f64)> = jitter
                .iter()
                .zip(&noise)
                .enumerate()
                .map(|(k, (j, n))| {
                    let t = 1_000_000_000 + k as i64 * 17_000_000 + j;
                    let on = (t % 100_000_000) < 50_000_000;
                    (t, if on { 300.0 } else { 100.0 } + n)
                })
                .collect();
            let rises: Vec<i64> = (0..100).map(|k| k * 100_000_000 + 250_000).collect();
            let fold = fold_gpu(&samples, &rises, &window(), "gpu0", 6.0, 1.0).unwrap();
            let (blocks, reps) = (fold.blocks(), 7);
            // Replicate r draws blocks from its own slice of `draws`.
            let mut weights = vec![0.0; blocks * reps];
            for r in 0..reps {
                for d in &draws[r * 81..r * 81 + blocks] {
                    weights[(d % blocks) * reps + r] += 1.0;
                }
            }
            let all = fold.resampled(&weights, reps);
            let mut planner = Planner::new();
            for r in 0..reps {
                let one: Vec<f64> = (0..blocks).map(|b| weights[b * reps + r]).collect();
                let alone = fold.values(&mut planner, Some(&one), true);
                let batched = fold.replicate_values(&mut planner, &all, r);
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                prop_assert_eq!(bits(&batched), bits(&alone), "replicate {}", r);
            }
        }
    }
}
