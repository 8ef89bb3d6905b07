//! The rack curve, summed from the nodes' own curves
//! (`report/node_curve.parquet`) as they are read, one node at a time. Every
//! node of a rack anchors its grid at the first rung's epoch, which they
//! share, so the curves add point by point; a point where any node has no
//! value has no rack value (a dead node is a gap, never a power drop), the
//! node rule one level up. Nodes are added in the order given (sorted by
//! node directory), each point left to right: the result equals the sum of
//! every GPU of every node up to that fixed summation order. Memory: the
//! rack curve, each node's buffered column (for `rack_curve.csv`) and one
//! node curve being read.

use crate::handoff::{CURVE_FILE, read_parquet};
use polars::prelude::*;
use powerlab_analysis::curve::{CURVE_INSTRUMENTS, NodeCurve};
use powerlab_samples::error::CollateError;
use std::path::Path;

/// One instrument's running sum.
#[derive(Debug, Default)]
struct Sum {
    values: Vec<f64>,
    nodes: Vec<u32>,
}

/// The rack curve being built.
#[derive(Debug)]
pub struct RackCurve {
    start_ns: i64,
    grid_ns: i64,
    len: usize,
    sums: Vec<Option<Sum>>,
    added: u32,
}

/// The span of a node's curve: first and last `t_ns`.
///
/// # Errors
///
/// Fails as [`read_parquet`] does.
pub fn node_span(report_dir: &Path) -> Result<Option<(i64, i64)>, CollateError> {
    let df = read_parquet(&report_dir.join(CURVE_FILE), Some(vec!["t_ns".into()]))?;
    let t = powerlab_samples::columns::i64_column(&df, "t_ns");
    Ok(t.first().copied().zip(t.last().copied()))
}

impl RackCurve {
    /// An empty rack curve over `[start_ns, end_ns]` on the grid.
    pub fn new(start_ns: i64, end_ns: i64, grid_ns: i64) -> Self {
        let len = if end_ns >= start_ns {
            ((end_ns - start_ns) / grid_ns + 1) as usize
        } else {
            0
        };
        Self {
            start_ns,
            grid_ns,
            len,
            sums: CURVE_INSTRUMENTS.iter().map(|_| None).collect(),
            added: 0,
        }
    }

    /// Adds one node's curve.
    ///
    /// # Errors
    ///
    /// Returns [`CollateError::BadRaw`] when the node's curve is not on the
    /// rack's grid (collated by another version, or not one rack run), and
    /// fails as [`read_parquet`] does.
    pub fn add_node(&mut self, node: &str, report_dir: &Path) -> Result<(), CollateError> {
        let path = report_dir.join(CURVE_FILE);
        let df = read_parquet(&path, None)?;
        let t = powerlab_samples::columns::i64_column(&df, "t_ns");
        let mut index = Vec::with_capacity(t.len());
        for ts in &t {
            let off = ts - self.start_ns;
            if off < 0 || off % self.grid_ns != 0 || (off / self.grid_ns) as usize >= self.len {
                return Err(CollateError::BadRaw {
                    path,
                    message: format!(
                        "node {node}'s curve has a point at {ts} ns, off the rack's grid ({} ns from {}): its nodes are not one rack run, or it was collated by another version; collate the rack with --force",
                        self.grid_ns, self.start_ns
                    ),
                });
            }
            index.push((off / self.grid_ns) as usize);
        }
        for (k, (_, name)) in CURVE_INSTRUMENTS.iter().enumerate() {
            let Ok(c) = df.column(name) else {
                continue;
            };
            let v = c
                .f64()
                .map_err(CollateError::polars("a node curve column"))?;
            let sum = self.sums[k].get_or_insert_with(|| Sum {
                values: vec![0.0; self.len],
                nodes: vec![0; self.len],
            });
            for (i, x) in index.iter().zip(v.iter()) {
                if let Some(x) = x {
                    sum.values[*i] += x;
                    sum.nodes[*i] += 1;
                }
            }
        }
        self.added += 1;
        Ok(())
    }

    /// Counts a node without a report: the rack curve has no value anywhere
    /// (its power is not known).
    pub fn add_missing_node(&mut self) {
        self.added += 1;
    }

    /// The rack curve as a node curve (columns `t_ns` and `node_*`, which
    /// the rung summaries and plots read), and the rack curve file's frame
    /// (`rack_*`, three decimals).
    ///
    /// # Errors
    ///
    /// Returns [`CollateError::Polars`] when a frame cannot be built.
    pub fn finish(self) -> Result<(NodeCurve, DataFrame), CollateError> {
        let t: Vec<i64> = (0..self.len)
            .map(|k| self.start_ns + k as i64 * self.grid_ns)
            .collect();
        let mut cols = vec![Column::new("t_ns".into(), t.clone())];
        let mut file = vec![Column::new("t_ns".into(), t)];
        for (k, (_, name)) in CURVE_INSTRUMENTS.iter().enumerate() {
            let Some(sum) = &self.sums[k] else {
                continue;
            };
            let v: Vec<Option<f64>> = sum
                .values
                .iter()
                .zip(&sum.nodes)
                .map(|(x, n)| (*n == self.added).then_some(*x))
                .collect();
            if *name != "node_average_field_w" {
                let rack = name.replacen("node_", "rack_", 1);
                file.push(Column::new(rack.as_str().into(), round3(&v)));
            }
            cols.push(Column::new((*name).into(), v));
        }
        let df = DataFrame::new(self.len, cols).map_err(CollateError::polars("the rack curve"))?;
        let file =
            DataFrame::new(self.len, file).map_err(CollateError::polars("the rack curve file"))?;
        Ok((NodeCurve::new(df, self.grid_ns), file))
    }
}

/// Rounds half to even at three decimals, as the curve files are written.
fn round3(v: &[Option<f64>]) -> Vec<Option<f64>> {
    let s = Series::new("v".into(), v.to_vec());
    s.round(3, RoundMode::HalfToEven)
        .ok()
        .and_then(|r| r.f64().ok().map(|c| c.to_vec()))
        .unwrap_or_else(|| v.to_vec())
}
