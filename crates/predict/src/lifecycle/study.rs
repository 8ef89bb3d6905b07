//! The lifecycle study streamed: chunk after chunk, every scenario's
//! running waveform is drawn ([`Realizer`]), the job's state applied
//! ([`Mixer`]), the figures updated ([`stats`](super::stats)) and the
//! rows handed to a [`Sink`] (the CSV and COMTRADE writers, or none).
//! Nothing longer than a chunk and the longest window is held.

use super::edges::Transition;
use super::mix::Mixer;
use super::stats::{MaxMean, Ramp, Swing, Welch};
use super::timeline::EventKind;
use super::{Plan, State};
use crate::stream::Realizer;
use powerlab_core::units::W_PER_MW;
use serde::Serialize;

/// Milliseconds in an hour (MW × ms → MWh).
const MS_PER_H: f64 = 3_600_000.0;

/// Points drawn at a time.
const CHUNK: usize = 1 << 16;
/// The stretch before an event whose highest and lowest points its
/// instant step starts from, s: the level the waveform holds at that
/// moment (the compute plateau for a crash in compute), not the mean over
/// iterations.
pub const INSTANT_S: f64 = 0.1;
/// The ramp and swing windows, s: a second and a minute.
pub const WINDOWS_S: [f64; 2] = [1.0, 60.0];
/// The spectrum's segment, points (fewer where the span is short).
const WELCH_POINTS: usize = 1 << 15;

/// Where the rows go: one call per point, MW per scenario.
pub trait Sink {
    /// The point starting at `t_s`.
    ///
    /// # Errors
    ///
    /// Whatever writing it met.
    fn row(&mut self, t_s: f64, mw: &[f64]) -> std::io::Result<()>;
}

/// A sink that keeps nothing.
pub struct NoSink;

impl Sink for NoSink {
    fn row(&mut self, _: f64, _: &[f64]) -> std::io::Result<()> {
        Ok(())
    }
}

/// One event's figures in one scenario, MW.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventFigure {
    /// When, s.
    pub t_s: f64,
    /// What.
    pub kind: EventKind,
    /// Drawn at the crash rate.
    pub drawn: bool,
    /// The mean over whole iterations (at least a second) before it (the
    /// span's first point where none lies before it).
    pub before_mw: f64,
    /// The highest point over that stretch: where a crash would start
    /// from at the iteration's peak.
    pub peak_before_mw: f64,
    /// The mean over as long once its edge has settled (the span's last
    /// point where it ends first).
    pub after_mw: f64,
    /// The highest and lowest point in the [`INSTANT_S`] before it (NaN:
    /// before the span).
    pub instant_before_mw: (f64, f64),
    /// The highest and lowest point from it until its edge has settled
    /// (at least [`INSTANT_S`]).
    pub edge_mw: (f64, f64),
    /// From the event to 10 % of the step, ms.
    pub t10_ms: f64,
    /// From 10 % to 90 % of it, ms.
    pub t10_90_ms: f64,
    /// The energy the job did not draw against running on, from this
    /// event to the next, MWh (negative: it drew more).
    pub deficit_mwh: f64,
}

impl EventFigure {
    /// after − before, MW.
    pub fn step_mw(&self) -> f64 {
        self.after_mw - self.before_mw
    }

    /// The step at its worst instant, MW, in the direction of
    /// [`Self::step_mw`]: a rise from the lowest point in the
    /// [`INSTANT_S`] before the event to the highest until its edge has
    /// settled, a fall from the highest before it to the lowest after.
    /// For a crash in compute, the plateau to idle; NaN where the event
    /// has no point on either side.
    pub fn instant_step_mw(&self) -> f64 {
        let ((bmax, bmin), (emax, emin)) = (self.instant_before_mw, self.edge_mw);
        if self.step_mw() >= 0.0 {
            emax - bmin
        } else {
            emin - bmax
        }
    }
}

/// One scenario's figures over the study, MW.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChannelFigures {
    /// The scenario.
    pub label: String,
    /// Mean, MW.
    pub mean_mw: f64,
    /// Highest point.
    pub peak_mw: f64,
    /// Lowest point.
    pub min_mw: f64,
    /// Energy over the span, MWh.
    pub energy_mwh: f64,
    /// Per window of [`WINDOWS_S`]: (window s, fastest rise, fastest fall),
    /// MW per s, between consecutive window means.
    pub ramps: Vec<(f64, Option<f64>, Option<f64>)>,
    /// Per window: (window s, largest rise, largest fall within it), MW.
    pub swings: Vec<(f64, f64, f64)>,
    /// The highest mean over each supply window: (ms, MW).
    pub max_means: Vec<(f64, Option<f64>)>,
    /// The share of the fluctuation's power in the band, %.
    pub band_share_pct: Option<f64>,
    /// The spectrum's strongest frequency, Hz.
    pub peak_hz: Option<f64>,
    /// Every event.
    pub events: Vec<EventFigure>,
}

/// The study's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Study {
    /// Points streamed.
    pub points: u64,
    /// Per scenario.
    pub channels: Vec<ChannelFigures>,
    /// Time in each state, s.
    pub states: Vec<(State, f64)>,
}

/// One scenario's running figures.
struct Acc {
    sum: f64,
    min: f64,
    max: f64,
    ramps: Vec<Ramp>,
    swings: Vec<Swing>,
    means: Vec<MaxMean>,
    welch: Welch,
    before: Vec<(f64, usize)>,
    peak_before: Vec<f64>,
    instant_before: Vec<(f64, f64)>,
    edge: Vec<(f64, f64)>,
    after: Vec<(f64, usize)>,
    deficit: Vec<f64>,
    first: Option<f64>,
    last: f64,
}

impl Acc {
    fn new(p: &Plan, welch_points: usize) -> Acc {
        let r = p.lc.resolution_ms;
        let n = p.events.len();
        Acc {
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            ramps: WINDOWS_S.iter().map(|w| Ramp::new(*w, r)).collect(),
            swings: WINDOWS_S.iter().map(|w| Swing::new(*w, r)).collect(),
            means: p.windows_ms.iter().map(|w| MaxMean::new(*w, r)).collect(),
            welch: Welch::new(welch_points, r),
            before: vec![(0.0, 0); n],
            peak_before: vec![f64::NEG_INFINITY; n],
            instant_before: vec![(f64::NEG_INFINITY, f64::INFINITY); n],
            edge: vec![(f64::NEG_INFINITY, f64::INFINITY); n],
            after: vec![(0.0, 0); n],
            deficit: vec![0.0; n],
            first: None,
            last: f64::NAN,
        }
    }

    fn push(&mut self, mw: f64) {
        self.first.get_or_insert(mw);
        self.last = mw;
        self.sum += mw;
        self.min = self.min.min(mw);
        self.max = self.max.max(mw);
        self.ramps.iter_mut().for_each(|x| x.push(mw));
        self.swings.iter_mut().for_each(|x| x.push(mw));
        self.means.iter_mut().for_each(|x| x.push(mw));
        self.welch.push(mw);
    }
}

/// Streams the study of `p`, every row to `sink`.
///
/// # Errors
///
/// What the sink met.
pub fn study(p: &Plan, sink: &mut dyn Sink) -> std::io::Result<Study> {
    let r_ms = p.lc.resolution_ms;
    let total = (p.lc.span_s * 1000.0 / r_ms).round() as u64;
    let welch_points = WELCH_POINTS.min(prev_power_of_two(total as usize).max(2));
    let mut streams: Vec<Realizer> = p
        .channels
        .iter()
        .map(|c| Realizer::new(&c.iterations, &c.layout))
        .collect();
    let mut accs: Vec<Acc> = p
        .channels
        .iter()
        .map(|_| Acc::new(p, welch_points))
        .collect();
    let windows: Vec<Window> = p.events.iter().map(|e| p.window(e.kind, e.t_s)).collect();
    let mut mixer = Mixer::new(&p.events, &p.edges);
    let n_gpus = p.gpus as f64;
    let mut chunks: Vec<Vec<f64>> = vec![vec![0.0; CHUNK]; p.channels.len()];
    let mut row = vec![0.0; p.channels.len()];
    let mut done = 0u64;
    let mut first_window = 0usize;
    while done < total {
        let len = CHUNK.min((total - done) as usize);
        for (s, c) in streams.iter_mut().zip(chunks.iter_mut()) {
            s.fill(&mut c[..len]);
        }
        #[allow(clippy::needless_range_loop)] // j indexes every scenario's chunk
        for j in 0..len {
            let t_s = (done + j as u64) as f64 * r_ms / 1000.0;
            let at = mixer.at(t_s + 0.5 * r_ms / 1000.0);
            for (k, acc) in accs.iter_mut().enumerate() {
                let s_w = chunks[k][j];
                let f_w = at.running * s_w + (1.0 - at.running) * n_gpus * at.level_w;
                let mw = f_w / W_PER_MW;
                row[k] = mw;
                acc.push(mw);
                if let Some(e) = at.event {
                    acc.deficit[e] += (s_w - f_w) / W_PER_MW * r_ms / MS_PER_H;
                }
                in_windows(&windows, &mut first_window, t_s, mw, acc);
            }
            sink.row(t_s, &row)?;
        }
        done += len as u64;
    }
    Ok(Study {
        points: total,
        channels: p
            .channels
            .iter()
            .zip(accs)
            .map(|(c, a)| figures(p, &c.label, a, total))
            .collect(),
        states: p.states(),
    })
}

/// An event's level windows, s: before `[b0, b1)`, after `[a0, a1)`;
/// its instant step's `[i0, b1)` before and `[b1, e1)` from it.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    b0: f64,
    b1: f64,
    a0: f64,
    a1: f64,
    i0: f64,
    e1: f64,
}

impl Window {
    /// Before `t_s` for `level_s`; after `settle_s` past it for as long.
    /// The instant step's stretches: [`INSTANT_S`] (at most `level_s`)
    /// before it, and from it until it has settled (at least
    /// [`INSTANT_S`], at most the after window's end).
    pub fn new(t_s: f64, settle_s: f64, level_s: f64) -> Window {
        let a1 = t_s + settle_s + level_s;
        Window {
            b0: t_s - level_s,
            b1: t_s,
            a0: t_s + settle_s,
            a1,
            i0: t_s - INSTANT_S.min(level_s),
            e1: (t_s + settle_s.max(INSTANT_S)).min(a1),
        }
    }
}

/// `m` widened to hold `v`: (highest, lowest).
fn widen(m: &mut (f64, f64), v: f64) {
    m.0 = m.0.max(v);
    m.1 = m.1.min(v);
}

/// Adds `mw` to the level windows of every event it falls in.
fn in_windows(ws: &[Window], first: &mut usize, t_s: f64, mw: f64, acc: &mut Acc) {
    while *first < ws.len() && ws[*first].a1 <= t_s {
        *first += 1;
    }
    for (i, w) in ws.iter().enumerate().skip(*first) {
        if w.b0 > t_s {
            break;
        }
        if t_s >= w.i0 && t_s < w.b1 {
            widen(&mut acc.instant_before[i], mw);
        } else if t_s >= w.b1 && t_s < w.e1 {
            widen(&mut acc.edge[i], mw);
        }
        if t_s < w.b1 {
            acc.before[i].0 += mw;
            acc.before[i].1 += 1;
            acc.peak_before[i] = acc.peak_before[i].max(mw);
        } else if t_s >= w.a0 && t_s < w.a1 {
            acc.after[i].0 += mw;
            acc.after[i].1 += 1;
        }
    }
}

/// A scenario's figures from its accumulators.
fn figures(p: &Plan, label: &str, a: Acc, total: u64) -> ChannelFigures {
    let first = a.first.unwrap_or(f64::NAN);
    let mean = |x: (f64, usize), or: f64| if x.1 > 0 { x.0 / x.1 as f64 } else { or };
    let events = p
        .events
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let tr: &Transition = Mixer::new(&p.events, &p.edges).of(e.kind).0;
            let (t10, t90) = tr.t10_t90_ms();
            EventFigure {
                t_s: e.t_s,
                kind: e.kind,
                drawn: e.drawn,
                before_mw: mean(a.before[i], first),
                peak_before_mw: if a.before[i].1 > 0 {
                    a.peak_before[i]
                } else {
                    first
                },
                after_mw: mean(a.after[i], a.last),
                instant_before_mw: finite(a.instant_before[i]),
                edge_mw: finite(a.edge[i]),
                t10_ms: t10,
                t10_90_ms: t90 - t10,
                deficit_mwh: a.deficit[i],
            }
        })
        .collect();
    let n = total.max(1) as f64;
    ChannelFigures {
        label: label.to_string(),
        mean_mw: a.sum / n,
        peak_mw: a.max,
        min_mw: a.min,
        energy_mwh: a.sum * p.lc.resolution_ms / MS_PER_H,
        ramps: a
            .ramps
            .iter()
            .map(|r| (r.window_s(), r.up_per_s, r.down_per_s))
            .collect(),
        swings: a
            .swings
            .iter()
            .map(|s| (s.window_s(), s.rise, s.fall))
            .collect(),
        max_means: a.means.iter().map(|m| (m.window_ms, m.max)).collect(),
        band_share_pct: a.welch.band_share_pct(p.band_hz),
        peak_hz: a.welch.peak_hz(),
        events,
    }
}

/// A (highest, lowest) pair that saw no point: NaN, NaN.
fn finite(m: (f64, f64)) -> (f64, f64) {
    if m.0.is_finite() && m.1.is_finite() {
        m
    } else {
        (f64::NAN, f64::NAN)
    }
}

/// The largest power of two at most `n` (1 for 0).
fn prev_power_of_two(n: usize) -> usize {
    if n < 2 {
        1
    } else {
        1 << (usize::BITS - 1 - n.leading_zeros())
    }
}
