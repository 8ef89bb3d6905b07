//! One raw file's frame checked and split into series in one pass over its
//! rows: the rows of the instruments a collation reads
//! ([`analysed_rows`](crate::load::analysed_rows)), the checks of
//! [`check_rows`](crate::load::check_rows) and
//! [`check_content`](crate::integrity::check_content), and the series
//! [`SeriesSet::from_frame`] makes of them. The three passes and the
//! filtered copy between them took 0.2 s of every 2.3 M-row file (a
//! 4-hour 8-GPU run's), a quarter of its reading; this pass gives the same
//! series and fails the same first check (tested against them). A file
//! holding several foreign GPUs (or nodes) is named by the first in row
//! order, where the passes named one of them in no set order.

use crate::error::CollateError;
use crate::integrity::{self, ContentFaults, ContentRule};
use crate::load::{ANALYSED, RowFaults};
use crate::series::SeriesSet;
use polars::prelude::*;
use polars_arrow::array::Array;
use powerlab_core::Instrument;
use powerlab_rundir::Manifest;
use std::path::Path;

type I64Array = <Int64Type as PolarsDataType>::Array;
type F64Array = <Float64Type as PolarsDataType>::Array;
type StrArray = <StringType as PolarsDataType>::Array;

/// What one pass over a file's analysed rows found.
struct Found {
    rows: RowFaults,
    content: ContentFaults,
    /// Each analysed instrument's points ([`ANALYSED`]'s order), in file
    /// order (rows with an empty field left out, as `from_frame` does).
    points: Vec<Vec<(i64, f64)>>,
}

/// A string column's row read once per change of its view: rows whose
/// views are equal hold equal strings (the string itself, or the same
/// bytes of the same buffer), so only a row whose view differs from the
/// row before's is read.
struct Keyed<T: Copy> {
    last: Option<(u128, T)>,
}

impl<T: Copy> Keyed<T> {
    fn get(&mut self, view: u128, read: impl FnOnce() -> T) -> T {
        match self.last {
            Some((v, t)) if v == view => t,
            _ => {
                let t = read();
                self.last = Some((view, t));
                t
            }
        }
    }
}

/// The last view of each string column, and what it read as: the
/// instrument's place in [`ANALYSED`], whether the node is the run's and
/// the GPU the file's.
struct Keys {
    inst: Keyed<Option<usize>>,
    node_ok: Keyed<bool>,
    gpu_ok: Keyed<bool>,
}

/// What the rows of a GPU's file must be.
struct Expect<'a> {
    bounds: (i64, i64),
    /// None for a GPU the manifest does not list (refused before).
    rule: Option<ContentRule<'a>>,
    node: &'a str,
    gpu: &'a str,
}

/// The analysed rows of a raw file's frame (every row, as read), checked
/// as [`check_rows`](crate::load::check_rows) then
/// [`check_content`](crate::integrity::check_content) check them, split
/// into series as [`SeriesSet::from_frame`] splits them.
///
/// # Errors
///
/// [`check_listed`](crate::integrity::check_listed)'s error for a file of
/// a GPU the manifest does not list; the first error those checks give, in
/// their order;
/// [`CollateError::Polars`] when a column is missing or of another type.
pub(crate) fn checked_series(
    path: &Path,
    df: &DataFrame,
    bounds: (i64, i64),
    manifest: &Manifest,
) -> Result<SeriesSet, CollateError> {
    let mut df = df.clone();
    if df.should_rechunk() {
        df.align_chunks_par();
    }
    let col = |name: &str| {
        df.column(name)
            .map(|c| c.as_materialized_series().clone())
            .map_err(CollateError::polars("splitting raw samples"))
    };
    let [ts, node, gpu, inst, value] = [
        col("ts_ns")?,
        col("node")?,
        col("gpu")?,
        col("instrument")?,
        col("value")?,
    ];
    let typed = || CollateError::polars("splitting raw samples");
    let (ts, value) = (ts.i64().map_err(typed())?, value.f64().map_err(typed())?);
    let [node, gpu, inst] = [&node, &gpu, &inst].map(|c| c.str().map_err(typed()));
    let (node, gpu, inst) = (node?, gpu?, inst?);
    integrity::check_listed(path, manifest)?;
    let key = integrity::file_key(path);
    let expect = Expect {
        bounds,
        rule: manifest
            .backend
            .gpus
            .iter()
            .find(|g| g.key == key)
            .map(|g| ContentRule::of(g, &manifest.backend.node_id)),
        node: &manifest.backend.node_id,
        gpu: &key,
    };
    let mut found = Found {
        rows: RowFaults::default(),
        content: ContentFaults::default(),
        points: vec![Vec::new(); ANALYSED.len()],
    };
    let chunks = ts
        .downcast_iter()
        .zip(value.downcast_iter())
        .zip(node.downcast_iter())
        .zip(gpu.downcast_iter())
        .zip(inst.downcast_iter());
    for ((((t, v), n), g), i) in chunks {
        scan_chunk((t, v), [n, g, i], &expect, &mut found);
    }
    found.rows.judge(path, bounds)?;
    if let Some(rule) = &expect.rule {
        rule.judge(path, found.content)?;
    }
    Ok(series_of(&expect, found.points))
}

/// One chunk's rows into `found`.
fn scan_chunk(
    (t, v): (&I64Array, &F64Array),
    [n, g, i]: [&StrArray; 3],
    expect: &Expect<'_>,
    found: &mut Found,
) {
    // A view names a buffer of its own chunk: what one chunk's view read
    // as says nothing of another chunk's.
    let mut keys = Keys {
        inst: Keyed { last: None },
        node_ok: Keyed { last: None },
        gpu_ok: Keyed { last: None },
    };
    let (tv, vv) = (t.values().as_slice(), v.values().as_slice());
    let views = [n.views(), g.views(), i.views()];
    for j in 0..t.len() {
        if !i.is_valid(j) {
            continue;
        }
        let Some(slot) = keys.inst.get(views[2][j].as_u128(), || {
            Instrument::parse(i.value(j)).and_then(|x| ANALYSED.iter().position(|a| *a == x))
        }) else {
            continue;
        };
        let (has_t, has_v) = (t.is_valid(j), v.is_valid(j));
        if !(has_t && has_v) {
            found.rows.empty += 1;
        }
        let (ts, value) = (tv[j], vv[j]);
        if has_v && !value.is_finite() {
            found.rows.not_finite += 1;
        }
        if has_t && (ts < expect.bounds.0 || ts > expect.bounds.1) {
            found.rows.outside += 1;
        }
        let has_n = n.is_valid(j);
        let has_g = g.is_valid(j);
        if has_g
            && !keys
                .gpu_ok
                .get(views[1][j].as_u128(), || g.value(j) == expect.gpu)
        {
            found
                .content
                .other_gpu
                .get_or_insert_with(|| g.value(j).to_string());
        }
        if has_n
            && !keys
                .node_ok
                .get(views[0][j].as_u128(), || n.value(j) == expect.node)
        {
            found
                .content
                .other_node
                .get_or_insert_with(|| n.value(j).to_string());
        }
        if let (Some(rule), true) = (&expect.rule, has_v) {
            found.content.reading(rule, ANALYSED[slot], value);
        }
        if has_t && has_v && has_n && has_g {
            found.points[slot].push((ts, value));
        }
    }
}

/// The series of a file whose rows passed: each instrument's points,
/// sorted by time where they are not.
fn series_of(expect: &Expect<'_>, points: Vec<Vec<(i64, f64)>>) -> SeriesSet {
    SeriesSet::of_sorted(
        ANALYSED
            .iter()
            .zip(points)
            .filter(|(_, s)| !s.is_empty())
            .map(|(instrument, mut s)| {
                if !s.windows(2).all(|w| w[0].0 <= w[1].0) {
                    s.sort_by_key(|x| x.0);
                }
                (
                    (expect.node.to_string(), expect.gpu.to_string(), *instrument),
                    s,
                )
            }),
    )
}

#[cfg(test)]
mod tests;
