//! Node power curves: every GPU's readings (time-sorted series) aligned on
//! one time grid with polars as-of joins (latest reading at or before each
//! grid point, within a tolerance), then summed across GPUs. A grid point where any GPU has no
//! reading within tolerance has no node value: a partial sum would look like
//! a power drop.

use crate::error::CollateError;
use crate::load::Run;
use crate::sensor::series::SeriesSet;
use polars::prelude::*;

/// Power instruments summed into node curves, with the node column names.
pub const CURVE_INSTRUMENTS: [(&str, &str); 3] = [
    ("buffered_w", "node_buffered_w"),
    ("instant_w", "node_instant_w"),
    ("average_w", "node_average_field_w"),
];

/// The node curve: `t_ns`, one column per GPU and instrument, and the node sums.
pub struct NodeCurve {
    /// The frame.
    pub df: DataFrame,
    /// Grid step.
    pub grid_ns: i64,
}

fn asof(tolerance_ns: i64) -> JoinType {
    JoinType::AsOf(Box::new(AsOfOptions {
        strategy: AsofStrategy::Backward,
        tolerance: Some(Scalar::new(DataType::Int64, AnyValue::Int64(tolerance_ns))),
        allow_eq: true,
        check_sortedness: false,
        ..Default::default()
    }))
}

/// Builds the node curve over the span of the samples.
///
/// # Errors
///
/// Returns [`CollateError::BadRaw`] when the samples span more grid points
/// than a week at 1 ms (they cannot be one run), and
/// [`CollateError::Polars`] when building the grid, a GPU's series or the
/// as-of joins fails.
pub fn node_curve(series: &SeriesSet, run: &Run) -> Result<NodeCurve, CollateError> {
    let grid = run.grid_ns.max(1_000_000);
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
            path: "raw".into(),
            message: format!(
                "the samples span {} s: not one run",
                (end.saturating_sub(start)) / 1_000_000_000
            ),
        });
    }
    let t: Vec<i64> = (0..points).map(|k| start + k * grid).collect();
    let poll_ms = run
        .manifest
        .campaign_resolved
        .pointer("/sampling/poll_interval_ms")
        .and_then(|v| v.as_f64())
        .unwrap_or(20.0);
    let polled_tol = ((3.0 * poll_ms).max(60.0) * 1e6) as i64;
    let mut lf = DataFrame::new(t.len(), vec![Column::new("t_ns".into(), t)])
        .map_err(CollateError::polars("building the grid"))?
        .lazy();
    let mut keep = vec![col("t_ns")];
    let mut node_cols = Vec::new();
    for (inst, node_name) in CURVE_INSTRUMENTS {
        let tol = if inst == "buffered_w" {
            60_000_000
        } else {
            polled_tol
        };
        let mut cols = Vec::new();
        for (node, gpu) in &run.series {
            let name = format!("{node}/{gpu}:{inst}");
            let key = format!("{name}:ts");
            let s = series.get_at(node, gpu, inst);
            let right = DataFrame::new(
                s.len(),
                vec![
                    Column::new(
                        key.as_str().into(),
                        s.iter().map(|x| x.0).collect::<Vec<i64>>(),
                    ),
                    Column::new(
                        name.as_str().into(),
                        s.iter().map(|x| x.1).collect::<Vec<f64>>(),
                    ),
                ],
            )
            .map_err(CollateError::polars("a GPU's series"))?
            .lazy();
            lf = lf
                .join_builder()
                .with(right)
                .left_on([col("t_ns")])
                .right_on([col(key.as_str())])
                .how(asof(tol))
                .finish();
            cols.push(col(name.as_str()));
            keep.push(col(name.as_str()));
        }
        if cols.is_empty() {
            continue;
        }
        node_cols.push(ordered_sum(&cols).alias(node_name));
    }
    keep.extend(node_cols);
    let mut df = lf
        .select(keep)
        .collect()
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

/// The sum of `cols`, left to right, null where any is null (a partial
/// sum would look like a power drop). A fixed order on purpose: polars'
/// `sum_horizontal` may reduce many columns in parallel, and floating-point
/// addition in a scheduling-dependent order changed a rack summary's last
/// digit between two collations of the same files.
pub fn ordered_sum(cols: &[Expr]) -> Expr {
    let mut it = cols.iter().cloned();
    let first = it
        .next()
        .unwrap_or_else(|| lit(NULL).cast(DataType::Float64));
    it.fold(first, |acc, c| acc + c)
}
