//! [`Levels`]: a rung's node power as a distribution of levels (the
//! composed cycle laid over the rung's window, each point weighted by how
//! often the window holds it, or the held curve's points), from which every
//! per-rung figure is read: its [`Levels::quantile`], [`Levels::mean`] and
//! [`Levels::max`].

use powerlab_samples::stats::{quantile_sorted, sum_compensated, weighted_quantile_sorted};

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
    /// A cycle's points with how often the window holds each.
    Weighted(Vec<(f64, f64)>),
}

impl Levels {
    /// The levels of the held curve's points `values` (any order); None
    /// for none.
    pub fn of_points(mut values: Vec<f64>) -> Option<Levels> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let mean = sum_compensated(&values) / values.len() as f64;
        Some(Levels {
            sorted: Sorted::Plain(values),
            mean,
        })
    }

    /// The levels of `(value, weight)` pairs (any order): a cycle's points
    /// with how often the rung's window holds each.
    pub fn of_weighted(mut weighted: Vec<(f64, f64)>) -> Levels {
        let weight: f64 = weighted.iter().map(|x| x.1).sum();
        let mean = weighted.iter().map(|x| x.0 * x.1).sum::<f64>() / weight;
        weighted.sort_by(|a, b| a.0.total_cmp(&b.0));
        Levels {
            sorted: Sorted::Weighted(weighted),
            mean,
        }
    }

    /// How many points (the curve's; a cycle's distinct points).
    pub fn len(&self) -> usize {
        match &self.sorted {
            Sorted::Plain(v) => v.len(),
            Sorted::Weighted(v) => v.len(),
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
            Sorted::Weighted(v) => weighted_quantile_sorted(v, q),
        }
    }

    /// The mean, W.
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// The largest level, W (NaN when empty).
    pub fn max(&self) -> f64 {
        match &self.sorted {
            Sorted::Plain(v) => v.last().copied(),
            Sorted::Weighted(v) => v.last().map(|x| x.0),
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
