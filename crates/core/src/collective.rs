//! Collective communication (NCCL) vocabulary: which collectives, the sweep a
//! GPU runs, what it measured, and the bandwidth arithmetic of nccl-tests so
//! every backend and the collator report the same numbers the same way.

use crate::units::{ns_f64_to_us, us_to_ns_f64};
use serde::{Deserialize, Serialize};

/// A collective operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Collective {
    /// Sum over all ranks, result everywhere.
    AllReduce,
    /// Every rank's block to every rank.
    AllGather,
    /// Sum, then each rank keeps one block.
    ReduceScatter,
    /// Rank 0's buffer to every rank.
    Broadcast,
}

impl Collective {
    /// Every collective, in report order.
    pub const ALL: [Collective; 4] = [
        Collective::AllReduce,
        Collective::AllGather,
        Collective::ReduceScatter,
        Collective::Broadcast,
    ];

    /// Name used in campaign files and raw files.
    pub fn as_str(self) -> &'static str {
        match self {
            Collective::AllReduce => "all_reduce",
            Collective::AllGather => "all_gather",
            Collective::ReduceScatter => "reduce_scatter",
            Collective::Broadcast => "broadcast",
        }
    }

    /// Parses a name.
    pub fn parse(s: &str) -> Option<Collective> {
        Collective::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// Bus-bandwidth factor of nccl-tests (`PERFORMANCE.md`): all-reduce
    /// 2(n−1)/n; all-gather and reduce-scatter (n−1)/n; broadcast 1 (every
    /// byte crosses one link once, whatever n).
    pub fn bus_factor(self, ranks: usize) -> f64 {
        let n = ranks.max(1) as f64;
        match self {
            Collective::AllReduce => 2.0 * (n - 1.0) / n,
            Collective::AllGather | Collective::ReduceScatter => (n - 1.0) / n,
            Collective::Broadcast => 1.0,
        }
    }

    /// f32 buffer lengths `(send, recv)` on each rank for a message of about
    /// `bytes`, and the message size actually moved (nccl-tests convention:
    /// the whole buffer for all-reduce and broadcast, the gathered or
    /// scattered total for all-gather and reduce-scatter).
    pub fn buffers(self, bytes: u64, ranks: usize) -> (usize, usize, u64) {
        let n = ranks.max(1);
        let elems = (bytes / 4).max(1) as usize;
        match self {
            Collective::AllReduce | Collective::Broadcast => (elems, elems, elems as u64 * 4),
            Collective::AllGather => {
                let per = (elems / n).max(1);
                (per, per * n, (per * n) as u64 * 4)
            }
            Collective::ReduceScatter => {
                let per = (elems / n).max(1);
                (per * n, per, (per * n) as u64 * 4)
            }
        }
    }
}

/// What one GPU runs in a sweep rung.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepSpec {
    /// Collectives, in order.
    pub collectives: Vec<Collective>,
    /// Message sizes, bytes, ascending.
    pub sizes: Vec<u64>,
    /// Untimed iterations per size.
    pub warmup_iters: u32,
    /// Timed iterations per size.
    pub iterations: u32,
    /// A collective that has not completed after this long is a hang.
    pub timeout_ns: i64,
}

/// The fabric load of a fabric or bulk-synchronous rung.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FabricSpec {
    /// All-reduce message size, bytes.
    pub bytes: u64,
    /// Compute burst before every all-reduce (bulk-synchronous rung); None: back-to-back all-reduces.
    pub compute_ns: Option<i64>,
    /// A collective that has not completed after this long is a hang.
    pub timeout_ns: i64,
}

/// One timed measurement of one collective at one size on one rank.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectiveTiming {
    /// Which collective.
    pub collective: Collective,
    /// Message size (nccl-tests convention), bytes.
    pub bytes: u64,
    /// Ranks in the communicator.
    pub ranks: usize,
    /// Timed iterations.
    pub iterations: u32,
    /// Device time of all timed iterations (CUDA events), ns.
    pub elapsed_ns: i64,
    /// Run clock when the timed iterations ended.
    pub ended_ns: i64,
}

impl CollectiveTiming {
    /// Time per operation, µs.
    pub fn time_us(&self) -> f64 {
        ns_f64_to_us(self.elapsed_ns as f64) / f64::from(self.iterations.max(1))
    }
    /// Algorithm bandwidth, GB/s (10^9 bytes per second).
    pub fn algbw_gbs(&self) -> f64 {
        let t = self.time_us();
        if t > 0.0 {
            self.bytes as f64 / us_to_ns_f64(t)
        } else {
            0.0
        }
    }
    /// Bus bandwidth, GB/s.
    pub fn busbw_gbs(&self) -> f64 {
        self.algbw_gbs() * self.collective.bus_factor(self.ranks)
    }
}

/// Target length of one batch of back-to-back all-reduces in a fabric
/// rung: long enough that the agreement between batches is a negligible gap.
pub const FABRIC_BATCH_NS: i64 = 50_000_000;

/// The number of all-reduces one rank proposes for the next batch of a
/// fabric rung, from its own measured time per all-reduce: enough to fill
/// [`FABRIC_BATCH_NS`], or 1 when a compute burst precedes each (the
/// bulk-synchronous rung). Ranks measure different times (a busy host, a
/// late start), so a proposal is never issued as it is: see [`agreed_batch`].
pub fn fabric_batch_proposal(op_ns: i64, bulk_synchronous: bool) -> u32 {
    if bulk_synchronous {
        1
    } else {
        (FABRIC_BATCH_NS / op_ns.max(1)).clamp(1, 10_000) as u32
    }
}

/// The batch every rank issues, from every rank's proposal (0: that rank's
/// window is over): the smallest, so all ranks issue the same number of
/// collectives; None ends the rung on every rank. This is what the
/// one-int all-reduce (min) between batches computes on the GPUs.
pub fn agreed_batch(proposals: impl IntoIterator<Item = u32>) -> Option<u32> {
    proposals.into_iter().min().filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bus_factors_follow_nccl_tests() {
        assert!((Collective::AllReduce.bus_factor(8) - 1.75).abs() < 1e-12);
        assert!((Collective::AllReduce.bus_factor(2) - 1.0).abs() < 1e-12);
        assert!((Collective::AllGather.bus_factor(8) - 0.875).abs() < 1e-12);
        assert!((Collective::ReduceScatter.bus_factor(4) - 0.75).abs() < 1e-12);
        assert!((Collective::Broadcast.bus_factor(8) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn bandwidth_of_one_gib_in_ten_ms() {
        let t = CollectiveTiming {
            collective: Collective::AllReduce,
            bytes: 1 << 30,
            ranks: 8,
            iterations: 20,
            elapsed_ns: 200_000_000,
            ended_ns: 0,
        };
        assert!((t.time_us() - 10_000.0).abs() < 1e-9);
        assert!((t.algbw_gbs() - 107.374_182_4).abs() < 1e-6);
        assert!((t.busbw_gbs() - 107.374_182_4 * 1.75).abs() < 1e-6);
    }

    #[test]
    fn buffers_split_across_ranks() {
        assert_eq!(
            Collective::AllReduce.buffers(1 << 20, 8),
            (1 << 18, 1 << 18, 1 << 20)
        );
        assert_eq!(
            Collective::AllGather.buffers(1 << 20, 8),
            (1 << 15, 1 << 18, 1 << 20)
        );
        assert_eq!(
            Collective::ReduceScatter.buffers(1 << 20, 8),
            (1 << 18, 1 << 15, 1 << 20)
        );
        // Too small to split: one element per rank, and the size says so.
        assert_eq!(Collective::AllGather.buffers(8, 8), (1, 8, 32));
    }

    #[test]
    fn names_round_trip() {
        for c in Collective::ALL {
            assert_eq!(Collective::parse(c.as_str()), Some(c));
        }
        assert_eq!(Collective::parse("alltoall"), None);
    }

    /// A model of a fabric rung's batches across ranks whose own timing
    /// disagrees (`lateness_ns`: how much later than the collective's end
    /// each rank's host notices it, e.g. a saturated CPU). NCCL pairs the
    /// k-th collective of every rank; when ranks issue different numbers of
    /// all-reduces in a batch, one rank's one-int agreement pairs with
    /// another's 1 GiB all-reduce and both wait forever: reported as Err.
    fn fabric_rounds(lateness_ns: &[i64], agree_counts: bool) -> Result<Vec<u32>, String> {
        let true_op_ns = 3_300_000; // 1 GiB all-reduce on 2 × H200
        let window_ns = 2_000_000_000;
        let mut op_est: Vec<i64> = vec![5_000_000; lateness_ns.len()];
        let (mut t, mut issued) = (0i64, Vec::new());
        loop {
            let proposals: Vec<u32> = op_est
                .iter()
                .map(|&op| {
                    let n = fabric_batch_proposal(op, false);
                    let step = op * i64::from(n);
                    if t + step <= window_ns + step / 2 {
                        n
                    } else {
                        0
                    }
                })
                .collect();
            let counts: Vec<u32> = if agree_counts {
                match agreed_batch(proposals.iter().copied()) {
                    Some(n) => vec![n; proposals.len()],
                    None => return Ok(issued),
                }
            } else {
                // Before: the ranks agreed only whether to go on, and each
                // issued its own proposal.
                if proposals.contains(&0) {
                    return Ok(issued);
                }
                proposals
            };
            if counts.iter().any(|&c| c != counts[0]) {
                return Err(format!(
                    "batch {}: ranks issued {counts:?} all-reduces: the collectives no longer pair up",
                    issued.len()
                ));
            }
            let n = counts[0];
            t += true_op_ns * i64::from(n);
            for (est, late) in op_est.iter_mut().zip(lateness_ns) {
                *est = ((true_op_ns * i64::from(n) + late) / i64::from(n)).max(1000);
            }
            issued.push(n);
        }
    }

    #[test]
    fn a_rank_with_skewed_timing_hung_the_fabric_rung_and_agreed_batches_do_not() {
        // Equal timing: both rules issue equal batches to the window's end.
        let even = fabric_rounds(&[0, 0], false).unwrap();
        assert_eq!(even, fabric_rounds(&[0, 0], true).unwrap());
        assert!(even.len() > 10, "{even:?}");
        // One rank notices each batch's end 4 ms late (a busy host): with
        // proposals issued as they are, the ranks' counts diverge.
        let before = fabric_rounds(&[0, 4_000_000], false);
        assert!(before.is_err(), "{before:?}");
        // Agreed batches: every batch is the same on both ranks, and the
        // rung still fills its window.
        let after = fabric_rounds(&[0, 4_000_000], true).unwrap();
        let issued: u32 = after.iter().sum();
        assert!(issued > 500, "{after:?}");
        assert_eq!(agreed_batch([15, 0, 12]), None);
        assert_eq!(agreed_batch([15, 13, 12]), Some(12));
    }
}
