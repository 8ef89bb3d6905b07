//! Node power curves: every GPU's readings (time-sorted series) aligned on
//! one time grid by a backward as-of match (latest reading at or before each
//! grid point, within a tolerance), then summed across GPUs. A grid point where any GPU has no
//! reading within tolerance has no node value: a partial sum would look like
//! a power drop.

use polars::prelude::*;
use powerlab_core::Instrument;
use powerlab_core::units::{NS_PER_MS, NS_PER_S, ms_to_ns_trunc};
use powerlab_samples::columns::{f64_column, i64_column};
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
    /// Its time and node columns as vectors, made on first use.
    columns: std::sync::OnceLock<NodeColumns>,
}

/// A node curve's time and node-sum columns as vectors (a column the frame
/// lacks is empty). Read by the summaries, the envelope, the grid, the
/// sensor, the node's meters and the charts: each used to copy them out of
/// the frame for itself, 1.5 M points a column on a 4-hour run.
pub struct NodeColumns {
    /// `t_ns`.
    pub t_ns: Vec<i64>,
    /// `node_buffered_w`.
    pub buffered_w: Vec<Option<f64>>,
    /// `node_instant_w`.
    pub instant_w: Vec<Option<f64>>,
    /// `node_average_field_w`.
    pub average_field_w: Vec<Option<f64>>,
}

impl NodeCurve {
    /// The curve of `df` on a grid of `grid_ns`.
    pub fn new(df: DataFrame, grid_ns: i64) -> NodeCurve {
        NodeCurve {
            df,
            grid_ns,
            columns: std::sync::OnceLock::new(),
        }
    }

    /// Its time and node columns (see [`NodeColumns`]), copied out of the
    /// frame once.
    pub fn columns(&self) -> &NodeColumns {
        self.columns.get_or_init(|| NodeColumns {
            t_ns: i64_column(&self.df, "t_ns"),
            buffered_w: f64_column(&self.df, "node_buffered_w"),
            instant_w: f64_column(&self.df, "node_instant_w"),
            average_field_w: f64_column(&self.df, "node_average_field_w"),
        })
    }
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
    let tolerance_ns = |inst: Instrument| {
        if inst == Instrument::BufferedW {
            60_000_000
        } else {
            polled_tol
        }
    };
    // Every GPU's column of every instrument aligned on every core, in
    // the order the frame holds them (instrument by instrument, GPUs in
    // the run's order); each instrument's sum then adds them in that order.
    let jobs: Vec<(Instrument, &(String, String))> = CURVE_INSTRUMENTS
        .iter()
        .flat_map(|(inst, _)| run.series.iter().map(move |s| (*inst, s)))
        .collect();
    let per_gpu = powerlab_samples::parallel::map_in_order(&jobs, |(inst, (node, gpu))| {
        let samples = series.get_at(node, gpu, *inst);
        Float64Chunked::from_iter_options(
            format!("{node}/{gpu}:{inst}").as_str().into(),
            align_backward(&t, samples, tolerance_ns(*inst)),
        )
    });
    let node_cols: Vec<Column> = CURVE_INSTRUMENTS
        .iter()
        .zip(per_gpu.chunks(run.series.len().max(1)))
        .map(|((_, name), gpus)| ordered_sum(gpus).with_name((*name).into()).into_column())
        .collect();
    let mut columns = vec![Column::new("t_ns".into(), t)];
    columns.extend(per_gpu.into_iter().map(IntoColumn::into_column));
    columns.extend(node_cols);
    let mut df = DataFrame::new_infer_height(columns)
        .map_err(CollateError::polars("aligning GPUs on the grid"))?;
    // One chunk per column: reductions then run in one order whatever the
    // raw files' layout, so splitting a raw file cannot move a digit.
    df.rechunk_mut_par();
    Ok(NodeCurve::new(df, grid))
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
pub fn align_backward<'a>(
    t: &'a [i64],
    samples: &'a [(i64, f64)],
    tolerance_ns: i64,
) -> impl Iterator<Item = Option<f64>> + 'a {
    let mut j = 0;
    t.iter().map(move |&at| {
        while j < samples.len() && samples[j].0 <= at {
            j += 1;
        }
        j.checked_sub(1)
            .map(|k| samples[k])
            .filter(|(ts, _)| at - ts <= tolerance_ns)
            .map(|(_, v)| v)
    })
}

/// The node's sum of its GPUs' aligned readings, point by point, null
/// where any is null (a partial sum would look like a power drop). GPUs
/// are added one after another in the run's order, so the floating-point
/// sum comes out the same whatever the raw files' layout: a reduction in
/// a scheduling-dependent order once changed a rack summary's last digit
/// between two collations of the same files. Empty for no GPU.
pub fn ordered_sum(gpus: &[Float64Chunked]) -> Float64Chunked {
    match gpus.split_first() {
        Some((first, rest)) => rest.iter().fold(first.clone(), |acc, next| &acc + next),
        None => Float64Chunked::from_vec(PlSmallStr::EMPTY, Vec::new()),
    }
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
        let got: Vec<Option<f64>> = align_backward(&t, &samples, 30).collect();
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
        let none: Vec<Option<f64>> = align_backward(&t, &[], 30).collect();
        assert_eq!(none, vec![None; t.len()]);
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
            let got: Vec<Option<f64>> = align_backward(&t, &samples, tol).collect();
            assert_eq!(got, reference(&t, &samples, tol));
        }
    }

    #[test]
    fn a_node_sum_is_null_where_any_gpu_has_no_reading() {
        let column =
            |v: &[Option<f64>]| Float64Chunked::from_iter_options("g".into(), v.iter().copied());
        let a = column(&[Some(1.0), None, Some(3.0), Some(0.1), Some(1e16)]);
        let b = column(&[Some(10.0), Some(20.0), None, Some(0.2), Some(1.0)]);
        let c = column(&[Some(0.5), Some(1.0), Some(1.0), Some(0.3), Some(1.0)]);
        let sum: Vec<Option<f64>> = ordered_sum(&[a, b, c]).iter().collect();
        assert_eq!(sum[0], Some(11.5));
        assert_eq!(sum[1], None);
        assert_eq!(sum[2], None);
        // Left to right, in f64: (0.1 + 0.2) + 0.3, not 0.1 + (0.2 + 0.3).
        assert_eq!(sum[3], Some((0.1 + 0.2) + 0.3));
        assert_ne!(sum[3], Some(0.1 + (0.2 + 0.3)));
        // (1e16 + 1) + 1 rounds twice; 1e16 + (1 + 1) would not.
        assert_eq!(sum[4], Some(1e16));
        assert!(ordered_sum(&[]).is_empty());
    }
}
