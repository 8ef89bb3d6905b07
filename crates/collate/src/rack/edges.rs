//! The rack's edge figures, from every node's `edges.csv` read one node at
//! a time and reduced to what the figures need: per rung and edge kind, how
//! often each error (achieved − intended, whole ns) occurred, which gives
//! the percentiles exactly; per k-th edge, the lowest and highest error of
//! any GPU so far (the cross-GPU skew); per rung, the lowest and highest
//! start error. Memory is bounded by one node's edges and the rungs' edge
//! counts, not by the number of nodes. Each edge's error is on its own
//! node's clock, as the start skew is.

use polars::prelude::DataFrame;
use powerlab_analysis::edges::{EdgeStats, KindStats, edge_rows, edges_frame};
use powerlab_core::shape::EdgeKind;
use powerlab_core::units::ns_to_us;
use powerlab_rundir::RunDir;
use powerlab_samples::error::CollateError;
use powerlab_samples::stats::{quantile, weighted_quantile_sorted};
use std::collections::{BTreeMap, HashMap};

/// (rung, rise?) as a key.
type Key = (u32, bool);

/// One node's edges of one (rung, kind), by GPU: (intended, error) ns.
type ByGpu<'a> = BTreeMap<&'a str, Vec<(i64, i64)>>;

/// The nodes' edges, reduced.
#[derive(Debug, Default)]
pub struct RackEdges {
    counts: BTreeMap<Key, BTreeMap<i64, u64>>,
    kth: BTreeMap<Key, Vec<(i64, i64)>>,
    starts: BTreeMap<u32, (i64, i64)>,
    gpus: usize,
}

impl RackEdges {
    /// Adds one node's `edges.csv` (none: nothing to add).
    ///
    /// # Errors
    ///
    /// Fails as [`edges_frame`] does, and with [`CollateError::Polars`] when
    /// a column is missing or of the wrong type.
    pub fn add_node(&mut self, dir: &RunDir, gpus: usize) -> Result<(), CollateError> {
        self.add_frame(edges_frame(dir)?.as_ref(), gpus)
    }

    /// Adds every node's `edges.csv`, in the order given: each file is read
    /// and parsed on a second thread while the previous one is reduced here
    /// (at most two nodes' edges in memory at once).
    ///
    /// # Errors
    ///
    /// Fails as [`RackEdges::add_node`] does, on the first node that fails.
    pub fn add_nodes(&mut self, nodes: &[(&RunDir, usize)]) -> Result<(), CollateError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        std::thread::scope(|s| {
            s.spawn(move || {
                for (dir, _) in nodes {
                    if tx.send(edges_frame(dir)).is_err() {
                        break;
                    }
                }
            });
            // Owned here, so an early error drops it and the reader stops.
            let rx = rx;
            for (frame, (_, gpus)) in rx.iter().zip(nodes) {
                self.add_frame(frame?.as_ref(), *gpus)?;
            }
            Ok(())
        })
    }

    fn add_frame(&mut self, df: Option<&DataFrame>, gpus: usize) -> Result<(), CollateError> {
        self.gpus += gpus;
        let Some(df) = df else {
            return Ok(());
        };
        // This node's edges by (rung, kind) and GPU, in intended order.
        let mut by: BTreeMap<Key, ByGpu<'_>> = BTreeMap::new();
        for e in edge_rows(df)? {
            let err = e.achieved_ns - e.intended_ns;
            if e.kind == EdgeKind::Start {
                let s = self.starts.entry(e.rung_id).or_insert((err, err));
                *s = (s.0.min(err), s.1.max(err));
                continue;
            }
            let key = (e.rung_id, e.kind == EdgeKind::Rise);
            *self.counts.entry(key).or_default().entry(err).or_default() += 1;
            by.entry(key)
                .or_default()
                .entry(e.gpu)
                .or_default()
                .push((e.intended_ns, err));
        }
        for (key, mut per_gpu) in by {
            for v in per_gpu.values_mut() {
                v.sort_by_key(|x| x.0);
            }
            let n = per_gpu.values().map(Vec::len).min().unwrap_or(0);
            let spans: Vec<(i64, i64)> = (0..n)
                .map(|k| {
                    per_gpu
                        .values()
                        .map(|v| v[k].1)
                        .fold((i64::MAX, i64::MIN), |(lo, hi), e| (lo.min(e), hi.max(e)))
                })
                .collect();
            match self.kth.get_mut(&key) {
                Some(old) => {
                    old.truncate(spans.len());
                    for (o, s) in old.iter_mut().zip(spans) {
                        *o = (o.0.min(s.0), o.1.max(s.1));
                    }
                }
                None => {
                    self.kth.insert(key, spans);
                }
            }
        }
        Ok(())
    }

    /// Per rung, the lowest and highest start error of any GPU, ns.
    pub fn start_spans(&self) -> &BTreeMap<u32, (i64, i64)> {
        &self.starts
    }

    /// Per-rung figures, as [`powerlab_analysis::edges::edge_stats`] gives a node's
    /// over every GPU of every node added (clock drift aside: it is each
    /// node's own, in its report).
    pub fn stats(&self) -> HashMap<u32, EdgeStats> {
        let mut out: HashMap<u32, EdgeStats> = HashMap::new();
        for (id, (lo, hi)) in &self.starts {
            let e = out.entry(*id).or_default();
            e.start_error_max_us = ns_to_us(lo.abs().max(hi.abs()));
            e.start_skew_us = ns_to_us(hi - lo);
        }
        for ((id, rise), counts) in &self.counts {
            let signed: Vec<(f64, f64)> = counts
                .iter()
                .map(|(e, n)| (ns_to_us(*e), *n as f64))
                .collect();
            let mut abs: BTreeMap<i64, u64> = BTreeMap::new();
            for (e, n) in counts {
                *abs.entry(e.abs()).or_default() += n;
            }
            let abs: Vec<(f64, f64)> = abs.iter().map(|(e, n)| (ns_to_us(*e), *n as f64)).collect();
            let k = KindStats {
                p50_us: weighted_quantile_sorted(&signed, 0.5),
                p99_us: weighted_quantile_sorted(&abs, 0.99),
                max_us: abs.last().map_or(0.0, |x| x.0),
                n: counts.values().sum::<u64>() as usize,
            };
            let e = out.entry(*id).or_default();
            if *rise {
                e.rise = Some(k);
            } else {
                e.fall = Some(k);
            }
        }
        if self.gpus > 1 {
            let mut spreads: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
            for ((id, _), spans) in &self.kth {
                spreads
                    .entry(*id)
                    .or_default()
                    .extend(spans.iter().map(|(lo, hi)| ns_to_us(hi - lo)));
            }
            for (id, v) in spreads {
                if let Some(q) = quantile(&v, 0.99) {
                    out.entry(id).or_default().edge_skew_p99_us = Some(q);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes an `edges.csv` into a bare directory and adds it.
    fn add(r: &mut RackEdges, rows: &[(u32, &str, u32, &str, i64, i64)], gpus: usize) {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::from("rung_id,gpu,index,kind,intended_ns,achieved_ns\n");
        for (rung, g, i, k, a, b) in rows {
            text.push_str(&format!("{rung},{g},{i},{k},{a},{b}\n"));
        }
        std::fs::write(
            dir.path().join(powerlab_rundir::RunFile::Edges.name()),
            text,
        )
        .unwrap();
        let rd = RunDir {
            path: dir.path().to_path_buf(),
        };
        r.add_node(&rd, gpus).unwrap();
    }

    #[test]
    fn two_nodes_reduce_to_the_figures_of_all_their_edges_at_once() {
        // Node A: two GPUs; node B: one GPU, late by 5 µs on its 2nd rise.
        let a = [
            (1, "g0", 0, "start", 0, 100),
            (1, "g1", 0, "start", 0, -200),
            (1, "g0", 1, "rise", 1_000, 1_000),
            (1, "g1", 1, "rise", 1_000, 2_000),
            (1, "g0", 2, "rise", 5_000, 5_000),
            (1, "g1", 2, "rise", 5_000, 5_000),
        ];
        let b = [
            (1, "g0", 0, "start", 0, 700),
            (1, "g0", 1, "rise", 1_000, 1_000),
            (1, "g0", 2, "rise", 5_000, 10_000),
        ];
        let mut r = RackEdges::default();
        add(&mut r, &a, 2);
        add(&mut r, &b, 1);
        let s = r.stats();
        let e = &s[&1];
        assert_eq!(e.start_error_max_us, 0.7);
        assert_eq!(e.start_skew_us, 0.9);
        let rise = e.rise.unwrap();
        // All six rise errors: 0, 1000, 0, 0, 0, 5000 ns.
        let all = [0.0, 1.0, 0.0, 0.0, 0.0, 5.0];
        assert_eq!(rise.n, 6);
        assert_eq!(rise.max_us, 5.0);
        assert_eq!(Some(rise.p50_us), quantile(&all, 0.5));
        assert!((rise.p99_us - quantile(&all, 0.99).unwrap()).abs() < 1e-12);
        // k-th rise across the three GPUs: spreads 1 µs and 5 µs.
        assert!((e.edge_skew_p99_us.unwrap() - quantile(&[1.0, 5.0], 0.99).unwrap()).abs() < 1e-12);
    }
}
