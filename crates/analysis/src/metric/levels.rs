//! [`Levels`]: a rung's node power as a distribution of levels (the
//! composed cycle laid over the rung's window, each point weighted by how
//! often the window holds it, or the held curve's points), from which every
//! per-rung figure is read: its [`Levels::quantile`], [`Levels::mean`] and
//! [`Levels::max`].

use powerlab_samples::stats::{
    cumulative, quantile_of_cumulative, quantile_sorted, sum_compensated,
};

/// A rung's node power levels, W, sorted.
#[derive(Debug, Clone, PartialEq)]
pub struct Levels {
    /// The values, ascending, each with its whole-number weight (1 for a
    /// curve's points).
    sorted: Sorted,
    /// Their (weighted) mean.
    mean: f64,
}

#[derive(Debug, Clone, PartialEq)]
enum Sorted {
    /// The held curve's points, one each.
    Plain(Vec<f64>),
    /// A cycle's points, and the running total of how often the window
    /// holds each ([`cumulative`]): a bootstrap reads several quantiles of
    /// each of its 200 replicates.
    Weighted { values: Vec<f64>, through: Vec<f64> },
}

/// The mean of `(value, weight)` pairs, added in their order (NaN when
/// they weigh nothing): what [`Levels::mean`] of them is.
pub fn weighted_mean(weighted: &[(f64, f64)]) -> f64 {
    let weight: f64 = weighted.iter().map(|x| x.1).sum();
    weighted.iter().map(|x| x.0 * x.1).sum::<f64>() / weight
}

impl Levels {
    /// The levels of the held curve's points `values` (any order); None
    /// for none.
    pub fn of_points(mut values: Vec<f64>) -> Option<Levels> {
        if values.is_empty() {
            return None;
        }
        // Equal under `total_cmp` is equal bit for bit: the order among
        // equals changes no quantile, so the faster unstable sort serves.
        values.sort_unstable_by(f64::total_cmp);
        let mean = sum_compensated(&values) / values.len() as f64;
        Some(Levels {
            sorted: Sorted::Plain(values),
            mean,
        })
    }

    /// The levels of `(value, weight)` pairs (any order): a cycle's points
    /// with how often the rung's window holds each.
    pub fn of_weighted(mut weighted: Vec<(f64, f64)>) -> Levels {
        let mean = weighted_mean(&weighted);
        // Points of equal value (bit for bit, under `total_cmp`) may swap:
        // a quantile reads a value, and the running total after the last
        // of them is the same.
        weighted.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        Levels {
            sorted: Sorted::Weighted {
                values: weighted.iter().map(|x| x.0).collect(),
                through: cumulative(weighted.iter().map(|x| x.1)),
            },
            mean,
        }
    }

    /// How many points (the curve's; a cycle's distinct points).
    pub fn len(&self) -> usize {
        match &self.sorted {
            Sorted::Plain(v) => v.len(),
            Sorted::Weighted { values, .. } => values.len(),
        }
    }

    /// Whether there is no point at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `q` quantile (0 ≤ q ≤ 1), linear between order statistics
    /// (NaN when empty).
    pub fn quantile(&self, q: f64) -> f64 {
        match &self.sorted {
            Sorted::Plain(v) => quantile_sorted(v, q),
            Sorted::Weighted { values, through } => quantile_of_cumulative(values, through, q),
        }
    }

    /// The mean, W.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// The largest level, W (NaN when empty).
    pub fn max(&self) -> f64 {
        match &self.sorted {
            Sorted::Plain(v) | Sorted::Weighted { values: v, .. } => v.last().copied(),
        }
        .unwrap_or(f64::NAN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weighted_levels_read_as_the_values_repeated() {
        let w = Levels::of_weighted(vec![(300.0, 1.0), (100.0, 3.0)]);
        let p = Levels::of_points(vec![100.0, 300.0, 100.0, 100.0]).unwrap();
        for q in [0.0, 0.1, 0.5, 0.9, 0.99, 1.0] {
            assert_eq!(w.quantile(q), p.quantile(q), "q {q}");
        }
        assert_eq!((w.mean(), w.max()), (150.0, 300.0));
        assert_eq!((p.mean(), p.max()), (150.0, 300.0));
        assert!(Levels::of_points(Vec::new()).is_none());
    }
}
