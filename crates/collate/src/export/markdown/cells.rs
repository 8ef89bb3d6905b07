//! Table cells of the Markdown reports: figures with one decimal, a
//! figure with its confidence half-width or its interval, a signed difference, and a dash
//! where there is no figure.

/// A figure with one decimal, or a dash for none.
pub fn o(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.1}")).unwrap_or_else(|| "–".into())
}

/// A figure ± its half-width, one decimal each.
pub fn pm(v: Option<f64>, ci: Option<f64>) -> String {
    match (v, ci) {
        (Some(v), Some(c)) => format!("{v:.1} ± {c:.1}"),
        (Some(v), None) => format!("{v:.1}"),
        (None, _) => "–".into(),
    }
}

/// A figure with its 95 % interval, `1547.9 [1480.2, 1601.0]`: one decimal
/// each, the figure alone where it has no interval.
pub fn within(v: Option<f64>, ci: Option<crate::cycle::Bounds>) -> String {
    match (v, ci) {
        (Some(v), Some(b)) => format!("{v:.1} [{:.1}, {:.1}]", b.lo, b.hi),
        (v, _) => o(v),
    }
}

/// A signed difference ± its half-width.
pub fn signed(v: Option<f64>, ci: Option<f64>) -> String {
    match (v, ci) {
        (Some(v), Some(c)) => format!("{v:+.1} ± {c:.1}"),
        (Some(v), None) => format!("{v:+.1}"),
        (None, _) => "–".into(),
    }
}

/// A count of GPUs in words: `1 GPU`, `8 GPUs`.
pub use powerlab_core::words::gpus;
