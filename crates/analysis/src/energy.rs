//! The energy counter (`nvmlDeviceGetTotalEnergyConsumption`, read about
//! once a second): the mean power of a window from the counter's
//! difference across it. It cannot alias, whatever the load's period, so
//! it gives the mean of a duty rung whose cycle cannot be composed.

use powerlab_core::Instrument;
use powerlab_core::units::{mj_to_j, ns_to_s};
use powerlab_samples::series::SeriesSet;

/// A mean from the energy counters, and what it covers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CounterMean {
    /// Summed mean power of the GPUs between their readings, W.
    pub w: f64,
    /// The share of the window those readings span (the least over the
    /// GPUs): the mean is theirs, not the whole window's.
    pub span_share: f64,
}

/// Summed mean power, W, of `gpus` over `[from, to)` from their energy
/// counters: each GPU's counter difference between its first and last
/// reading inside the window, over the time between them. The readings
/// must span at least half the window (the counter is read about once a
/// second); None otherwise. Interpolating to the window's edges instead
/// would mix in the idle cooldown after it. The power of a fast duty rung
/// can wander by hundreds of W from one second to the next (H200, 20 ms:
/// 390 to 663 W over 1 s intervals), so the span is reported with the mean.
pub fn mean_w(series: &SeriesSet, gpus: &[String], from: i64, to: i64) -> Option<CounterMean> {
    if to <= from || gpus.is_empty() {
        return None;
    }
    let mut total = 0.0;
    let mut span_share = 1.0_f64;
    for g in gpus {
        let s = series.get(g, Instrument::EnergyMj);
        let inside = &s[s.partition_point(|x| x.0 < from)..s.partition_point(|x| x.0 < to)];
        let (a, b) = (inside.first()?, inside.last()?);
        if b.0 - a.0 < (to - from) / 2 {
            return None;
        }
        total += mj_to_j(b.1 - a.1) / ns_to_s(b.0 - a.0);
        span_share = span_share.min((b.0 - a.0) as f64 / (to - from) as f64);
    }
    Some(CounterMean {
        w: total,
        span_share,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use polars::prelude::*;

    fn counters(rows: &[(i64, f64)]) -> SeriesSet {
        let n = rows.len();
        let df = DataFrame::new(
            n,
            vec![
                Column::new("ts_ns".into(), rows.iter().map(|r| r.0).collect::<Vec<_>>()),
                Column::new("node".into(), vec!["n"; n]),
                Column::new("gpu".into(), vec!["gpu0"; n]),
                Column::new("instrument".into(), vec!["energy_mj"; n]),
                Column::new("value".into(), rows.iter().map(|r| r.1).collect::<Vec<_>>()),
            ],
        )
        .unwrap();
        SeriesSet::from_frame(&df)
    }

    #[test]
    fn the_mean_comes_from_readings_inside_the_window() {
        // 1 kW for 10 s, then idle at 100 W: a window over the loaded part
        // must not see the idle tail after it.
        let rows: Vec<(i64, f64)> = (0..=14)
            .map(|s| {
                (
                    s * 1_000_000_000,
                    if s <= 10 {
                        s as f64 * 1e6
                    } else {
                        10e6 + (s - 10) as f64 * 1e5
                    },
                )
            })
            .collect();
        let s = counters(&rows);
        let m = mean_w(&s, &["gpu0".into()], 2_500_000_000, 10_500_000_000).unwrap();
        assert!((m.w - 1000.0).abs() < 1e-9, "{m:?}");
        // Readings at 3 … 10 s span 7 of the window's 8 s.
        assert!((m.span_share - 7.0 / 8.0).abs() < 1e-12, "{m:?}");
        // Readings spanning less than half the window: no figure.
        assert_eq!(
            mean_w(&s, &["gpu0".into()], 9_500_000_000, 11_900_000_000),
            None
        );
    }
}
