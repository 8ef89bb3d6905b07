//! The raw readings by series, and the recorded edges by rung: the two
//! indexes every analysis reads instead of the raw frames. A run's samples
//! are split once into time-sorted series per (node, GPU, instrument), and
//! its edges once into achieved times per (rung, GPU, kind); small helpers
//! cut spans and updates out of a series.

use polars::prelude::*;
use powerlab_core::Instrument;
use powerlab_core::shape::EdgeKind;
use powerlab_core::units::ns_to_ms;
use std::collections::{BTreeMap, HashMap};

/// Every raw series by (node, GPU, instrument), time-sorted. A raw row
/// whose instrument this version does not know is not kept (no analysis
/// could read it).
#[derive(Debug, PartialEq)]
pub struct SeriesSet {
    by: BTreeMap<(String, String, Instrument), Vec<(i64, f64)>>,
}

impl SeriesSet {
    /// Splits the raw power frame. A handful of keys over millions of rows:
    /// the key of the previous row is tried first (a raw file holds one
    /// GPU), then the few seen so far, so no key is allocated per row.
    pub fn from_frame(power: &DataFrame) -> SeriesSet {
        let mut by = BTreeMap::new();
        let col = |name: &str| power.column(name).ok();
        let (Some(ts), Some(v), Some(node), Some(gpu), Some(inst)) = (
            col("ts_ns"),
            col("value"),
            col("node"),
            col("gpu"),
            col("instrument"),
        ) else {
            return SeriesSet { by };
        };
        let (Ok(ts), Ok(v), Ok(node), Ok(gpu), Ok(inst)) =
            (ts.i64(), v.f64(), node.str(), gpu.str(), inst.str())
        else {
            return SeriesSet { by };
        };
        type Keyed<'a> = (&'a str, &'a str, &'a str, Vec<(i64, f64)>);
        let mut keys: Vec<Keyed<'_>> = Vec::new();
        let mut last = 0usize;
        for ((((t, val), n), g), i) in ts
            .iter()
            .zip(v.iter())
            .zip(node.iter())
            .zip(gpu.iter())
            .zip(inst.iter())
        {
            let (Some(t), Some(val), Some(n), Some(g), Some(i)) = (t, val, n, g, i) else {
                continue;
            };
            let same = |k: &(&str, &str, &str, Vec<(i64, f64)>)| k.2 == i && k.1 == g && k.0 == n;
            if !keys.get(last).is_some_and(same) {
                last = match keys.iter().position(same) {
                    Some(k) => k,
                    None => {
                        keys.push((n, g, i, Vec::new()));
                        keys.len() - 1
                    }
                };
            }
            keys[last].3.push((t, val));
        }
        for (n, g, i, mut s) in keys {
            let Some(instrument) = Instrument::parse(i) else {
                continue;
            };
            if !s.windows(2).all(|w| w[0].0 <= w[1].0) {
                s.sort_by_key(|x| x.0);
            }
            by.insert((n.to_string(), g.to_string(), instrument), s);
        }
        SeriesSet { by }
    }

    /// The series of several sets in one: each key's points in the sets'
    /// order, sorted by time (stably) where that leaves them out of
    /// order, as [`SeriesSet::from_frame`] makes them of one frame of all
    /// the sets' rows.
    pub fn merged(parts: Vec<SeriesSet>) -> SeriesSet {
        let mut by: BTreeMap<(String, String, Instrument), Vec<(i64, f64)>> = BTreeMap::new();
        for part in parts {
            for (key, mut points) in part.by {
                let s = match by.entry(key) {
                    std::collections::btree_map::Entry::Vacant(e) => {
                        e.insert(points);
                        continue;
                    }
                    std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                };
                s.append(&mut points);
                if !s.windows(2).all(|w| w[0].0 <= w[1].0) {
                    s.sort_by_key(|x| x.0);
                }
            }
        }
        SeriesSet { by }
    }

    /// A set of the given series by (node, GPU, instrument), each sorted
    /// by time.
    pub fn of(
        series: impl IntoIterator<Item = ((String, String, Instrument), Vec<(i64, f64)>)>,
    ) -> SeriesSet {
        let mut by: BTreeMap<(String, String, Instrument), Vec<(i64, f64)>> = BTreeMap::new();
        for (key, points) in series {
            by.entry(key).or_default().extend(points);
        }
        for s in by.values_mut() {
            s.sort_by_key(|x| x.0);
        }
        SeriesSet { by }
    }

    /// A set of series each already sorted by time, one per key.
    pub(crate) fn of_sorted(
        series: impl IntoIterator<Item = ((String, String, Instrument), Vec<(i64, f64)>)>,
    ) -> SeriesSet {
        SeriesSet {
            by: series.into_iter().collect(),
        }
    }

    /// One series of a single-node run (empty if absent).
    pub fn get(&self, gpu: &str, instrument: Instrument) -> &[(i64, f64)] {
        self.by
            .iter()
            .find(|((_, g, i), _)| g == gpu && *i == instrument)
            .map(|(_, v)| v.as_slice())
            .unwrap_or(&[])
    }

    /// The latest reading of any series, epoch ns.
    pub fn last_ts_ns(&self) -> Option<i64> {
        self.by.values().filter_map(|s| s.last().map(|x| x.0)).max()
    }

    /// One series of one node (empty if absent).
    pub fn get_at(&self, node: &str, gpu: &str, instrument: Instrument) -> &[(i64, f64)] {
        self.by
            .get(&(node.to_string(), gpu.to_string(), instrument))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }
}

/// The readings of a time-sorted series with `from <= t < to`.
pub fn span(s: &[(i64, f64)], from: i64, to: i64) -> &[(i64, f64)] {
    let lo = s.partition_point(|x| x.0 < from);
    let hi = s.partition_point(|x| x.0 < to).max(lo);
    &s[lo..hi]
}

/// Readings where the value changed, at the first read that showed it.
pub fn changes(s: &[(i64, f64)]) -> Vec<(i64, f64)> {
    s.windows(2)
        .filter(|w| w[1].1 != w[0].1)
        .map(|w| w[1])
        .collect()
}

/// Times between consecutive points, ms (zero gaps left out).
pub fn spacings_ms(s: &[(i64, f64)]) -> Vec<f64> {
    s.windows(2)
        .map(|w| ns_to_ms(w[1].0 - w[0].0))
        .filter(|d| *d > 0.0)
        .collect()
}

/// Median time between consecutive points, ms.
pub fn median_spacing_ms(s: &[(i64, f64)]) -> Option<f64> {
    crate::stats::median(&spacings_ms(s))
}

/// Achieved edge times by (rung, GPU, kind), grouped once: a long campaign
/// has millions of edges and every rung of every GPU asks for its own.
pub struct EdgeIndex(BTreeMap<(u32, String, EdgeKind), Vec<i64>>);

impl EdgeIndex {
    /// Groups the edges frame (as `edges::edges_frame` reads `edges.csv`) by
    /// rung, GPU and kind, each key's times in file order, in one pass over
    /// the columns' arrays (polars' `partition_by` of three columns took
    /// most of a 4-hour 8-GPU run's 0.6 s of edges). A row with an empty
    /// rung, GPU, kind or achieved time, or a kind this version does not
    /// know, is no edge.
    pub fn from_frame(edges: Option<&DataFrame>) -> EdgeIndex {
        let column = |name: &str| {
            edges.and_then(|df| {
                df.column(name)
                    .ok()
                    .map(|c| c.as_materialized_series().clone())
            })
        };
        let (Some(rung), Some(gpu), Some(kind), Some(at)) = (
            column("rung_id"),
            column("gpu"),
            column("kind"),
            column("achieved_ns"),
        ) else {
            return EdgeIndex(BTreeMap::new());
        };
        // The columns of one CSV read are chunked alike; any others are
        // made one chunk each, so that their arrays go side by side.
        let lengths = |s: &Series| s.chunk_lengths().collect::<Vec<_>>();
        let alike = [&gpu, &kind, &at]
            .iter()
            .all(|s| lengths(s) == lengths(&rung));
        let [rung, gpu, kind, at] =
            [rung, gpu, kind, at].map(|s| if alike { s } else { s.rechunk() });
        let (Ok(rung), Ok(gpu), Ok(kind), Ok(at)) = (rung.u32(), gpu.str(), kind.str(), at.i64())
        else {
            return EdgeIndex(BTreeMap::new());
        };
        let mut by: HashMap<(u32, &str, EdgeKind), Vec<i64>> = HashMap::new();
        let arrays = rung
            .downcast_iter()
            .zip(gpu.downcast_iter())
            .zip(kind.downcast_iter())
            .zip(at.downcast_iter());
        for (((r, g), k), a) in arrays {
            for j in 0..r.len() {
                let kind = k.get(j).and_then(EdgeKind::parse);
                if let (Some(rung), Some(gpu), Some(kind), Some(at)) =
                    (r.get(j), g.get(j), kind, a.get(j))
                {
                    by.entry((rung, gpu, kind)).or_default().push(at);
                }
            }
        }
        EdgeIndex(
            by.into_iter()
                .map(|((rung, gpu, kind), at)| ((rung, gpu.to_string(), kind), at))
                .collect(),
        )
    }

    /// An index of the given edges, each key's times sorted (edges the
    /// collator places itself: a workload rung's iteration starts).
    pub fn of(edges: impl IntoIterator<Item = ((u32, String, EdgeKind), Vec<i64>)>) -> EdgeIndex {
        let mut m: BTreeMap<(u32, String, EdgeKind), Vec<i64>> = BTreeMap::new();
        for (key, times) in edges {
            m.entry(key).or_default().extend(times);
        }
        for v in m.values_mut() {
            v.sort_unstable();
        }
        EdgeIndex(m)
    }

    /// Achieved times of one rung's edges of one kind on one GPU.
    pub fn get(&self, rung: u32, gpu: &str, kind: EdgeKind) -> &[i64] {
        self.0
            .get(&(rung, gpu.to_string(), kind))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests;
