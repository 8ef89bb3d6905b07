//! Cross-node clock offsets from ping-pong round trips (the NTP estimate):
//! rank 0 stamps a ping at `t0`, the peer answers with its own clock `t1`,
//! rank 0 stamps the answer at `t2`. If the two legs took equal time the
//! peer's offset is `t1 − (t0 + t2)/2`, wrong by at most half the round
//! trip; the round with the shortest trip is the least disturbed one.

use serde::{Deserialize, Serialize};

/// One ping-pong, all in ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockSample {
    /// Rank 0's clock when it sent the ping.
    pub t0_ns: i64,
    /// The peer's clock when it answered.
    pub t1_ns: i64,
    /// Rank 0's clock when the answer arrived.
    pub t2_ns: i64,
}

/// A node's realtime clock against rank 0's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClockOffset {
    /// The rank whose clock this is.
    pub rank: usize,
    /// Peer clock minus rank 0's clock, ns (positive: the node is ahead).
    pub offset_ns: i64,
    /// Round trip of the round used, ns; the offset is uncertain by half of it.
    pub rtt_ns: i64,
    /// Rounds measured.
    pub rounds: usize,
}

impl ClockOffset {
    /// Whether the clock is off by more than `tolerance_ns` beyond doubt:
    /// the offset exceeds it by more than the measurement's uncertainty
    /// (half the shortest round trip). On a loaded host the round trips of
    /// the exchange grow to milliseconds; a midpoint estimate that far off
    /// is the exchange's asymmetry, not the clock.
    pub fn exceeds(&self, tolerance_ns: i64) -> bool {
        self.offset_ns.abs() - self.rtt_ns / 2 > tolerance_ns
    }
}

/// The offset of one peer from its samples (None without a usable sample).
pub fn estimate(rank: usize, samples: &[ClockSample]) -> Option<ClockOffset> {
    let best = samples
        .iter()
        .filter(|s| s.t2_ns >= s.t0_ns)
        .min_by_key(|s| s.t2_ns - s.t0_ns)?;
    let mid = best.t0_ns + (best.t2_ns - best.t0_ns) / 2;
    Some(ClockOffset {
        rank,
        offset_ns: best.t1_ns - mid,
        rtt_ns: best.t2_ns - best.t0_ns,
        rounds: samples.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_round_trip_gives_the_offset() {
        // Peer 3 ms ahead; one round delayed 2 ms on the way back.
        let s = [
            ClockSample {
                t0_ns: 0,
                t1_ns: 3_050_000,
                t2_ns: 2_100_000,
            },
            ClockSample {
                t0_ns: 10_000_000,
                t1_ns: 13_040_000,
                t2_ns: 10_080_000,
            },
        ];
        let o = estimate(3, &s).unwrap();
        assert_eq!(o.rtt_ns, 80_000);
        assert_eq!(o.offset_ns, 3_000_000);
        assert!(o.exceeds(1_000_000));
        assert!(!o.exceeds(3_000_000));
        // Same clocks seen through a loaded exchange: 1.9 ms "off" with a
        // 3.8 ms round trip is within its uncertainty, not a bad clock.
        let loaded = ClockOffset {
            rank: 3,
            offset_ns: 1_892_000,
            rtt_ns: 3_824_000,
            rounds: 32,
        };
        assert!(!loaded.exceeds(1_000_000));
    }

    #[test]
    fn no_usable_sample_is_no_estimate() {
        assert!(estimate(1, &[]).is_none());
        assert!(
            estimate(
                1,
                &[ClockSample {
                    t0_ns: 10,
                    t1_ns: 0,
                    t2_ns: 5
                }]
            )
            .is_none()
        );
    }
}
