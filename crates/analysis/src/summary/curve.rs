//! The sample-and-hold figures of each rung, from the node curve: every
//! node column's mean, peak and percentiles over the grid points inside the
//! rung's window (less the points still holding readings from before it).

use crate::curve::NodeCurve;
use crate::metric::Levels;
use powerlab_core::Instrument;
use powerlab_samples::load::Run;
use powerlab_samples::stats::r3;
use std::collections::{BTreeMap, HashMap};

/// One set of node figures, W.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Figures {
    pub(super) mean: Option<f64>,
    pub(super) peak: Option<f64>,
    pub(super) p1: Option<f64>,
    pub(super) p10: Option<f64>,
    pub(super) p90: Option<f64>,
    pub(super) p99: Option<f64>,
}

impl Figures {
    /// The figures of `levels` (none for no levels).
    pub(super) fn of(levels: Option<&Levels>) -> Figures {
        let at = |f: &dyn Fn(&Levels) -> f64| levels.map(f);
        Figures {
            mean: at(&Levels::mean),
            peak: at(&Levels::max),
            p1: at(&|l| l.quantile(0.01)),
            p10: at(&|l| l.quantile(0.10)),
            p90: at(&|l| l.quantile(0.90)),
            p99: at(&|l| l.quantile(0.99)),
        }
    }
}

/// A rung's sample-and-hold levels from the node curve: how many grid
/// points fall in its window, and each node column's levels over them
/// (None where the rung has no non-null point of that column).
#[derive(Default)]
pub(super) struct CurveFigures {
    grid_n: f64,
    buffered: Option<Levels>,
    pub(super) instant: Option<Levels>,
    pub(super) average: Option<Levels>,
}

/// What NVML sampled over a rung: the figures of the instrument the rung's
/// curve points mostly hold, how many points had it, and their share of
/// the window's grid points.
pub(super) struct SampleAndHold<'a> {
    pub(super) levels: Option<&'a Levels>,
    pub(super) figures: Figures,
    pub(super) samples: f64,
    pub(super) instrument: Instrument,
    pub(super) coverage: f64,
}

impl CurveFigures {
    /// The rung's sample-and-hold figures: the buffered field's where at
    /// least half the grid points hold it, else the instant field's.
    pub(super) fn sample_and_hold(&self) -> SampleAndHold<'_> {
        let total = self.grid_n;
        let n = |l: &Option<Levels>| l.as_ref().map_or(0.0, |l| l.len() as f64);
        let use_buffered = total > 0.0 && n(&self.buffered) / total >= 0.5;
        let (s, instrument) = if use_buffered {
            (&self.buffered, Instrument::BufferedW)
        } else {
            (&self.instant, Instrument::InstantW)
        };
        SampleAndHold {
            levels: s.as_ref(),
            figures: Figures::of(s.as_ref()),
            samples: n(s),
            instrument,
            coverage: if total > 0.0 { r3(n(s) / total) } else { 0.0 },
        }
    }
}

/// The curve figures of every rung with a point in its window, by rung
/// id. A rung's window starts at `held_until` (clamped to the measured
/// window) where it is given, so that points still holding readings taken
/// before the window are left out.
pub(super) fn curve_figures(
    curve: &NodeCurve,
    run: &Run,
    held_until: &HashMap<u32, i64>,
) -> HashMap<u32, CurveFigures> {
    let mut windows: Vec<(u32, i64, i64)> = run
        .rungs
        .iter()
        .map(|r| {
            let from = held_until.get(&r.info.id).map_or(r.measure_from_ns, |t| {
                (*t).clamp(r.measure_from_ns, r.end_ns)
            });
            (r.info.id, from, r.end_ns)
        })
        .collect();
    windows.sort_by_key(|w| w.1);
    let columns = curve.columns();
    let t_ns = &columns.t_ns;
    // A column the curve lacks reads as empty: its figures stay None.
    let (bv, iv, av) = (
        &columns.buffered_w,
        &columns.instant_w,
        &columns.average_field_w,
    );
    let over = |values: &[Option<f64>], pts: &[usize]| {
        Levels::of_points(
            pts.iter()
                .filter_map(|k| values.get(*k).copied().flatten())
                .collect(),
        )
    };
    points_by_rung(t_ns, &windows)
        .into_iter()
        .map(|(id, pts)| {
            let f = CurveFigures {
                grid_n: pts.len() as f64,
                buffered: over(bv, &pts),
                instant: over(iv, &pts),
                average: over(av, &pts),
            };
            (id, f)
        })
        .collect()
}

/// The curve's points by rung: a point belongs to the rung whose window
/// starts last at or before it, if it falls before that window's end.
/// Returns the rung ids with any point (ascending) and, for each, the
/// indices of its points.
pub(super) fn points_by_rung(t_ns: &[i64], windows: &[(u32, i64, i64)]) -> Vec<(u32, Vec<usize>)> {
    let mut by: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (k, t) in t_ns.iter().enumerate() {
        let after = windows.partition_point(|w| w.1 <= *t);
        if let Some(w) = after.checked_sub(1).map(|i| windows[i])
            && *t < w.2
        {
            by.entry(w.0).or_default().push(k);
        }
    }
    by.into_iter().collect()
}
