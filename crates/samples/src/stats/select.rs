//! [`weighted_quantiles`]: the quantiles of weighted points found by
//! partitioning them around the ranks the quantiles read, not by sorting
//! them all (a bootstrap reads four quantiles of each of 200 replicates of
//! a composed cycle of up to 8,192 points).

/// Points at or below this many are sorted outright.
const SORTED_BELOW: usize = 32;

/// For each `q` of `qs` (0 ≤ q ≤ 1), what
/// [`quantile_of_cumulative`](super::quantile_of_cumulative) gives for
/// `points` (value, weight) sorted by value under `f64::total_cmp`, with
/// their weights' running totals: the same figure, bit for bit. `points`
/// are reordered in place.
///
/// The weights must be whole numbers (how often a window holds each
/// point): then every sum of them is exact whatever order it is taken in,
/// as the sorted running totals are. NaN for every `q` when there are no
/// points or no weight.
pub fn weighted_quantiles(points: &mut [(f64, f64)], qs: &[f64]) -> Vec<f64> {
    let total: f64 = points.iter().map(|p| p.1).sum();
    if points.is_empty() || total <= 0.0 {
        return vec![f64::NAN; qs.len()];
    }
    let place = |q: f64| -> (f64, f64) {
        let pos = q.clamp(0.0, 1.0) * (total - 1.0);
        (pos, pos.floor())
    };
    let mut ranks: Vec<f64> = qs
        .iter()
        .flat_map(|q| {
            let lo = place(*q).1;
            [lo, lo + 1.0]
        })
        .collect();
    ranks.sort_unstable_by(f64::total_cmp);
    ranks.dedup();
    let mut found = vec![f64::NAN; ranks.len()];
    // A rank at or past the total reads the last (largest) value.
    let inside = ranks.partition_point(|r| *r < total);
    if inside < ranks.len() {
        let largest = points
            .iter()
            .map(|p| p.0)
            .max_by(f64::total_cmp)
            .unwrap_or(f64::NAN);
        found[inside..].fill(largest);
    }
    select(points, 0.0, &ranks[..inside], &mut found[..inside]);
    let at = |r: f64| found[ranks.partition_point(|x| *x < r)];
    qs.iter()
        .map(|q| {
            let (pos, lo) = place(*q);
            let (a, b) = (at(lo), at(lo + 1.0));
            a + (b - a) * (pos - lo)
        })
        .collect()
}

/// Writes into `found[i]` the value at rank `ranks[i]` (ascending, each at
/// least `base` and below `base` plus `points`' weight) of the values
/// repeated by their weights, in ascending order, counted from `base`: the
/// first point whose running total passes it.
fn select(points: &mut [(f64, f64)], base: f64, ranks: &[f64], found: &mut [f64]) {
    if ranks.is_empty() {
        return;
    }
    if points.len() <= SORTED_BELOW {
        points.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let (mut through, mut k) = (base, 0);
        for p in points.iter() {
            through += p.1;
            while k < ranks.len() && ranks[k] < through {
                found[k] = p.0;
                k += 1;
            }
        }
        return;
    }
    // Every point left of the pivot sorts at or below it, every point
    // right of it at or above: one sorted order of the whole is the left
    // sorted, the pivot, the right sorted.
    let mid = points.len() / 2;
    let (left, pivot, right) = points.select_nth_unstable_by(mid, |a, b| a.0.total_cmp(&b.0));
    let pivot = *pivot;
    let left_through = base + left.iter().map(|p| p.1).sum::<f64>();
    let pivot_through = left_through + pivot.1;
    let a = ranks.partition_point(|r| *r < left_through);
    let b = ranks.partition_point(|r| *r < pivot_through);
    select(left, base, &ranks[..a], &mut found[..a]);
    found[a..b].fill(pivot.0);
    select(right, pivot_through, &ranks[b..], &mut found[b..]);
}

#[cfg(test)]
mod tests {
    use super::super::{cumulative, quantile_of_cumulative};
    use super::weighted_quantiles;
    use proptest::prelude::*;

    /// The definition: sort, running totals, one binary search per rank.
    fn by_sorting(points: &[(f64, f64)], q: f64) -> f64 {
        let mut sorted = points.to_vec();
        sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
        let values: Vec<f64> = sorted.iter().map(|p| p.0).collect();
        quantile_of_cumulative(&values, &cumulative(sorted.iter().map(|p| p.1)), q)
    }

    const QS: [f64; 9] = [0.0, 0.01, 0.1, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0];

    #[test]
    fn a_small_case_by_hand() {
        // 1 once, 5 three times, 9 twice: 1 5 5 5 9 9.
        let mut points = vec![(9.0, 2.0), (1.0, 1.0), (5.0, 3.0)];
        let got = weighted_quantiles(&mut points, &[0.0, 0.2, 0.5, 0.9, 1.0]);
        // pos = q * 5: 0 -> 1; 1 -> 5; 2.5 -> 5; 4.5 -> 9; 5 -> 9.
        assert_eq!(got, vec![1.0, 5.0, 5.0, 9.0, 9.0]);
        assert!(weighted_quantiles(&mut [], &[0.5])[0].is_nan());
        assert!(weighted_quantiles(&mut [(1.0, 0.0)], &[0.5])[0].is_nan());
    }

    #[test]
    fn many_points_with_ties_read_as_the_sort_does() {
        // 5,000 points over 37 distinct values, weights 2 and 3: every
        // partition has ties on both sides of its pivot.
        let points: Vec<(f64, f64)> = (0..5000)
            .map(|i| {
                (
                    ((i * 7919) % 37) as f64 * 12.5,
                    if i % 3 == 0 { 3.0 } else { 2.0 },
                )
            })
            .collect();
        let got = weighted_quantiles(&mut points.clone(), &QS);
        for (q, g) in QS.iter().zip(&got) {
            assert_eq!(g.to_bits(), by_sorting(&points, *q).to_bits(), "q {q}");
        }
    }

    proptest! {
        #[test]
        fn every_quantile_is_the_sorted_definition_bit_for_bit(
            values in prop::collection::vec(
                prop_oneof![
                    (0u32..40).prop_map(|v| f64::from(v) * 25.0),
                    -1.0e4f64..1.0e4,
                    Just(0.0),
                    Just(-0.0),
                ],
                0..300,
            ),
            weights in prop::collection::vec(0u32..5, 300),
            qs in prop::collection::vec(0.0f64..=1.0, 1..6),
        ) {
            let points: Vec<(f64, f64)> = values
                .iter()
                .zip(&weights)
                .map(|(v, w)| (*v, f64::from(*w)))
                .collect();
            let mut all = QS.to_vec();
            all.extend(&qs);
            let got = weighted_quantiles(&mut points.clone(), &all);
            for (q, g) in all.iter().zip(&got) {
                let want = by_sorting(&points, *q);
                prop_assert!(
                    g.to_bits() == want.to_bits(),
                    "q {} gave {} where sorting gives {}", q, g, want
                );
            }
        }
    }
}
