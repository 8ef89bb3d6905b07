//! The energy counter (`nvmlDeviceGetTotalEnergyConsumption`, read about
//! once a second): the mean power of a window from the counter's
//! difference across it. It cannot alias, whatever the load's period, so
//! it gives the mean of a duty rung whose cycle cannot be composed.

use crate::sensor::SeriesSet;

/// The counter of a time-sorted series (ms, mJ) at `t`, interpolated
/// linearly between the readings around it (None outside them).
fn at(s: &[(i64, f64)], t: i64) -> Option<f64> {
    let i = s.partition_point(|x| x.0 < t);
    if i < s.len() && s[i].0 == t {
        return Some(s[i].1);
    }
    let (a, b) = (s.get(i.checked_sub(1)?)?, s.get(i)?);
    let f = (t - a.0) as f64 / (b.0 - a.0).max(1) as f64;
    Some(a.1 + (b.1 - a.1) * f)
}

/// Summed mean power, W, of `gpus` over `[from, to)` from their energy
/// counters; None when any GPU's readings do not bracket the window.
pub fn mean_w(series: &SeriesSet, gpus: &[String], from: i64, to: i64) -> Option<f64> {
    if to <= from || gpus.is_empty() {
        return None;
    }
    let mut total = 0.0;
    for g in gpus {
        let s = series.get(g, "energy_mj");
        let (e0, e1) = (at(s, from)?, at(s, to)?);
        total += (e1 - e0) / 1000.0 / ((to - from) as f64 / 1e9);
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolates_between_readings() {
        let s = [(0, 0.0), (1_000_000_000, 500_000.0), (2_000_000_000, 1_500_000.0)];
        assert_eq!(at(&s, 500_000_000), Some(250_000.0));
        assert_eq!(at(&s, 1_000_000_000), Some(500_000.0));
        assert_eq!(at(&s, 3_000_000_000), None);
    }
}
