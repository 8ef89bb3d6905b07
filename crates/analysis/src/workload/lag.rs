//! The level-crossing lag: how long before its mid-level crossing an
//! iteration's rise starts, read from the samples folded on the crossings.

use super::crossings::Levels;
use powerlab_core::units::NS_PER_MS;

/// The rise is taken to start where the folded draw is last below this
/// share of the way from p10 to p90.
pub const START_SHARE: f64 = 0.1;

/// Bin width of the fold, ns.
const BIN_NS: i64 = NS_PER_MS;

/// How long before each mid-level crossing (`crossings`, sorted) the
/// folded draw of `points` (each at the centre of its window) was last at
/// or below [`START_SHARE`] of the range, ns: the samples within a quarter
/// period before a crossing are binned by their time before it, and the
/// latest bin (walking back from the crossing) whose mean is that low
/// marks the rise's start. 0 where no bin is (the rise is faster than the
/// bins, or its foot is never sampled).
pub fn crossing_lag_ns(
    points: &[(i64, f64)],
    crossings: &[i64],
    period_ns: i64,
    levels: &Levels,
) -> i64 {
    let reach = (period_ns / 4).max(BIN_NS);
    let bins = (reach / BIN_NS) as usize + 1;
    let (mut sum, mut cnt) = (vec![0.0; bins], vec![0usize; bins]);
    for &(t, v) in points {
        // The first crossing at or after the sample.
        let k = crossings.partition_point(|c| *c < t);
        let Some(c) = crossings.get(k) else { continue };
        let before = c - t;
        if before > reach {
            continue;
        }
        let b = (before / BIN_NS) as usize;
        sum[b] += v;
        cnt[b] += 1;
    }
    let foot = levels.at(START_SHARE);
    (0..bins)
        .find(|&b| cnt[b] > 0 && sum[b] / cnt[b] as f64 <= foot)
        .map_or(0, |b| b as i64 * BIN_NS + BIN_NS / 2)
}
