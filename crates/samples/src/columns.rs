//! Columns of a polars frame as plain vectors: the one place where the
//! analyses turn a frame's column into numbers they can index.

use polars::prelude::*;

/// Extracts a column as `Vec<Option<f64>>`.
pub fn f64_column(df: &DataFrame, name: &str) -> Vec<Option<f64>> {
    df.column(name)
        .ok()
        .and_then(|c| c.cast(&DataType::Float64).ok())
        .map(|c| c.f64().map(|ca| ca.to_vec()).unwrap_or_default())
        .unwrap_or_default()
}

/// Extracts an i64 column.
pub fn i64_column(df: &DataFrame, name: &str) -> Vec<i64> {
    df.column(name)
        .ok()
        .and_then(|c| {
            c.i64()
                .ok()
                .map(|ca| ca.to_vec().into_iter().map(|v| v.unwrap_or(0)).collect())
        })
        .unwrap_or_default()
}
