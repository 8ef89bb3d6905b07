//! Filling a fold's empty bins: linearly between the bins that hold a
//! value, round the circle.

/// `level` (a value at some bins, none at others) with every bin filled:
/// between two bins that hold a value, linearly, round the circle; a lone
/// value fills its own bin only; no value at all gives zeros.
pub(super) fn circular_linear(level: &[Option<f64>]) -> Vec<f64> {
    let nb = level.len();
    let knots: Vec<usize> = (0..nb).filter(|&b| level[b].is_some()).collect();
    let mut y = vec![0.0; nb];
    for (i, &b) in knots.iter().enumerate() {
        // The next knot round the circle, and the bins to it (0: the only
        // knot). No remainder is taken per bin: this runs for every bin
        // of every GPU of each of 200 replicates.
        let next = knots.get(i + 1).copied().unwrap_or(knots[0]);
        let span = match next.cmp(&b) {
            std::cmp::Ordering::Greater => next - b,
            std::cmp::Ordering::Less => next + nb - b,
            std::cmp::Ordering::Equal => 0,
        };
        let (va, vb) = (level[b].unwrap_or(0.0), level[next].unwrap_or(0.0));
        for j in 0..span.max(1) {
            let at = if b + j < nb { b + j } else { b + j - nb };
            y[at] = if span == 0 {
                va
            } else {
                va + (vb - va) * j as f64 / span as f64
            };
        }
    }
    y
}

#[cfg(test)]
mod tests {
    use super::circular_linear;

    /// The fill as it was written first, a remainder per bin: the
    /// definition [`circular_linear`] is held to.
    fn by_remainders(level: &[Option<f64>]) -> Vec<f64> {
        let nb = level.len();
        let knots: Vec<usize> = (0..nb).filter(|&b| level[b].is_some()).collect();
        let mut y = vec![0.0; nb];
        for (i, &b) in knots.iter().enumerate() {
            let next = knots[(i + 1) % knots.len()];
            let span = (next + nb - b) % nb;
            let (va, vb) = (level[b].unwrap_or(0.0), level[next].unwrap_or(0.0));
            for j in 0..span.max(1) {
                y[(b + j) % nb] = if span == 0 {
                    va
                } else {
                    va + (vb - va) * j as f64 / span as f64
                };
            }
        }
        y
    }

    #[test]
    fn gaps_are_filled_linearly_round_the_circle() {
        let y = circular_linear(&[None, Some(10.0), None, None, Some(40.0), None]);
        // 10 -> 40 over 3 bins, then 40 -> 10 across the end over 3.
        assert_eq!(y, vec![20.0, 10.0, 20.0, 30.0, 40.0, 30.0]);
        assert_eq!(
            circular_linear(&[None, Some(7.0), None]),
            vec![0.0, 7.0, 0.0]
        );
        assert_eq!(circular_linear(&[None, None]), vec![0.0, 0.0]);
    }

    proptest::proptest! {
        #[test]
        fn the_fill_is_the_remainder_fill_bit_for_bit(
            level in proptest::collection::vec(
                proptest::option::weighted(0.3, -50.0f64..900.0),
                1..600,
            ),
        ) {
            let bits = |v: Vec<f64>| v.into_iter().map(f64::to_bits).collect::<Vec<_>>();
            proptest::prop_assert_eq!(bits(circular_linear(&level)), bits(by_remainders(&level)));
        }
    }
}
