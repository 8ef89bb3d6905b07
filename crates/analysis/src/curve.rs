//! Node power curves: every GPU's readings (time-sorted series) aligned on
//! one time grid by a backward as-of match (latest reading at or before each
//! grid point, within a tolerance), then summed across GPUs. A grid point where any GPU has no
//! reading within tolerance has no node value: a partial sum would look like
//! a power drop.

use polars::prelude::*;
use powerlab_core::Instrument;
use powerlab_core::units::{NS_PER_MS, NS_PER_S, ms_to_ns_trunc};
use powerlab_samples::error::CollateError;
use powerlab_samples::load::Run;
use powerlab_samples::series::SeriesSet;

/// Power instruments summed into node curves, with the node column names.
pub const CURVE_INSTRUMENTS: [(Instrument, &str); 3] = [
    (Instrument::BufferedW, "node_buffered_w"),
    (Instrument::InstantW, "node_instant_w"),
    (Instrument::AverageW, "node_average_field_w"),
];

/// The node curve: `t_ns`, one column per GPU and instrument, and the node sums.
pub struct NodeCurve {
    /// The frame.
    pub df: DataFrame,
    /// Grid step.
    pub grid_ns: i64,
}

/// Builds the node curve over the span of the samples.
///
/// # Errors
///
/// Returns [`CollateError::BadRaw`] when the samples span more grid points
/// than a week at 1 ms (they cannot be one run), and
/// [`CollateError::Polars`] when the aligned columns cannot be put into one
/// frame.
pub fn node_curve(series: &SeriesSet, run: &Run) -> Result<NodeCurve, CollateError> {
    let grid = run.grid_ns.max(NS_PER_MS);
    let mut span: Option<(i64, i64)> = None;
    for (node, gpu) in &run.series {
        for (inst, _) in CURVE_INSTRUMENTS {
            let s = series.get_at(node, gpu, inst);
            if let (Some(a), Some(b)) = (s.first(), s.last()) {
                span = Some(span.map_or((a.0, b.0), |(lo, hi)| (lo.min(a.0), hi.max(b.0))));
            }
        }
    }
    let origin = grid_origin(run);
    let (start, end) = match span {
        Some((a, b)) => (
            origin
                .saturating_add(
                    a.saturating_sub(origin)
                        .div_euclid(grid)
                        .saturating_mul(grid),
                )
                .saturating_add(grid),
            b,
        ),
        None => (0, -1),
    };
    // The reader refuses samples outside the run's span; this bound keeps a
    // grid from ever becoming an unbounded allocation (a week at 1 ms).
    let points = if end >= start {
        end.saturating_sub(start) / grid + 1
    } else {
        0
    };
    if points > 604_800_000 {
        return Err(CollateError::BadRaw {
            path: powerlab_rundir::RunFile::Raw.name().into(),
            message: format!(
                "the samples span {} s: not one run",
                (end.saturating_sub(start)) / NS_PER_S
            ),
        });
    }
    let t: Vec<i64> = (0..points).map(|k| start + k * grid).collect();
    let poll_ms = run.campaign.sampling.poll_interval_ms;
    let polled_tol = ms_to_ns_trunc((3.0 * poll_ms).max(60.0));
    let mut per_gpu = Vec::new();
    let mut node_cols = Vec::new();
    for (inst, node_name) in CURVE_INSTRUMENTS {
        let tol = if inst == Instrument::BufferedW {
            60_000_000
        } else {
            polled_tol
        };
        let mut sum: Option<Vec<Option<f64>>> = None;
        for (node, gpu) in &run.series {
            let aligned = align_backward(&t, series.get_at(node, gpu, inst), tol);
            sum = Some(match sum {
                None => aligned.clone(),
                Some(acc) => ordered_add(acc, &aligned),
            });
            per_gpu.push(Column::new(
                format!("{node}/{gpu}:{inst}").as_str().into(),
                aligned,
            ));
        }
        if let Some(sum) = sum {
            node_cols.push(Column::new(node_name.into(), sum));
        }
    }
    let mut columns = vec![Column::new("t_ns".into(), t)];
    columns.extend(per_gpu);
    columns.extend(node_cols);
    let mut df = DataFrame::new_infer_height(columns)
        .map_err(CollateError::polars("aligning GPUs on the grid"))?;
    // One chunk per column: reductions then run in one order whatever the
    // raw files' layout, so splitting a raw file cannot move a digit.
    df.rechunk_mut_par();
    Ok(NodeCurve { df, grid_ns: grid })
}

/// Where the node grid is anchored: the first rung's epoch (the run's
/// start when no rung started). Not at absolute multiples of the grid, so
/// the same seed gives the same curve whatever the wall clock; and not at
/// the process's own start, so every node of a rack (which share each
/// rung's epoch) puts its curve on one grid and the rack adds node curves
/// point by point.
pub fn grid_origin(run: &Run) -> i64 {
    run.rungs
        .iter()
        .min_by_key(|r| r.info.id)
        .map_or(run.manifest.started_ns, |r| r.epoch_ns)
}

/// Each grid point's reading: the latest sample at or before it (the last
/// of equal timestamps), none when that sample is more than `tolerance_ns`
/// older. `t` and `samples` ascend in time.
pub fn align_backward(t: &[i64], samples: &[(i64, f64)], tolerance_ns: i64) -> Vec<Option<f64>> {
    let mut j = 0;
    t.iter()
        .map(|&at| {
            while j < samples.len() && samples[j].0 <= at {
                j += 1;
            }
            j.checked_sub(1)
                .map(|k| samples[k])
                .filter(|(ts, _)| at - ts <= tolerance_ns)
                .map(|(_, v)| v)
        })
        .collect()
}

/// Adds one GPU's aligned readings to the running node sum, point by
/// point, null where either is null (a partial sum would look like a power
/// drop). GPUs are added one after another in the run's order, so the
/// floating-point sum comes out the same whatever the raw files' layout:
/// a reduction in a scheduling-dependent order once changed a rack
/// summary's last digit between two collations of the same files.
pub fn ordered_add(mut acc: Vec<Option<f64>>, next: &[Option<f64>]) -> Vec<Option<f64>> {
    for (a, b) in acc.iter_mut().zip(next) {
        *a = a.zip(*b).map(|(a, b)| a + b);
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same match by brute force: the last sample (in slice order) with
    /// a timestamp at or before `at`.
    fn reference(t: &[i64], samples: &[(i64, f64)], tol: i64) -> Vec<Option<f64>> {
        t.iter()
            .map(|&at| {
                samples
                    .iter()
                    .rev()
                    .find(|(ts, _)| *ts <= at)
                    .filter(|(ts, _)| at - ts <= tol)
                    .map(|(_, v)| *v)
            })
            .collect()
    }

    #[test]
    fn a_grid_point_takes_the_latest_reading_within_tolerance() {
        let samples = [(10, 1.0), (20, 2.0), (20, 2.5), (100, 3.0)];
        let t = [5, 10, 19, 20, 50, 51, 99, 100, 200];
        let got = align_backward(&t, &samples, 30);
        // Before the first sample: none. Equal timestamps: the last one.
        // 51 - 20 = 31 > 30: the reading is too old.
        assert_eq!(
            got,
            vec![
                None,
                Some(1.0),
                Some(1.0),
                Some(2.5),
                Some(2.5),
                None,
                None,
                Some(3.0),
                None
            ]
        );
        assert_eq!(got, reference(&t, &samples, 30));
        assert_eq!(align_backward(&t, &[], 30), vec![None; t.len()]);
    }

    #[test]
    fn the_matching_agrees_with_brute_force() {
        // A deterministic scatter of sample times (some equal) and a grid.
        let mut samples: Vec<(i64, f64)> = (0..400_i64)
            .map(|k| ((k * 7919) % 1000, k as f64))
            .collect();
        samples.sort_by_key(|s| s.0);
        let t: Vec<i64> = (-10..1020).step_by(3).collect();
        for tol in [0, 1, 5, 40] {
            assert_eq!(
                align_backward(&t, &samples, tol),
                reference(&t, &samples, tol)
            );
        }
    }

    #[test]
    fn a_node_sum_is_null_where_any_gpu_has_no_reading() {
        let a = vec![Some(1.0), None, Some(3.0), Some(0.1)];
        let b = [Some(10.0), Some(20.0), None, Some(0.2)];
        let sum = ordered_add(a, &b);
        assert_eq!(sum[0], Some(11.0));
        assert_eq!(sum[1], None);
        assert_eq!(sum[2], None);
        // Left to right, in f64: 0.1 + 0.2, not a rounded 0.3.
        assert_eq!(sum[3], Some(0.1 + 0.2));
    }
}
