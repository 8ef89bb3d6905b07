//! One GPU's edge about one lifecycle moment, from its buffered samples
//! (each at the centre of its averaging window):
//!
//! 1. the edge's mid-level crossing: halfway between the level before the
//!    moment (the mean over its last second) and the running job's level
//!    (a rise: the 90th percentile after the moment; a fall: the 90th
//!    percentile of the two seconds before it, against the settled level
//!    after it); a rise's first crossing after the moment, a fall's last
//!    one before the level after it settles (a job that pulses crosses
//!    the mid-level every iteration: the edge is its last fall);
//! 2. the level after ([`settled_window`]): the mean from 1 s to 2 s past
//!    the edge (or the later half of a shorter span up to the next
//!    moment);
//! 3. the level before: the mean over the last second before the moment
//!    or before the edge, whichever is earlier ([`GUARD_MS`] short of the
//!    edge: a clean exit's fall can precede the exit the runner sees);
//! 4. with these, the crossings of 10, 50 and 90 % of the step, by linear
//!    interpolation between neighbouring samples.

use super::events::Moment;
use powerlab_core::units::ns_to_ms;

/// The level before the edge: its last second, ms.
pub const BEFORE_MS: f64 = 1000.0;
/// The level after: from this long past the edge, ms…
pub const SETTLE_FROM_MS: f64 = 1000.0;
/// …for this long, ms.
pub const SETTLE_MS: f64 = 1000.0;
/// The shortest span after the edge a level after is read from, ms.
pub const MIN_SETTLE_SPAN_MS: f64 = 400.0;
/// The level before ends this long before the edge's mid-level, ms.
pub const GUARD_MS: f64 = 60.0;
/// A fall's running level is read over this long before the moment, ms.
pub const RUNNING_MS: f64 = 2000.0;
/// A step smaller than this share of the larger level is no edge.
pub const MIN_STEP_SHARE: f64 = 0.05;

/// One GPU's edge about one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuEdge {
    /// The GPU.
    pub gpu: String,
    /// The level before, W.
    pub before_w: f64,
    /// The samples' standard deviation about it, W (a job's own draw
    /// scatters from step to step).
    pub before_sd_w: f64,
    /// The level after, W.
    pub after_w: f64,
    /// The crossings of 10, 50 and 90 % of the step, ms from the moment.
    pub t10_ms: f64,
    /// The mid-level crossing.
    pub t50_ms: f64,
    /// The 90 % crossing.
    pub t90_ms: f64,
    /// Where the level after was read to, ms from the moment.
    pub settled_to_ms: f64,
    /// The samples from the moment's span, (ms from the moment, W).
    pub points: Vec<(f64, f64)>,
}

/// `points` (ns, W) from `a` to `b` (exclusive).
fn within(points: &[(i64, f64)], a: i64, b: i64) -> &[(i64, f64)] {
    let lo = points.partition_point(|p| p.0 < a);
    let hi = points.partition_point(|p| p.0 < b).max(lo);
    &points[lo..hi]
}

fn mean(points: &[(i64, f64)]) -> Option<f64> {
    (!points.is_empty()).then(|| points.iter().map(|p| p.1).sum::<f64>() / points.len() as f64)
}

/// The standard deviation of `points` about `mean` (0 for fewer than two).
fn sd(points: &[(i64, f64)], mean: f64) -> f64 {
    if points.len() < 2 {
        return 0.0;
    }
    (points.iter().map(|p| (p.1 - mean).powi(2)).sum::<f64>() / (points.len() - 1) as f64).sqrt()
}

fn p90(points: &[(i64, f64)]) -> Option<f64> {
    let v: Vec<f64> = points.iter().map(|p| p.1).collect();
    powerlab_samples::stats::quantile(&v, 0.9)
}

/// Where `y` crosses `level` upwards between points `i - 1` and `i`, ns.
fn cross_at(p: &[(f64, f64)], i: usize, level: f64) -> f64 {
    let ((t0, y0), (t1, y1)) = (p[i - 1], p[i]);
    if y1 == y0 {
        return t1;
    }
    t0 + (level - y0) / (y1 - y0) * (t1 - t0)
}

/// The first upward crossing of `level` at or after `from` (`p`: time,
/// normalised level 0 before → 1 after).
pub fn first_up(p: &[(f64, f64)], from: f64, level: f64) -> Option<f64> {
    (1..p.len())
        .filter(|&i| p[i].0 >= from && p[i].1 >= level && p[i - 1].1 < level)
        .map(|i| cross_at(p, i, level))
        .find(|t| *t >= from)
}

/// The last upward crossing of `level` at or before `to`.
pub fn last_up(p: &[(f64, f64)], to: f64, level: f64) -> Option<f64> {
    (1..p.len())
        .rev()
        .filter(|&i| p[i - 1].0 <= to && p[i].1 >= level && p[i - 1].1 < level)
        .map(|i| cross_at(p, i, level))
        .find(|t| *t <= to)
}

/// The window the level after an edge at `edge_ns` is read over, ending
/// before `to_ns`: from [`SETTLE_FROM_MS`] past it for [`SETTLE_MS`], or
/// the later half of a shorter span (at least [`MIN_SETTLE_SPAN_MS`]).
pub fn settled_window(edge_ns: i64, to_ns: i64) -> Option<(i64, i64)> {
    let ms = powerlab_core::units::ms_to_ns_trunc;
    let span = to_ns - edge_ns;
    if span >= ms(SETTLE_FROM_MS + 0.3 * SETTLE_MS) {
        let a = edge_ns + ms(SETTLE_FROM_MS);
        return Some((a, (a + ms(SETTLE_MS)).min(to_ns)));
    }
    (span >= ms(MIN_SETTLE_SPAN_MS)).then(|| (edge_ns + span / 2, to_ns))
}

/// The mid-level crossing of a first guess at the levels: (before, the
/// running job's, mid-level crossing ns) — or why there is none.
fn first_guess(placed: &[(i64, f64)], m: &Moment, rises: bool) -> Result<i64, String> {
    let ms = powerlab_core::units::ms_to_ns_trunc;
    let before = mean(within(
        placed,
        (m.at_ns - ms(BEFORE_MS)).max(m.from_ns),
        m.at_ns,
    ))
    .ok_or("no sample in the second before it")?;
    let rel = |lo: i64, hi: i64| -> Vec<(f64, f64)> {
        within(placed, lo, hi)
            .iter()
            .map(|p| ((p.0 - m.at_ns) as f64, p.1))
            .collect()
    };
    let t = if rises {
        let running = p90(within(placed, m.at_ns, m.to_ns)).ok_or("no sample after it")?;
        let mid = 0.5 * (before + running);
        first_up(&rel(m.from_ns, m.to_ns), 0.0, mid)
    } else {
        let lo = (m.at_ns - ms(RUNNING_MS)).max(m.from_ns);
        let running = p90(within(placed, lo, m.at_ns)).ok_or("no sample before it")?;
        let (a, b) = settled_window(m.at_ns, m.to_ns).ok_or("the span after it is too short")?;
        let after = mean(within(placed, a, b)).ok_or("no sample after it settles")?;
        let mid = 0.5 * (running + after);
        // Upside down: a fall is a rise of −W.
        let flipped: Vec<(f64, f64)> = rel(lo, b).into_iter().map(|(t, w)| (t, -w)).collect();
        last_up(&flipped, (a - m.at_ns) as f64, -mid)
    };
    t.map(|t| m.at_ns + t as i64).ok_or_else(|| {
        format!(
            "no {} through the mid-level",
            if rises { "rise" } else { "fall" }
        )
    })
}

/// Where an edge's levels are read, ns: before it, and after it settles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Windows {
    /// The level before: `[from, to)`.
    pub before: (i64, i64),
    /// The level after.
    pub after: (i64, i64),
}

/// One GPU's edge about moment `m`, from its samples placed at their
/// window centres (`placed`, time-sorted, ns).
///
/// # Errors
///
/// Why it cannot be read, in words: no sample before the moment or after
/// the edge settles, a span too short to settle, no edge through the
/// mid-level, or a step too small or the wrong way.
pub fn measure(
    gpu: &str,
    placed: &[(i64, f64)],
    m: &Moment,
    rises: bool,
) -> Result<GpuEdge, String> {
    let ms = powerlab_core::units::ms_to_ns_trunc;
    let t50_guess = first_guess(placed, m, rises)?;
    let edge = t50_guess.max(m.at_ns);
    let after =
        settled_window(edge, m.to_ns).ok_or("the span after the edge is too short to settle")?;
    let end = m.at_ns.min(t50_guess - ms(GUARD_MS));
    let w = Windows {
        before: ((end - ms(BEFORE_MS)).max(m.from_ns), end),
        after,
    };
    read_edge(gpu, placed, (m.at_ns, m.from_ns), w, rises)
}

/// One GPU's edge about a moment at `at_ns` (samples from `from_ns`
/// belong to it) with its levels read over `w`: a rise's first crossing
/// of the mid-level after the moment, a fall's last one before the level
/// after, and the 10 % and 90 % crossings about it.
///
/// # Errors
///
/// Why it cannot be read, in words: no sample in a window, a step too
/// small or the wrong way, or a crossing missing.
pub fn read_edge(
    gpu: &str,
    placed: &[(i64, f64)],
    (at_ns, from_ns): (i64, i64),
    w: Windows,
    rises: bool,
) -> Result<GpuEdge, String> {
    let after =
        mean(within(placed, w.after.0, w.after.1)).ok_or("no sample after the edge settles")?;
    let before = mean(within(placed, w.before.0, w.before.1))
        .ok_or("no sample in the span before the edge")?;
    let step = after - before;
    if step.abs() < MIN_STEP_SHARE * after.abs().max(before.abs()) || (step > 0.0) != rises {
        return Err(format!(
            "no {} edge: {before:.0} W before, {after:.0} W after",
            if rises { "rising" } else { "falling" }
        ));
    }
    let span = within(placed, from_ns, w.after.1);
    // Normalised: 0 before, 1 after, either way.
    let y: Vec<(f64, f64)> = span
        .iter()
        .map(|p| (ns_to_ms(p.0 - at_ns), (p.1 - before) / step))
        .collect();
    let settle_ms = ns_to_ms(w.after.0 - at_ns);
    // A rise's crossing, interpolated between samples either side of a
    // fast edge, may fall just before its moment.
    let t50 = if rises {
        first_up(&y, -GUARD_MS, 0.5)
    } else {
        last_up(&y, settle_ms, 0.5)
    }
    .ok_or("no crossing of the mid-level")?;
    let t10 = last_up(&y, t50, 0.1).ok_or("no crossing of 10 %")?;
    let t90 = first_up(&y, t50, 0.9).ok_or("no crossing of 90 %")?;
    Ok(GpuEdge {
        gpu: gpu.to_string(),
        before_w: before,
        before_sd_w: sd(within(placed, w.before.0, w.before.1), before),
        after_w: after,
        t10_ms: t10,
        t50_ms: t50,
        t90_ms: t90,
        settled_to_ms: ns_to_ms(w.after.1 - at_ns),
        points: span.iter().map(|p| (ns_to_ms(p.0 - at_ns), p.1)).collect(),
    })
}
