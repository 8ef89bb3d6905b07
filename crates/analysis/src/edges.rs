//! Edge statistics per rung and per edge kind from `edges.csv`: how far
//! each rise and each fall landed from its intended time (signed median,
//! 99th percentile and maximum of the absolute error), the start error and
//! skew across GPUs (against each GPU's intended start, so a deliberate
//! stagger is never counted as skew), the cross-GPU skew of the k-th rise
//! and fall of every GPU,
//! and the device clocks' drift over the rung (from the `device_clock`
//! notes). Nothing is pooled across rungs: a fast rung's thousands of good
//! edges cannot hide a slow rung's late falls.

use polars::prelude::*;
use polars_arrow::array::Array;
use powerlab_core::shape::EdgeKind;
use powerlab_core::units::ns_f64_to_us;
use powerlab_rundir::events::DEVICE_CLOCK_TOPIC;
use powerlab_rundir::{RunDir, RunEvent};
use powerlab_samples::error::CollateError;
use powerlab_samples::load::Run;
use powerlab_samples::stats::quantile;
use std::collections::BTreeMap;

use std::collections::HashMap;
use std::sync::Arc;

/// One edge kind's error in one rung, µs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct KindStats {
    /// Median of achieved − intended (signed: a systematic lateness shows).
    pub p50_us: f64,
    /// 99th percentile of |achieved − intended|.
    pub p99_us: f64,
    /// Largest |achieved − intended|.
    pub max_us: f64,
    /// Edges counted.
    pub n: usize,
}

/// Per-rung edge statistics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EdgeStats {
    /// Rising edges (None: the rung had none).
    pub rise: Option<KindStats>,
    /// Falling edges.
    pub fall: Option<KindStats>,
    /// Largest |start error| of any GPU, µs.
    pub start_error_max_us: f64,
    /// Spread of start errors across GPUs (max − min), µs.
    pub start_skew_us: f64,
    /// For the k-th rise (fall) of every GPU, the spread across GPUs of
    /// achieved − intended: its 99th percentile over the rung, µs (None
    /// with one GPU).
    pub edge_skew_p99_us: Option<f64>,
    /// Largest |drift| of any GPU's device clock against the run clock over
    /// the rung, µs per s.
    pub clock_drift_ppm: Option<f64>,
    /// Longest offset-probe round trip of the rung, µs (each offset is
    /// known to about half of it).
    pub probe_rtt_us: Option<f64>,
}

impl EdgeStats {
    /// Why the rung's edges are out of tolerance (`p99_us`, `max_us` for
    /// rises and falls alike), or None when they hold.
    pub fn verdict(&self, p99_us: f64, max_us: f64) -> Option<String> {
        let mut why = Vec::new();
        for (name, k) in [
            (EdgeKind::Rise.as_str(), self.rise),
            (EdgeKind::Fall.as_str(), self.fall),
        ] {
            let Some(k) = k else { continue };
            if k.p99_us > p99_us {
                why.push(format!("{name} p99 {:.0} µs > {p99_us:.0}", k.p99_us));
            }
            if k.max_us > max_us {
                why.push(format!("{name} max {:.0} µs > {max_us:.0}", k.max_us));
            }
        }
        if let Some(s) = self.edge_skew_p99_us.filter(|s| *s > p99_us) {
            why.push(format!("cross-GPU skew p99 {s:.0} µs > {p99_us:.0}"));
        }
        (!why.is_empty()).then(|| why.join(", "))
    }
}

/// Signed edge errors by rung, ns.
type ErrorsByRung = BTreeMap<u32, Vec<f64>>;

/// Signed errors (achieved − intended) of every edge, by kind (`start`,
/// `rise`, `fall`) and rung, in whole ns: quantiles are taken in ns and
/// only then put in µs, so a midpoint such as 387.5 ns is exact before the
/// report rounds it. One pass over the edges for every statistic.
fn errors_by_kind(df: &DataFrame) -> Result<HashMap<EdgeKind, ErrorsByRung>, CollateError> {
    let mut by: HashMap<EdgeKind, ErrorsByRung> = HashMap::new();
    for e in edge_rows(df)? {
        by.entry(e.kind)
            .or_default()
            .entry(e.rung_id)
            .or_default()
            .push((e.achieved_ns - e.intended_ns) as f64);
    }
    Ok(by)
}

/// An edge figure in µs, rounded to the whole ns (halves away from zero, as
/// [`powerlab_samples::stats::r3`] rounds every figure) while still in ns: the
/// report's three decimals of µs are then the exact rounding of the figure,
/// not of its nearest binary fraction (387.5 ns is 0.388 µs, −374.5 ns is
/// −0.375 µs).
fn ns_to_us(ns: f64) -> f64 {
    ns_f64_to_us(ns.round())
}

/// One rung's rise (or fall) figures from its signed errors, ns.
fn kind_stats(err: &[f64]) -> KindStats {
    let abs: Vec<f64> = err.iter().map(|e| e.abs()).collect();
    KindStats {
        p50_us: ns_to_us(quantile(err, 0.5).unwrap_or(0.0)),
        p99_us: ns_to_us(quantile(&abs, 0.99).unwrap_or(0.0)),
        max_us: ns_to_us(abs.iter().copied().fold(0.0, f64::max)),
        n: err.len(),
    }
}

/// One whole row of an edges frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EdgeView<'a> {
    /// Rung id.
    pub rung_id: u32,
    /// GPU key.
    pub gpu: &'a str,
    /// `start`, `rise` or `fall`.
    pub kind: EdgeKind,
    /// When the edge was meant to be, ns.
    pub intended_ns: i64,
    /// When it was, ns.
    pub achieved_ns: i64,
}

/// Every whole row of an edges frame ([`edges_frame`]), in file order.
///
/// # Errors
///
/// Returns [`CollateError::Polars`] when a column (`rung_id`, `gpu`,
/// `kind`, `intended_ns`, `achieved_ns`) is missing or of the wrong type.
pub fn edge_rows(
    df: &DataFrame,
) -> Result<Box<dyn Iterator<Item = EdgeView<'_>> + '_>, CollateError> {
    let column = |n: &str| {
        df.column(n)
            .map_err(CollateError::polars("a column of edges.csv"))
    };
    let rung = column("rung_id")?
        .u32()
        .map_err(CollateError::polars("rung_id"))?;
    let gpu = column("gpu")?.str().map_err(CollateError::polars("gpu"))?;
    let kind = column("kind")?
        .str()
        .map_err(CollateError::polars("kind"))?;
    let intended = column("intended_ns")?
        .i64()
        .map_err(CollateError::polars("intended_ns"))?;
    let achieved = column("achieved_ns")?
        .i64()
        .map_err(CollateError::polars("achieved_ns"))?;
    // Chunk by chunk where the columns' chunks line up (one CSV read's
    // always do): polars' iterator of five columns took 0.2 s a pass over
    // a 4-hour 8-GPU run's 1.7 M edges, and the statistics take two.
    let first: Vec<usize> = rung.chunk_lengths().collect();
    let aligned = [
        gpu.chunk_lengths().collect::<Vec<_>>(),
        kind.chunk_lengths().collect(),
        intended.chunk_lengths().collect(),
        achieved.chunk_lengths().collect(),
    ]
    .iter()
    .all(|l| *l == first);
    if aligned {
        let chunks = rung
            .downcast_iter()
            .zip(gpu.downcast_iter())
            .zip(kind.downcast_iter())
            .zip(intended.downcast_iter())
            .zip(achieved.downcast_iter());
        return Ok(Box::new(chunks.flat_map(|((((r, g), k), i), a)| {
            (0..r.len()).filter_map(move |j| {
                Some(EdgeView {
                    rung_id: r.is_valid(j).then(|| r.value(j))?,
                    gpu: g.get(j)?,
                    kind: EdgeKind::parse(k.get(j)?)?,
                    intended_ns: i.is_valid(j).then(|| i.value(j))?,
                    achieved_ns: a.is_valid(j).then(|| a.value(j))?,
                })
            })
        })));
    }
    Ok(Box::new(
        rung.iter()
            .zip(gpu.iter())
            .zip(kind.iter())
            .zip(intended.iter())
            .zip(achieved.iter())
            .filter_map(|((((r, g), k), i), a)| {
                Some(EdgeView {
                    rung_id: r?,
                    gpu: g?,
                    kind: EdgeKind::parse(k?)?,
                    intended_ns: i?,
                    achieved_ns: a?,
                })
            }),
    ))
}

/// For each rung: the k-th rise (and k-th fall) of each GPU, in intended
/// order; the spread across GPUs of achieved − intended for each k; the
/// 99th percentile of those spreads, µs.
fn cross_gpu_skew_p99(df: &DataFrame) -> Result<Vec<(u32, f64)>, CollateError> {
    // (rung, rise?) -> gpu -> [(intended, error µs)]
    type ByGpu<'a> = BTreeMap<&'a str, Vec<(i64, f64)>>;
    let mut by: BTreeMap<(u32, bool), ByGpu<'_>> = BTreeMap::new();
    for e in edge_rows(df)?.filter(|e| e.kind != EdgeKind::Start) {
        by.entry((e.rung_id, e.kind == EdgeKind::Rise))
            .or_default()
            .entry(e.gpu)
            .or_default()
            .push((
                e.intended_ns,
                powerlab_core::units::ns_to_us(e.achieved_ns - e.intended_ns),
            ));
    }
    let mut spreads: std::collections::BTreeMap<u32, Vec<f64>> = std::collections::BTreeMap::new();
    for ((r, _), gpus) in by.iter_mut() {
        if gpus.len() < 2 {
            continue;
        }
        for v in gpus.values_mut() {
            v.sort_by_key(|x| x.0);
        }
        let n = gpus.values().map(Vec::len).min().unwrap_or(0);
        for k in 0..n {
            let (lo, hi) = gpus
                .values()
                .map(|v| v[k].1)
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), e| {
                    (lo.min(e), hi.max(e))
                });
            spreads.entry(*r).or_default().push(hi - lo);
        }
    }
    Ok(spreads
        .into_iter()
        .filter_map(|(r, v)| quantile(&v, 0.99).map(|q| (r, q)))
        .collect())
}

/// Reads `edges.csv` into a frame (`rung_id`, `gpu`, `index`, `kind`,
/// `intended_ns`, `achieved_ns`) from the run directory's reader
/// ([`powerlab_rundir::edges::edges_bytes`]); None when the file is absent
/// or holds no whole row. A torn last line (a killed run) is dropped.
///
/// # Errors
///
/// Returns [`CollateError::Io`] when `edges.csv` exists but cannot be read,
/// and [`CollateError::BadRaw`] naming it when it is not a regular file, its
/// header or rows do not parse, or an edge (rung, GPU, index) is listed
/// twice.
pub fn edges_frame(dir: &RunDir) -> Result<Option<DataFrame>, CollateError> {
    let path = dir.edges();
    let bad = |message: String| CollateError::BadRaw {
        path: path.clone(),
        message,
    };
    let from_rundir = |e: powerlab_rundir::RunDirError| match e {
        powerlab_rundir::RunDirError::Io { source, .. } => CollateError::io(&path, source),
        powerlab_rundir::RunDirError::Format { message, .. } => bad(message),
        other => bad(other.to_string()),
    };
    let Some(bytes) = powerlab_rundir::edges::edges_bytes(&path).map_err(from_rundir)? else {
        return Ok(None);
    };
    let [rung_id, gpu, index, kind, intended, achieved] = powerlab_rundir::edges::EDGE_COLUMNS;
    let schema = Arc::new(Schema::from_iter([
        Field::new(rung_id.into(), DataType::UInt32),
        Field::new(gpu.into(), DataType::String),
        Field::new(index.into(), DataType::UInt32),
        Field::new(kind.into(), DataType::String),
        Field::new(intended.into(), DataType::Int64),
        Field::new(achieved.into(), DataType::Int64),
    ]));
    let df = CsvReadOptions::default()
        .with_has_header(true)
        .with_schema(Some(schema))
        .into_reader_with_file_handle(std::io::Cursor::new(bytes))
        .finish()
        .map_err(|e| bad(powerlab_samples::load::without_hints(&e.to_string())))?;
    // Every kind is one the run writes: another one was edited in.
    if let Ok(kinds) = df.column(kind).and_then(|c| c.str().cloned())
        && let Some((row, k)) = kinds
            .iter()
            .enumerate()
            .find(|(_, k)| k.and_then(EdgeKind::parse).is_none())
    {
        return Err(bad(format!(
            "line {}: edge kind `{}` is not start, rise or fall: the file was edited after the run; restore it from the original run directory",
            row + 2,
            k.unwrap_or("")
        )));
    }
    // One row per (rung, GPU, edge): a repeated one was added or copied.
    if let (Ok(r), Ok(g), Ok(i)) = (
        df.column(rung_id).and_then(|c| c.u32().cloned()),
        df.column(gpu).and_then(|c| c.str().cloned()),
        df.column(index).and_then(|c| c.u32().cloned()),
    ) {
        check_unique(&path, &r, &g, &i).map_err(from_rundir)?;
    }
    Ok(Some(df))
}

/// Every (rung, GPU, index) once ([`powerlab_rundir::edges::check_unique`]),
/// read from the columns' slices where none is empty: polars' iterator of
/// three columns took 0.6 s of 1.7 M edges (a 4-hour 8-GPU run), the
/// slices 0.05 s.
fn check_unique(
    path: &std::path::Path,
    r: &UInt32Chunked,
    g: &StringChunked,
    i: &UInt32Chunked,
) -> Result<(), powerlab_rundir::RunDirError> {
    let (r, g, i) = (r.rechunk(), g.rechunk(), i.rechunk());
    let strings = g.downcast_iter().next().filter(|_| g.null_count() == 0);
    match (r.cont_slice(), i.cont_slice(), strings) {
        (Ok(rs), Ok(is), Some(gs)) => powerlab_rundir::edges::check_unique(
            path,
            rs.iter()
                .zip(gs.values_iter())
                .zip(is)
                .map(|((r, g), i)| (*r, g, *i)),
        ),
        _ => powerlab_rundir::edges::check_unique(
            path,
            r.iter()
                .zip(g.iter())
                .zip(i.iter())
                .map(|((r, g), i)| (r.unwrap_or(0), g.unwrap_or("?"), i.unwrap_or(0))),
        ),
    }
}

/// Computes edge statistics for every rung present in the edges frame.
///
/// # Errors
///
/// Returns [`CollateError::Polars`] when a column the statistics read
/// (`rung_id`, `gpu`, `kind`, `intended_ns`, `achieved_ns`) is missing or
/// of the wrong type.
pub fn edge_stats(
    edges: Option<&DataFrame>,
    run: &Run,
) -> Result<HashMap<u32, EdgeStats>, CollateError> {
    let mut out: HashMap<u32, EdgeStats> = HashMap::new();
    let Some(df) = edges else { return Ok(out) };
    let mut by_kind = errors_by_kind(df)?;
    for (id, err) in by_kind.remove(&EdgeKind::Start).unwrap_or_default() {
        let e = out.entry(id).or_default();
        let (lo, hi) = err
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(*v), hi.max(*v))
            });
        e.start_error_max_us = ns_to_us(err.iter().map(|v| v.abs()).fold(0.0, f64::max));
        e.start_skew_us = ns_to_us(hi - lo);
    }
    for (id, err) in by_kind.remove(&EdgeKind::Rise).unwrap_or_default() {
        out.entry(id).or_default().rise = Some(kind_stats(&err));
    }
    for (id, err) in by_kind.remove(&EdgeKind::Fall).unwrap_or_default() {
        out.entry(id).or_default().fall = Some(kind_stats(&err));
    }
    // Cross-GPU skew: the k-th rise (fall) of every GPU of a rung, whatever
    // its stagger, spread across GPUs.
    if run.manifest.backend.gpus.len() > 1 {
        for (id, p99) in cross_gpu_skew_p99(df)? {
            out.entry(id).or_default().edge_skew_p99_us = Some(p99);
        }
    }
    for e in &run.events {
        let RunEvent::Note { topic, detail, .. } = e else {
            continue;
        };
        if topic != DEVICE_CLOCK_TOPIC {
            continue;
        }
        let Some(id) = detail.get("rung_id").and_then(|v| v.as_u64()) else {
            continue;
        };
        let gpus = detail
            .get("gpus")
            .and_then(|v| v.as_array())
            .cloned()
            .unwrap_or_default();
        let drift = gpus
            .iter()
            .filter_map(|g| g.get("drift_ppm").and_then(|v| v.as_f64()))
            .map(f64::abs)
            .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))));
        let rtt = gpus
            .iter()
            .filter_map(|g| g.get("probe_rtt_ns").and_then(|v| v.as_f64()))
            .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))));
        let s = out.entry(id as u32).or_default();
        s.clock_drift_ppm = drift;
        s.probe_rtt_us = rtt.map(ns_f64_to_us);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test that unwraps reports its failure by panicking
    use super::{EdgeView, edge_rows};
    use polars::prelude::*;
    use powerlab_core::shape::EdgeKind;

    /// Six edges, two whole (an empty field or an unknown kind drops a
    /// row), as one frame of two chunks.
    fn frame() -> DataFrame {
        let rung = [Some(1u32), Some(1), None, Some(2), Some(2), Some(2)];
        let gpu = [
            Some("gpu0"),
            Some("gpu1"),
            Some("gpu0"),
            None,
            Some("gpu0"),
            Some("gpu1"),
        ];
        let kind = [
            Some("rise"),
            Some("fall"),
            Some("rise"),
            Some("rise"),
            Some("bounce"),
            Some("start"),
        ];
        let intended = [
            Some(10i64),
            Some(20),
            Some(30),
            Some(40),
            Some(50),
            Some(60),
        ];
        let achieved = [Some(11i64), Some(22), Some(33), Some(44), Some(55), None];
        let part = |r: std::ops::Range<usize>| {
            DataFrame::new_infer_height(vec![
                Column::new("rung_id".into(), &rung[r.clone()]),
                Column::new("gpu".into(), &gpu[r.clone()]),
                Column::new("kind".into(), &kind[r.clone()]),
                Column::new("intended_ns".into(), &intended[r.clone()]),
                Column::new("achieved_ns".into(), &achieved[r]),
            ])
            .unwrap()
        };
        let mut df = part(0..3);
        df.vstack_mut_owned(part(3..6)).unwrap();
        df
    }

    #[test]
    fn edge_rows_are_the_whole_rows_whether_the_chunks_line_up_or_not() {
        let whole = vec![
            EdgeView {
                rung_id: 1,
                gpu: "gpu0",
                kind: EdgeKind::Rise,
                intended_ns: 10,
                achieved_ns: 11,
            },
            EdgeView {
                rung_id: 1,
                gpu: "gpu1",
                kind: EdgeKind::Fall,
                intended_ns: 20,
                achieved_ns: 22,
            },
        ];
        let aligned = frame();
        assert_eq!(aligned.column("gpu").unwrap().n_chunks(), 2);
        assert_eq!(edge_rows(&aligned).unwrap().collect::<Vec<_>>(), whole);
        // One column in one chunk, the others in two: read row by row.
        let mut mixed = frame();
        let kind = mixed
            .column("kind")
            .unwrap()
            .as_materialized_series()
            .rechunk();
        mixed.with_column(kind.into_column()).unwrap();
        assert_eq!(mixed.column("kind").unwrap().n_chunks(), 1);
        assert_eq!(edge_rows(&mixed).unwrap().collect::<Vec<_>>(), whole);
    }
}
