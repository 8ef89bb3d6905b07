//! Many GPUs' edges of one kind pooled: every event's samples fall at a
//! different phase of the sample grid, so together they show the edge at
//! a finer step than one GPU's samples can (equivalent-time sampling),
//! provided each event is aligned where its edge truly is.
//!
//! - The edge's 10–90 % time: each event's samples, normalised (0 before,
//!   1 after) and aligned, are binned at [`Pooled::step_ms`] (empty bins
//!   bridged by straight lines): the template, whose own 10 % and 90 %
//!   crossings give its 10–90 % time. Two alignments are tried
//!   ([`super::node`]): at the moment (exact where the moment times the
//!   edge, as a kill does), and at each event's own mid-level crossing,
//!   refined twice by the shift that fits its samples to the template best
//!   (least squares; its timing is then known to about a sample spacing).
//!   Misalignment only widens the template: the sharper one is kept.
//!   One event's samples on an edge shorter than their spacing cannot
//!   time it alone: the spread of the 10–90 % time over the events is the
//!   jackknife's (the template without each event in turn). Each event's
//!   delay is the moment to its 10 % crossing, its samples laid on the
//!   template by the shift that fits them best.
//! - The mean shape: every event's samples aligned at its moment (the
//!   delay's spread stays in it, as a job of many GPUs would show it),
//!   binned and scaled to the mean levels before and after.

use super::measure::first_up;

/// The template is read this far about the mid-level crossing, ms.
const TEMPLATE_HALF_MS: f64 = 1000.0;
/// Shifts tried when aligning an event to the template, ms either way.
const SHIFT_MS: f64 = 10.0;
/// Their step, ms.
const SHIFT_STEP_MS: f64 = 0.25;

/// One event's samples for pooling.
#[derive(Debug, Clone, PartialEq)]
pub struct EventPoints {
    /// (ms from the moment, normalised level: 0 before, 1 after).
    pub y: Vec<(f64, f64)>,
    /// Its mid-level crossing, ms from the moment (refined here).
    pub t50_ms: f64,
}

/// What pooling gives.
#[derive(Debug, Clone, PartialEq)]
pub struct Pooled {
    /// The template's step, ms.
    pub step_ms: f64,
    /// The widest gap between the pooled samples about the edge (from
    /// [`GAP_MARGIN_MS`] before its 10 % crossing to as long after its
    /// 90 %), ms: the template is a straight line across it.
    pub gap_ms: f64,
    /// The template's 10–90 % time, ms.
    pub t10_90_ms: f64,
    /// One event's 10–90 % time's standard deviation, ms: the jackknife's
    /// (the standard deviation of its pseudo-values; 0 for one event).
    pub t10_90_sd_ms: f64,
    /// The least and largest 10–90 % time of the template without one of
    /// the events, ms.
    pub t10_90_range_ms: (f64, f64),
    /// Each event's delay (moment to its 10 % crossing, its samples laid
    /// on the template), ms.
    pub event_delay_ms: Vec<f64>,
}

/// Points pooled at `step` over `[lo, hi)`: each bin that holds points
/// becomes one point, at its points' mean time and mean level (a bin's
/// centre would move a point on a steep edge by up to half a step).
pub fn curve(
    points: impl Iterator<Item = (f64, f64)>,
    lo: f64,
    hi: f64,
    step: f64,
) -> Vec<(f64, f64)> {
    let n = ((hi - lo) / step).ceil().max(1.0) as usize;
    let mut acc = vec![(0.0, 0.0, 0usize); n];
    for (x, y) in points {
        let i = ((x - lo) / step).floor();
        if i >= 0.0 && (i as usize) < n {
            let a = &mut acc[i as usize];
            (a.0, a.1, a.2) = (a.0 + x, a.1 + y, a.2 + 1);
        }
    }
    acc.into_iter()
        .filter(|a| a.2 > 0)
        .map(|(x, y, c)| (x / c as f64, y / c as f64))
        .collect()
}

/// A pooled curve read at `x`: linear between its points, held flat
/// beyond its ends (NaN when empty).
pub fn read(c: &[(f64, f64)], x: f64) -> f64 {
    read_at(c, c.partition_point(|p| p.0 < x), x)
}

/// [`read`] given `k`, the first point of `c` not before `x`.
fn read_at(c: &[(f64, f64)], k: usize, x: f64) -> f64 {
    match (k.checked_sub(1).map(|i| c[i]), c.get(k)) {
        (Some(a), Some(b)) if b.0 > a.0 => a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0),
        (_, Some(b)) => b.1,
        (Some(a), None) => a.1,
        (None, None) => f64::NAN,
    }
}

/// Points pooled as [`curve`] does, read at the centre of every bin of
/// `step` over `[lo, hi)`.
pub fn binned(points: impl Iterator<Item = (f64, f64)>, lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let c = curve(points, lo, hi, step);
    let n = ((hi - lo) / step).ceil().max(1.0) as usize;
    (0..n)
        .map(|i| read(&c, lo + (i as f64 + 0.5) * step))
        .collect()
}

/// A template read at many points: [`read`], with the first point not
/// before each x found from the bin x falls in (the template holds at most
/// one point per bin, at its points' mean time), not by a binary search
/// over up to 2 s / step points. Each evaluation of a shift reads the
/// template at every sample near the edge, 81 shifts per event, three
/// times for each of thousands of events.
struct Reader<'a> {
    c: &'a [(f64, f64)],
    lo: f64,
    step: f64,
    /// For each bin, how many of the template's points fall in the bins
    /// before it (one more entry than bins).
    before: Vec<usize>,
    /// Whether the points' times never decrease (else: a binary search,
    /// as [`read`] does).
    sorted: bool,
}

impl<'a> Reader<'a> {
    /// The template `c`, made by [`curve`] over `[lo, hi)` at `step`.
    fn new(c: &'a [(f64, f64)], lo: f64, hi: f64, step: f64) -> Reader<'a> {
        let n = ((hi - lo) / step).ceil().max(1.0) as usize;
        let mut before = vec![0; n + 1];
        for p in c {
            let b = ((p.0 - lo) / step).floor();
            if b >= 0.0 && (b as usize) < n {
                before[b as usize + 1] += 1;
            }
        }
        for b in 1..=n {
            before[b] += before[b - 1];
        }
        Reader {
            c,
            lo,
            step,
            before,
            sorted: c.windows(2).all(|w| w[0].0 <= w[1].0),
        }
    }

    /// [`read`] of the template at `x`, the same value bit for bit: the
    /// guess from `x`'s bin is moved to the first point not before `x`.
    fn read(&self, x: f64) -> f64 {
        if !self.sorted {
            return read(self.c, x);
        }
        let b = ((x - self.lo) / self.step).floor();
        let last = self.before.len() - 1;
        let mut k = if b < 0.0 {
            0
        } else {
            self.before[(b as usize).min(last)]
        };
        while k > 0 && self.c[k - 1].0 >= x {
            k -= 1;
        }
        while k < self.c.len() && self.c[k].0 < x {
            k += 1;
        }
        read_at(self.c, k, x)
    }
}

/// The sum of squares of samples `pts` (ms about their event's
/// alignment) within `near` ms of the template's mid-level crossing
/// `centre`, shifted by `shift`, against the template `t`.
fn misfit(pts: &[(f64, f64)], t: &Reader<'_>, shift: f64, centre: f64, near: f64) -> f64 {
    pts.iter()
        .map(|(x, y)| (x - shift, y))
        .filter(|(u, _)| (u - centre).abs() <= near)
        .map(|(u, y)| (y - t.read(u)).powi(2))
        .sum()
}

/// The shift (±[`SHIFT_MS`]) that lays `pts` on the template best: the
/// middle of the shifts that fit about as well as the best (samples that
/// all lie on the levels fit a range of shifts equally).
fn best_shift(pts: &[(f64, f64)], t: &Reader<'_>, centre: f64, near: f64) -> f64 {
    let n = (SHIFT_MS / SHIFT_STEP_MS) as i64;
    let costs: Vec<(f64, f64)> = (-n..=n)
        .map(|k| k as f64 * SHIFT_STEP_MS)
        .map(|sh| (sh, misfit(pts, t, sh, centre, near)))
        .collect();
    let least = costs.iter().map(|c| c.1).fold(f64::INFINITY, f64::min);
    let tied: Vec<f64> = costs
        .iter()
        .filter(|c| c.1 <= least * (1.0 + 1e-6) + 1e-12)
        .map(|c| c.0)
        .collect();
    (tied.iter().copied().fold(f64::INFINITY, f64::min)
        + tied.iter().copied().fold(f64::NEG_INFINITY, f64::max))
        / 2.0
}

/// `e`'s samples about its mid-level crossing, those within `reach` ms.
fn about(e: &EventPoints, reach: f64) -> Vec<(f64, f64)> {
    e.y.iter()
        .map(|(x, y)| (x - e.t50_ms, *y))
        .filter(|(x, _)| x.abs() <= reach)
        .collect()
}

/// A [`Reader`] of a template [`template`] made at `step`.
fn template_reader(t: &[(f64, f64)], step: f64) -> Reader<'_> {
    Reader::new(t, -TEMPLATE_HALF_MS, TEMPLATE_HALF_MS, step)
}

/// The template of `events` but the one at `skip` (each aligned at its
/// `t50_ms`), pooled at `step` over ±[`TEMPLATE_HALF_MS`].
fn template(events: &[EventPoints], step: f64, skip: Option<usize>) -> Vec<(f64, f64)> {
    curve(
        events
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != skip)
            .flat_map(|(_, e)| e.y.iter().map(move |(x, y)| (x - e.t50_ms, *y))),
        -TEMPLATE_HALF_MS,
        TEMPLATE_HALF_MS,
        step,
    )
}

/// The closest non-decreasing curve to `c` in least squares (pool
/// adjacent violators, each point weighing alike).
fn monotone(c: &[(f64, f64)]) -> Vec<(f64, f64)> {
    // Blocks of (sum, count).
    let mut blocks: Vec<(f64, usize)> = Vec::with_capacity(c.len());
    for &(_, y) in c {
        blocks.push((y, 1));
        while blocks.len() > 1 {
            let (b, a) = (blocks[blocks.len() - 1], blocks[blocks.len() - 2]);
            if a.0 / a.1 as f64 <= b.0 / b.1 as f64 {
                break;
            }
            blocks.pop();
            let last = blocks.len() - 1;
            blocks[last] = (a.0 + b.0, a.1 + b.1);
        }
    }
    let ys = blocks
        .iter()
        .flat_map(|(s, n)| std::iter::repeat_n(s / *n as f64, *n));
    c.iter().map(|p| p.0).zip(ys).collect()
}

/// The template's 10 %, 50 % and 90 % crossings, ms, read off its closest
/// non-decreasing curve: each crossing is then one, however ragged the
/// template (events of different delays pooled at their moments make a
/// staircase whose every step crosses each level).
fn crossings(t: &[(f64, f64)]) -> Option<(f64, f64, f64)> {
    let m = monotone(t);
    let at = |level: f64| first_up(&m, f64::NEG_INFINITY, level);
    Some((at(0.1)?, at(0.5)?, at(0.9)?))
}

/// The pooled samples' widest gap is looked for this far beyond the
/// edge's 10 % and 90 % crossings, ms.
pub const GAP_MARGIN_MS: f64 = 10.0;

/// The widest gap between `events`' samples (each aligned at its
/// `t50_ms`) within `(from, to)` ms, the span's ends included as
/// bounds.
fn widest_gap(events: &[EventPoints], (from, to): (f64, f64)) -> f64 {
    let mut x: Vec<f64> = events
        .iter()
        .flat_map(|e| e.y.iter().map(move |p| p.0 - e.t50_ms))
        .filter(|x| *x > from && *x < to)
        .collect();
    x.push(from);
    x.push(to);
    x.sort_unstable_by(f64::total_cmp);
    x.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max)
}

/// The window about the edge an event is fitted over, ms.
fn near_ms(t10: f64, t90: f64, step: f64) -> f64 {
    (3.0 * (t90 - t10)).max(4.0 * step).max(2.0 * SHIFT_MS)
}

/// Pools `events` at `step_ms`, each aligned at its `t50_ms` (refined
/// here against the template where `refine`: an alignment read off the
/// samples; left as given where the moment times the edge); None when
/// the template shows no whole edge.
pub fn pool(events: &mut [EventPoints], step_ms: f64, refine: bool) -> Option<Pooled> {
    let mut t = template(events, step_ms, None);
    let passes = if refine { 2 } else { 0 };
    for _ in 0..passes {
        let (t10, t50, t90) = crossings(&t)?;
        let near = near_ms(t10, t90, step_ms);
        let reader = template_reader(&t, step_ms);
        for e in events.iter_mut() {
            e.t50_ms += best_shift(&about(e, 2.0 * near + SHIFT_MS), &reader, t50, near);
        }
        t = template(events, step_ms, None);
    }
    let (t10, t50, t90) = crossings(&t)?;
    let near = near_ms(t10, t90, step_ms);
    let reader = template_reader(&t, step_ms);
    let event_delay_ms = events
        .iter()
        .map(|e| e.t50_ms + best_shift(&about(e, 2.0 * near + SHIFT_MS), &reader, t50, near) + t10)
        .collect();
    // Jackknife: the template without each event in turn.
    let theta = t90 - t10;
    let k = events.len();
    let bins = Bins::of(events, step_ms);
    let without: Vec<f64> = (0..k)
        .filter_map(|i| crossings(&bins.without(i)))
        .map(|(a, _, b)| b - a)
        .collect();
    let (sd, range) = if k > 1 && without.len() == k {
        let pseudo: Vec<f64> = without
            .iter()
            .map(|w| k as f64 * theta - (k - 1) as f64 * w)
            .collect();
        let m = pseudo.iter().sum::<f64>() / k as f64;
        let var = pseudo.iter().map(|p| (p - m).powi(2)).sum::<f64>() / (k - 1) as f64;
        let lo = without.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = without.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (var.sqrt(), (lo, hi))
    } else {
        (0.0, (theta, theta))
    };
    Some(Pooled {
        step_ms,
        gap_ms: widest_gap(events, (t10 - GAP_MARGIN_MS, t90 + GAP_MARGIN_MS)),
        t10_90_ms: theta,
        t10_90_sd_ms: sd,
        t10_90_range_ms: range,
        event_delay_ms,
    })
}

// The pooled template without each event in turn, for the jackknife of
// its 10–90 % time. Built from scratch for each event, that is every
// event's points once per event: a 4-hour 8-GPU run pools 5,120 held
// edges of a kind, and the jackknife took 90 of its collation's 150 s
// (issue 56). Here each bin keeps its contributions in the order
// `curve` adds them, and leaving an event out sums again
// only the bins that event reaches, in that order: the same numbers, bit
// for bit, as the template made without it.

/// One point's part of a bin: (event, x, y).
type Part = (usize, f64, f64);

/// The template's bins with their contributions.
struct Bins {
    /// Every bin's (Σx, Σy, count) over all events.
    full: Vec<(f64, f64, usize)>,
    /// Every bin's contributions, in the order they are added.
    parts: Vec<Vec<Part>>,
    /// The bins each event reaches.
    reached: Vec<Vec<usize>>,
}

impl Bins {
    /// The bins of `events` (each aligned at its `t50_ms`) at `step` ms
    /// over ±[`TEMPLATE_HALF_MS`], as [`super::pool::curve`] bins them.
    fn of(events: &[EventPoints], step: f64) -> Bins {
        let lo = -TEMPLATE_HALF_MS;
        let n = ((TEMPLATE_HALF_MS - lo) / step).ceil().max(1.0) as usize;
        let mut parts: Vec<Vec<Part>> = vec![Vec::new(); n];
        let mut reached = vec![Vec::new(); events.len()];
        for (k, e) in events.iter().enumerate() {
            for (x, y) in e.y.iter().map(|(x, y)| (x - e.t50_ms, *y)) {
                let i = ((x - lo) / step).floor();
                if i >= 0.0 && (i as usize) < n {
                    parts[i as usize].push((k, x, y));
                    if reached[k].last() != Some(&(i as usize)) {
                        reached[k].push(i as usize);
                    }
                }
            }
        }
        for r in &mut reached {
            r.sort_unstable();
            r.dedup();
        }
        let full = parts.iter().map(|p| sum(p, None)).collect();
        Bins {
            full,
            parts,
            reached,
        }
    }

    /// The template without event `skip`: (mean x, mean y) of every bin
    /// that keeps a point.
    fn without(&self, skip: usize) -> Vec<(f64, f64)> {
        let mut acc = self.full.clone();
        for &b in self.reached.get(skip).into_iter().flatten() {
            acc[b] = sum(&self.parts[b], Some(skip));
        }
        acc.into_iter()
            .filter(|a| a.2 > 0)
            .map(|(x, y, c)| (x / c as f64, y / c as f64))
            .collect()
    }
}

/// A bin's (Σx, Σy, count), adding its parts in order, but those of
/// event `skip`.
fn sum(parts: &[Part], skip: Option<usize>) -> (f64, f64, usize) {
    parts
        .iter()
        .filter(|p| Some(p.0) != skip)
        .fold((0.0, 0.0, 0), |a, p| (a.0 + p.1, a.1 + p.2, a.2 + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The reader gives [`read`]'s value at every x, bit for bit: on a
        /// template made by [`curve`], on any points sorted by time (ties
        /// included), and on points out of order (its binary search).
        #[test]
        fn a_template_read_by_its_bins_is_read_as_by_a_search(
            pts in prop::collection::vec((-1200.0f64..1200.0, -0.5f64..1.5), 0..400),
            step in 0.01f64..40.0,
            xs in prop::collection::vec(-1500.0f64..1500.0, 1..60),
        ) {
            let made = curve(pts.iter().copied(), -TEMPLATE_HALF_MS, TEMPLATE_HALF_MS, step);
            let mut sorted = pts.clone();
            sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
            if let Some(first) = sorted.first().copied() {
                sorted.push(first); // a tie, out of place
                sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
            }
            for c in [&made, &sorted, &pts] {
                let r = template_reader(c, step);
                for x in xs.iter().copied().chain(c.iter().map(|p| p.0)) {
                    prop_assert_eq!(r.read(x).to_bits(), read(c, x).to_bits(), "x {}", x);
                }
            }
        }
    }

    #[test]
    fn the_closest_rising_curve_pools_what_falls_back() {
        let c: Vec<(f64, f64)> = [0.0, 0.2, 0.1, 0.6, 0.5, 1.0]
            .iter()
            .enumerate()
            .map(|(i, y)| (i as f64, *y))
            .collect();
        let m: Vec<f64> = monotone(&c).iter().map(|p| p.1).collect();
        let want = [0.0, 0.15, 0.15, 0.55, 0.55, 1.0];
        assert!(
            m.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-12),
            "{m:?}"
        );
    }

    /// An exponential edge (τ = 12 ms: 10–90 % in 26.4 ms) sampled every
    /// 20 ms at another phase for each of 20 events, each timed by its
    /// moment: pooled, its 10–90 % time and delay come back.
    #[test]
    fn events_at_other_phases_of_the_grid_time_an_edge_finer_than_their_spacing() {
        let tau = 12.0;
        let y = |t: f64| if t < 0.0 { 0.0 } else { 1.0 - (-t / tau).exp() };
        let mut events: Vec<EventPoints> = (0..20)
            .map(|k| {
                let phase = (k as f64 * 7.3) % 20.0;
                EventPoints {
                    y: (-50..50)
                        .map(|i| phase + 20.0 * i as f64)
                        .map(|t| (t, y(t)))
                        .collect(),
                    t50_ms: 0.0,
                }
            })
            .collect();
        let p = pool(&mut events, 1.0, false).unwrap();
        let truth = tau * (9.0f64).ln();
        assert!((p.t10_90_ms / truth - 1.0).abs() < 0.05, "{p:?} vs {truth}");
        let delay = p.event_delay_ms.iter().sum::<f64>() / 20.0;
        assert!((delay - tau * (10.0f64 / 9.0).ln()).abs() < 1.0, "{delay}");
        assert!(p.gap_ms < 3.0, "{p:?}");
    }

    #[test]
    fn leaving_an_event_out_gives_the_template_made_without_it_bit_for_bit() {
        // Events at scattered phases and levels, some reaching the edges
        // of the template's span, one reaching none of it.
        let mut events: Vec<EventPoints> = (0..23)
            .map(|k| {
                let phase = (k as f64 * 7.31) % 20.0;
                let at = if k == 5 {
                    5000.0
                } else {
                    (k as f64 * 37.7) % 900.0
                };
                EventPoints {
                    y: (-60..60)
                        .map(|i| phase + 20.0 * i as f64 + 0.1 * (k as f64).sin())
                        .map(|t| (t, (t / 13.0).tanh() + 0.01 * (t * k as f64).cos()))
                        .collect(),
                    t50_ms: at,
                }
            })
            .collect();
        events[3].y.clear();
        for step in [0.7, 1.0, 3.3] {
            let bins = Bins::of(&events, step);
            for i in 0..events.len() {
                let want = template(&events, step, Some(i));
                let got = bins.without(i);
                assert_eq!(got.len(), want.len(), "event {i}, step {step}");
                for (g, w) in got.iter().zip(&want) {
                    assert_eq!(g.0.to_bits(), w.0.to_bits(), "event {i}, step {step}");
                    assert_eq!(g.1.to_bits(), w.1.to_bits(), "event {i}, step {step}");
                }
            }
        }
    }
}
