//! Edge statistics per rung from `edges.csv`: edge error against the
//! schedule and start skew across GPUs (against each GPU's intended start,
//! so a deliberate stagger is never counted as skew).

use crate::error::CollateError;
use crate::load::Run;
use polars::prelude::*;
use powerlab_rundir::RunDir;
use std::collections::HashMap;
use std::sync::Arc;

/// Per-rung edge statistics, µs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EdgeStats {
    /// Median |achieved − intended| over every edge.
    pub err_p50_us: f64,
    /// 99th percentile of the same.
    pub err_p99_us: f64,
    /// Largest |start error| of any GPU.
    pub start_error_max_us: f64,
    /// Spread of start errors across GPUs (max − min).
    pub start_skew_us: f64,
    /// Edges counted.
    pub edges: usize,
}

/// Computes edge statistics for every rung present in `edges.csv`.
pub fn edge_stats(dir: &RunDir, _run: &Run) -> Result<HashMap<u32, EdgeStats>, CollateError> {
    let path = dir.edges();
    let mut out = HashMap::new();
    if !path.exists() {
        return Ok(out);
    }
    let schema = Arc::new(Schema::from_iter([
        Field::new("rung_id".into(), DataType::UInt32),
        Field::new("gpu".into(), DataType::String),
        Field::new("index".into(), DataType::UInt32),
        Field::new("kind".into(), DataType::String),
        Field::new("intended_ns".into(), DataType::Int64),
        Field::new("achieved_ns".into(), DataType::Int64),
    ]));
    let bytes = std::fs::read(&path).map_err(|e| CollateError::io(&path, e))?;
    let cut = if bytes.last() == Some(&b'\n') { bytes.len() } else { bytes.iter().rposition(|b| *b == b'\n').map(|i| i + 1).unwrap_or(0) };
    if bytes[..cut].iter().filter(|b| **b == b'\n').count() < 2 {
        return Ok(out); // header only: no rung finished
    }
    let df = CsvReadOptions::default()
        .with_has_header(true)
        .with_schema(Some(schema))
        .into_reader_with_file_handle(std::io::Cursor::new(&bytes[..cut]))
        .finish()
        .map_err(|e| CollateError::BadRaw { path: path.clone(), message: e.to_string() })?;
    let err = (col("achieved_ns") - col("intended_ns")).cast(DataType::Float64) / lit(1000.0);
    let all = df
        .clone()
        .lazy()
        .group_by([col("rung_id")])
        .agg([
            err.clone().abs().quantile(lit(0.5), QuantileMethod::Linear).alias("p50"),
            err.clone().abs().quantile(lit(0.99), QuantileMethod::Linear).alias("p99"),
            err.clone().abs().count().alias("n"),
        ])
        .sort(["rung_id"], SortMultipleOptions::default())
        .collect()
        .map_err(CollateError::polars("edge error per rung"))?;
    let starts = df
        .lazy()
        .filter(col("kind").eq(lit("start")))
        .group_by([col("rung_id")])
        .agg([err.clone().abs().max().alias("max_abs"), (err.clone().max() - err.min()).alias("skew")])
        .sort(["rung_id"], SortMultipleOptions::default())
        .collect()
        .map_err(CollateError::polars("start skew per rung"))?;
    let ids = |d: &DataFrame| -> Vec<u32> { d.column("rung_id").ok().and_then(|c| c.u32().ok().map(|ca| ca.to_vec().into_iter().map(|v| v.unwrap_or(0)).collect())).unwrap_or_default() };
    let (p50, p99, n) = (crate::curve::f64_column(&all, "p50"), crate::curve::f64_column(&all, "p99"), crate::curve::f64_column(&all, "n"));
    for (i, id) in ids(&all).into_iter().enumerate() {
        out.insert(id, EdgeStats { err_p50_us: p50[i].unwrap_or(0.0), err_p99_us: p99[i].unwrap_or(0.0), edges: n[i].unwrap_or(0.0) as usize, ..Default::default() });
    }
    let (max_abs, skew) = (crate::curve::f64_column(&starts, "max_abs"), crate::curve::f64_column(&starts, "skew"));
    for (i, id) in ids(&starts).into_iter().enumerate() {
        let e = out.entry(id).or_default();
        e.start_error_max_us = max_abs[i].unwrap_or(0.0);
        e.start_skew_us = skew[i].unwrap_or(0.0);
    }
    Ok(out)
}
