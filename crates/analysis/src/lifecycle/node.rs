//! A node run's lifecycle edges: those of the workload processes it
//! started and stopped (a cold start, a kill, an exit: every GPU about
//! every recorded moment, [`super::measure`]) and those of the duty
//! rungs' held context (every GPU about its recorded edges,
//! [`super::held`]), each kind pooled over GPUs and events
//! ([`super::pool`]).

use super::events::Moment;
use super::measure::{GpuEdge, measure};
use super::pool::{EventPoints, Pooled, binned, pool};
use super::{EdgeKind, LifecycleEdge, Spread, caveat};
use crate::sensor::model::SensorModel;
use crate::workload::resample::placed;
use powerlab_core::Instrument;
use powerlab_core::units::ms_to_ns;
use powerlab_samples::load::Run;
use powerlab_samples::series::{SeriesSet, median_spacing_ms};
use std::collections::HashMap;

/// The shape starts at least this long before the earliest 10 %
/// crossing (and before the moment), ms.
const SHAPE_LEAD_MS: f64 = 500.0;

/// The finest step the pooled samples are binned at, ms.
const MIN_STEP_MS: f64 = 1.0;

/// Every GPU's edge about each moment of one kind, and the sample window
/// and spacing of the GPUs measured.
#[derive(Default)]
pub(super) struct Measured {
    /// Every GPU's edge about every moment.
    pub edges: Vec<GpuEdge>,
    /// The rungs they were measured in.
    pub rungs: Vec<String>,
    /// Moments measured (per GPU).
    pub repeats: usize,
    /// GPUs per moment, the most.
    pub gpus: usize,
    /// The widest sample window, ms.
    pub window_ms: f64,
    /// The widest sample spacing, ms.
    pub spacing_ms: f64,
}

impl Measured {
    /// Takes one GPU's edge measured from its buffered samples `b`.
    pub(super) fn push(&mut self, e: GpuEdge, b: &Buffered) {
        self.edges.push(e);
        self.window_ms = self.window_ms.max(b.window_ms);
        self.spacing_ms = self.spacing_ms.max(b.spacing_ms);
    }
}

/// A GPU's buffered series, its sample window (ms), the offset of a
/// window's centre before its sample's timestamp (ns) and the series'
/// median spacing (ms, 0 where it has none).
pub(super) struct Buffered<'a> {
    /// The samples, in time order.
    pub raw: &'a [(i64, f64)],
    /// The sample window, ms.
    pub window_ms: f64,
    /// A window's centre lies this long before its sample's timestamp, ns.
    pub centre_ns: i64,
    /// The median time between samples over the whole series, ms.
    pub spacing_ms: f64,
}

/// Every GPU's buffered samples with their sensor model, read once: the
/// series' median spacing is a sort of the whole series, and was taken
/// once per edge (16 per GPU per rung: 233 of a 4-hour run's 255 s of
/// collation, issue 56).
pub(super) struct Buffers<'a>(HashMap<&'a str, Buffered<'a>>);

impl<'a> Buffers<'a> {
    /// The buffered samples of every GPU of `run` that has a sensor model
    /// of them.
    pub(super) fn of(run: &'a Run, series: &'a SeriesSet, model: &SensorModel) -> Buffers<'a> {
        Buffers(
            run.manifest
                .backend
                .gpus
                .iter()
                .filter_map(|g| Some((g.key.as_str(), buffered(series, model, &g.key)?)))
                .collect(),
        )
    }

    /// The GPU's buffered samples; None without a sensor model of them.
    pub(super) fn get(&self, gpu: &str) -> Option<&Buffered<'a>> {
        self.0.get(gpu)
    }
}

/// A GPU's buffered samples and where their windows' centres lie; None
/// without a sensor model of them.
fn buffered<'a>(series: &'a SeriesSet, model: &SensorModel, gpu: &str) -> Option<Buffered<'a>> {
    let p = model.path(gpu, Instrument::BufferedW)?;
    let (w, l) = p.window_ms.zip(p.latency_ms)?;
    let w = w.max(0.0);
    let raw = series.get(gpu, Instrument::BufferedW);
    Some(Buffered {
        raw,
        window_ms: w,
        centre_ns: ms_to_ns(l + w / 2.0),
        spacing_ms: median_spacing_ms(raw).unwrap_or(0.0),
    })
}

/// Measures every GPU about every moment of `of`; a GPU without a
/// sensor model of its buffered samples, or whose edge cannot be read, is
/// refused in words.
fn measure_all(run: &Run, bufs: &Buffers, of: &[&Moment], refused: &mut Vec<String>) -> Measured {
    let mut m = Measured::default();
    for mo in of {
        let mut n = 0;
        for g in &run.manifest.backend.gpus {
            let Some(b) = bufs.get(&g.key) else {
                refused.push(format!(
                    "{} on {}: no sensor model of its buffered samples",
                    mo.rung, g.key
                ));
                continue;
            };
            let pts = placed(b.raw, mo.from_ns, mo.to_ns, b.centre_ns);
            match measure(&g.key, &pts, mo, mo.kind.rises()) {
                Ok(e) => {
                    m.push(e, b);
                    n += 1;
                }
                Err(why) => refused.push(format!("{} on {}: {why}", mo.rung, g.key)),
            }
        }
        if n > 0 {
            m.rungs.push(mo.rung.clone());
            m.gpus = m.gpus.max(n);
        }
    }
    m.repeats = m.rungs.len();
    m
}

/// The edge of `kind` from its moments `of` (None: no GPU's could be
/// measured).
pub(super) fn event_edge(
    run: &Run,
    bufs: &Buffers,
    kind: EdgeKind,
    of: &[&Moment],
    refused: &mut Vec<String>,
) -> Option<LifecycleEdge> {
    let m = measure_all(run, bufs, of, refused);
    edge_of(kind, m, refused)
}

/// The edge of `kind` from every GPU's edge about every moment of it
/// (None: none), pooled ([`super::pool`]); `refused` are the events that
/// could not be measured, in words.
pub(super) fn edge_of(kind: EdgeKind, m: Measured, refused: &[String]) -> Option<LifecycleEdge> {
    if m.edges.is_empty() {
        return None;
    }
    let n = m.edges.len();
    let step_ms = (m.spacing_ms / n as f64).max(MIN_STEP_MS);
    let norm = |e: &GpuEdge| -> Vec<(f64, f64)> {
        let step = e.after_w - e.before_w;
        e.points
            .iter()
            .map(|(t, w)| (*t, (w - e.before_w) / step))
            .collect()
    };
    let by_edge: Vec<EventPoints> = m
        .edges
        .iter()
        .map(|e| EventPoints {
            y: norm(e),
            t50_ms: e.t50_ms,
        })
        .collect();
    let (pooled, resolution_ms) = sharper(by_edge, step_ms, &m);
    // Each event's own 10 % crossing, read off its own samples: the
    // per-event scatter a pooled delay's ± states (the delays laid on the
    // template scatter by the fit's error only: a kill's ± read 0.24 ms
    // where its events' own crossings scatter by 8 ms).
    let own = Spread::of(&m.edges.iter().map(|e| e.t10_ms).collect::<Vec<_>>());
    let (t10_90, delay) = match pooled {
        Some(p) => (
            Spread {
                n,
                mean: p.t10_90_ms,
                sd: p.t10_90_sd_ms,
                min: p.t10_90_range_ms.0,
                max: p.t10_90_range_ms.1,
            },
            p.event_delay_ms,
        ),
        None => (
            Spread::of(
                &m.edges
                    .iter()
                    .map(|e| e.t90_ms - e.t10_ms)
                    .collect::<Vec<_>>(),
            ),
            m.edges.iter().map(|e| e.t10_ms).collect(),
        ),
    };
    let before = Spread::of(&m.edges.iter().map(|e| e.before_w).collect::<Vec<_>>());
    let after = Spread::of(&m.edges.iter().map(|e| e.after_w).collect::<Vec<_>>());
    let (shape_t0_ms, shape_w) = shape(&m.edges, step_ms, (before.mean, after.mean));
    Some(LifecycleEdge {
        kind,
        repeats: m.repeats,
        gpus: m.gpus,
        step_w: Spread::of(
            &m.edges
                .iter()
                .map(|e| e.after_w - e.before_w)
                .collect::<Vec<_>>(),
        ),
        before_w: before,
        after_w: after,
        delay_ms: with_scatter(Spread::of(&delay), &own),
        caveat: caveat(
            n,
            (t10_90.mean, mean_of(&delay)),
            (m.spacing_ms, resolution_ms),
            refused,
        )
        .into_iter()
        .chain(scatter(&m.edges))
        .reduce(|a, b| format!("{a}; {b}")),
        t10_90_ms: t10_90,
        resolution_ms,
        spacing_ms: m.spacing_ms,
        shape_w,
        shape_step_ms: step_ms,
        shape_t0_ms,
        rungs: m.rungs,
    })
}

/// The mean of `v` (NaN for none).
fn mean_of(v: &[f64]) -> f64 {
    Spread::of(v).mean
}

/// A pooled figure `pooled` whose ± is the per-event scatter: its
/// standard deviation and extremes widened to the events' own (`own`).
fn with_scatter(pooled: Spread, own: &Spread) -> Spread {
    if !own.sd.is_finite() {
        return pooled;
    }
    Spread {
        sd: pooled.sd.max(own.sd),
        min: pooled.min.min(own.min),
        max: pooled.max.max(own.max),
        ..pooled
    }
}

/// A level before that scatters by more than this share of the step
/// holds the 10 % crossing within two of its standard deviations (the
/// loop on an H100 scattered by ± 50 W, 9 % of its 560 W kill: its 10 %
/// crossing came 19 ms before the kill).
const SCATTER_SHARE: f64 = 0.05;

/// What the reader must know where the level before scatters by more
/// than [`SCATTER_SHARE`] of the step (the events' mean standard
/// deviation): the 10 % crossing, so the delay, lies within it.
fn scatter(edges: &[GpuEdge]) -> Option<String> {
    let n = edges.len().max(1) as f64;
    let sd = edges.iter().map(|e| e.before_sd_w).sum::<f64>() / n;
    let step = edges
        .iter()
        .map(|e| (e.after_w - e.before_w).abs())
        .sum::<f64>()
        / n;
    (sd > SCATTER_SHARE * step).then(|| {
        format!(
            "the level before scatters by ± {sd:.0} W from sample to sample ({:.0} % of the step): the 10 % crossing, and so the delay and the 10–90 % time, lie within that scatter",
            100.0 * sd / step
        )
    })
}

/// An edge aligned at each event's own crossing is taken only where it is
/// this much sharper than aligned at the moments: where the moment times
/// the edge, both show it alike, and the former's alignment, read off the
/// samples, can also fit their noise.
const SHARPER: f64 = 0.8;

/// The moments time the edge only where the events' own mid-level
/// crossings scatter about them by less than this share of the sample
/// spacing (each crossing, read between two samples, is itself known to
/// about a third of it): a kill's or a held switch's do, a cold start's
/// (its CUDA initialisation varies by tens of ms) do not.
const TIMED_SHARE: f64 = 0.5;

/// The pooled edge of the better alignment (see [`super::pool`]) and its
/// resolution, ms: aligned at the moments (where they time the edge, and
/// unless aligning each event at its own crossing is clearly sharper),
/// the sample window, the pooled step or the widest gap between the
/// pooled samples about the edge, whichever is coarsest; aligned at
/// each event's own crossing, the sample spacing (what each event's
/// timing is known to). Without a whole edge in either, the events' own
/// crossings and the spacing.
fn sharper(by_edge: Vec<EventPoints>, step_ms: f64, m: &Measured) -> (Option<Pooled>, f64) {
    let t50: Vec<f64> = m.edges.iter().map(|e| e.t50_ms).collect();
    let timed = Spread::of(&t50).sd <= TIMED_SHARE * m.spacing_ms;
    let mut by_moment: Vec<EventPoints> = by_edge
        .iter()
        .map(|e| EventPoints {
            y: e.y.clone(),
            t50_ms: 0.0,
        })
        .collect();
    let mut by_edge = by_edge;
    let at_moment = timed
        .then(|| pool(&mut by_moment, step_ms, false))
        .flatten();
    let at_edge = pool(&mut by_edge, step_ms, true);
    match (at_moment, at_edge) {
        (Some(a), Some(b)) if b.t10_90_ms < SHARPER * a.t10_90_ms => (Some(b), m.spacing_ms),
        (Some(a), _) => {
            let fine = m.window_ms.max(step_ms).max(a.gap_ms);
            (Some(a), fine)
        }
        (None, b) => (b, m.spacing_ms),
    }
}

/// The mean edge aligned at the moments: every event's samples,
/// normalised, binned at `step_ms` from [`SHAPE_LEAD_MS`] before the
/// earliest 10 % crossing (or the moment) to where the last event's level
/// after was read (an event counts as settled, 1, past where its own was
/// read: cut at the first event's, a cold start's shape ended at 10 s on
/// an H100 whose starts took 8.0–13.7 s, half of them not begun), and
/// scaled to the mean levels `(before, after)`.
/// Returns (its first point's time, ms from the moment: the first bin's
/// centre; the shape, W).
fn shape(edges: &[GpuEdge], step_ms: f64, (before, after): (f64, f64)) -> (f64, Vec<f64>) {
    let earliest = edges.iter().map(|e| e.t10_ms).fold(0.0, f64::min);
    let first_seen = edges
        .iter()
        .filter_map(|e| e.points.first().map(|p| p.0))
        .fold(f64::NEG_INFINITY, f64::max);
    let lo = ((earliest - SHAPE_LEAD_MS).max(first_seen) / step_ms).floor() * step_ms;
    let hi = edges
        .iter()
        .map(|e| e.settled_to_ms)
        .fold(f64::NEG_INFINITY, f64::max);
    let points = edges.iter().flat_map(|e| {
        let step = e.after_w - e.before_w;
        let settled = (1..)
            .map(move |k| e.settled_to_ms + k as f64 * step_ms)
            .take_while(move |t| *t < hi)
            .map(|t| (t, 1.0));
        e.points
            .iter()
            .map(move |(t, w)| (*t, (w - e.before_w) / step))
            .chain(settled)
    });
    let y = binned(points, lo, hi.max(lo + step_ms), step_ms);
    (
        lo + step_ms / 2.0,
        y.iter().map(|v| before + v * (after - before)).collect(),
    )
}
