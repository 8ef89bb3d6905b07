//! Duty periods chosen so that the power samples can be folded.
//!
//! The headline node figures of a duty rung come from folding each GPU's
//! samples on that GPU's own edges into one cycle (equivalent-time
//! sampling). That only works when the samples land at many different
//! phases of the cycle. Every H200 power path samples on an exact grid
//! (buffered samples every 20.000 ms), so a period that is a simple multiple
//! or fraction of it (100 ms, 20 ms, 10 ms) puts every sample at the same
//! few phases, and whole parts of the cycle are never seen. The planner
//! therefore detunes such a period by the smallest step that makes an ideal
//! 20 ms grid sweep the whole cycle within the rung's measured window
//! (100 ms becomes 100.28 ms for an 8 s rung), unless the phase asks for
//! `exact_period = true`. The achieved period is what the device runs and
//! what the summary and the report state.
//!
//! The measured window also starts only once the rung's own pattern holds:
//! the keep-warm load before the barrier runs every GPU at once, so the
//! first cycle of a staggered rung is not staggered ([`settle_ns`]); and it
//! holds a whole number of cycles ([`whole_cycles_settle_ns`]).

use powerlab_core::units::{NS_PER_S, ms_to_ns, ns_to_ms};

/// The sampling grid the headline path (driver-buffered samples) uses, ms.
pub const SAMPLE_GRID_MS: f64 = 20.0;

/// Finest detuning step, ms.
const STEP_MS: f64 = 0.01;

/// Grid samples looked at when judging coverage (the first ~100 s of a
/// window already say whether the phases sweep).
const MAX_SAMPLES: usize = 5000;

/// The largest gap, ms, between the phases at which an ideal `grid_ms` grid
/// samples a wave of `period_ms` over `window_ms`.
///
/// Computed in O(log period) steps, not by sorting the samples' phases:
/// the planner asks this for up to thousands of candidate periods per
/// requested period (see [`phase_gap_ns`]).
pub fn max_phase_gap_ms(period_ms: f64, grid_ms: f64, window_ms: f64) -> f64 {
    if !(period_ms > 0.0 && grid_ms > 0.0) {
        return period_ms.max(0.0);
    }
    let n = ((window_ms / grid_ms).floor().max(1.0) as usize).min(MAX_SAMPLES);
    // Exact integer arithmetic in ns, so an exact multiple stays exact.
    let p = ms_to_ns(period_ms);
    let g = ms_to_ns(grid_ms);
    if p <= 0 {
        return 0.0;
    }
    ns_to_ms(phase_gap_ns(p, g, n as i64))
}

/// The largest gap between the points `k·g mod p`, k = 0 … n − 1, on a
/// circle of length `p` (all positive).
///
/// By the three-gap theorem the gaps take at most three lengths: with u
/// (v) the index in 1 … n − 1 of the point nearest 0 on its right (left),
/// A = x_u and B = p − x_v, the gaps are A, B and, when u + v > n, A + B.
/// u, v, A and B follow from a subtractive Euclid on (A, B) that starts at
/// u = v = 1, A = g mod p, B = p − A: the next nearer point is always
/// index u + v, at A − B right of 0 (when A > B) or B − A left of it.
pub fn phase_gap_ns(p: i64, g: i64, n: i64) -> i64 {
    let a = g.rem_euclid(p);
    if n <= 1 {
        return p;
    }
    // n at least the orbit's length: every multiple of gcd(g, p) is hit.
    let d = gcd(a, p);
    if n >= p / d {
        return d;
    }
    let (mut u, mut v, mut big_a, mut big_b) = (1i64, 1i64, a, p - a);
    while big_a > 0 && big_b > 0 && u + v < n {
        let t = if big_a > big_b {
            let t = ((big_a - 1) / big_b).min((n - 1 - u) / v);
            u += t * v;
            big_a -= t * big_b;
            t
        } else {
            let t = ((big_b - 1) / big_a).min((n - 1 - v) / u);
            v += t * u;
            big_b -= t * big_a;
            t
        };
        if t == 0 {
            break;
        }
    }
    if u + v > n {
        big_a + big_b
    } else {
        big_a.max(big_b)
    }
}

fn gcd(mut a: i64, mut b: i64) -> i64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.abs().max(1)
}

/// The phase gap a folded cycle may keep: 1/256 of the period (at least
/// 1 ms, at most 1/8 of the period): fine enough that the folded cycle
/// shows a rising edge's ~10 ms time constant, not just its step.
pub fn target_gap_ms(period_ms: f64) -> f64 {
    (period_ms / 256.0).max(1.0).min(period_ms / 8.0)
}

/// The period the device should run for a requested `period_ms` measured
/// over `window_ms`: the request itself when the sampling grid already
/// sweeps its phases, else the smallest longer period (in 0.01 ms steps,
/// at most 2 % longer) that does. A window too short for any such period
/// (a 2 s period over 6 s: three cycles) gets the period that leaves the
/// smallest gap, if that halves the request's gap at least.
pub fn detuned_period_ms(period_ms: f64, window_ms: f64) -> f64 {
    let target = target_gap_ms(period_ms);
    let exact = max_phase_gap_ms(period_ms, SAMPLE_GRID_MS, window_ms);
    if exact <= target {
        return period_ms;
    }
    let steps = ((0.02 * period_ms / STEP_MS).floor() as i64).clamp(1, 4000);
    let mut best = (exact, period_ms);
    for k in 1..=steps {
        let p = ((period_ms + k as f64 * STEP_MS) * 100.0).round() / 100.0;
        let gap = max_phase_gap_ms(p, SAMPLE_GRID_MS, window_ms);
        if gap <= target {
            return p;
        }
        if gap < best.0 - 1e-9 {
            best = (gap, p);
        }
    }
    if best.0 <= exact / 2.0 {
        best.1
    } else {
        period_ms
    }
}

/// Time after the window start (and its ramp) before a duty rung's pattern
/// holds: the keep-warm load had every GPU on, so the first cycle is not
/// the rung's own, and the power controller, clamped by the sustained
/// keep-warm load, takes most of a second to let go. One period, at least
/// 1 s, at most 2 s, and never more than a quarter of the window.
pub fn settle_ns(period_ns: i64, window_ns: i64) -> i64 {
    period_ns
        .clamp(NS_PER_S, 2 * NS_PER_S)
        .min(window_ns / 4)
        .max(0)
}

/// `settle_ns` lengthened so that the measured window (`window_ns` after
/// the ramp, less the settle) holds a whole number of `period_ns` cycles:
/// every figure of a duty rung then covers each phase of the cycle equally
/// (a mean over 3.5 cycles of an in-phase wave is not the cycle's mean).
/// Unchanged when the window is shorter than one period.
pub fn whole_cycles_settle_ns(settle_ns: i64, window_ns: i64, period_ns: i64) -> i64 {
    let measured = window_ns - settle_ns;
    if period_ns <= 0 || measured < period_ns {
        return settle_ns;
    }
    settle_ns + measured % period_ns
}

#[cfg(test)]
mod tests {
    use super::*;
    use powerlab_core::units::NS_PER_MS;

    /// The sort of every sample's phase the gap was once computed by.
    fn gap_by_sorting(p: i64, g: i64, n: i64) -> i64 {
        let mut phases: Vec<i64> = (0..n).map(|k| (k * g).rem_euclid(p)).collect();
        phases.sort_unstable();
        phases.dedup();
        let mut gap = p - phases[phases.len() - 1] + phases[0];
        for w in phases.windows(2) {
            gap = gap.max(w[1] - w[0]);
        }
        gap
    }

    #[test]
    fn the_three_gap_count_agrees_with_sorting_every_phase() {
        // A fixed pseudo-random walk over periods, grids and sample counts,
        // and the planner's own cases (20 ms grid, ns units).
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |m: i64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % m as u64) as i64 + 1
        };
        for _ in 0..20_000 {
            let (p, g, n) = (next(3000), next(5000), next(400));
            assert_eq!(
                phase_gap_ns(p, g, n),
                gap_by_sorting(p, g, n),
                "{p} {g} {n}"
            );
        }
        for p_ms in [100.0, 100.28, 20.0, 10.01, 2000.0, 2003.37, 613.0, 5.0] {
            for n in [1, 2, 3, 150, 400, 5000] {
                let p = ms_to_ns(p_ms);
                assert_eq!(
                    phase_gap_ns(p, 20 * NS_PER_MS, n),
                    gap_by_sorting(p, 20 * NS_PER_MS, n),
                    "{p_ms} ms, {n} samples"
                );
            }
        }
    }

    #[test]
    fn grid_multiples_are_detuned_and_others_kept() {
        // 5 phases per 100 ms cycle on a 20 ms grid: detuned by ~0.3 ms over 8 s.
        assert_eq!(max_phase_gap_ms(100.0, 20.0, 8000.0), 20.0);
        let p100 = detuned_period_ms(100.0, 8000.0);
        assert!(p100 > 100.2 && p100 < 100.4, "{p100}");
        assert!(max_phase_gap_ms(p100, 20.0, 8000.0) <= target_gap_ms(100.0));
        // Every sample at one phase: 20 ms and 10 ms.
        let p20 = detuned_period_ms(20.0, 8000.0);
        assert!(p20 > 20.0 && p20 < 20.2, "{p20}");
        let p10 = detuned_period_ms(10.0, 8000.0);
        assert!(p10 > 10.0 && p10 < 10.1, "{p10}");
        // 2 s over 6 s: three cycles cannot reach 2000/256 ms, but 10 ms
        // gaps (half the request's 20) are within reach; over 60 s a small
        // step reaches the target.
        let short = detuned_period_ms(2000.0, 6000.0);
        assert!(
            max_phase_gap_ms(short, 20.0, 6000.0) <= 10.0 + 1e-9 && short < 2040.0,
            "{short}"
        );
        let long = detuned_period_ms(2000.0, 60000.0);
        assert!(
            max_phase_gap_ms(long, 20.0, 60000.0) <= target_gap_ms(2000.0) && long < 2001.0,
            "{long}"
        );
        // A period prime to the grid needs nothing.
        assert_eq!(detuned_period_ms(613.0, 30000.0), 613.0);
        // A longer window needs a smaller step.
        assert!(detuned_period_ms(100.0, 60000.0) < 100.3);
    }

    #[test]
    fn detuned_periods_sweep_the_cycle() {
        for p in [1000.0, 500.0, 200.0, 100.0, 50.0, 40.0, 20.0, 10.0, 5.0] {
            let d = detuned_period_ms(p, 8000.0);
            assert!(d >= p && d <= p * 1.02, "{p} -> {d}");
            assert!(
                max_phase_gap_ms(d, SAMPLE_GRID_MS, 8000.0) <= target_gap_ms(p),
                "{p} -> {d}"
            );
        }
    }

    #[test]
    fn the_measured_window_holds_whole_cycles() {
        let s = whole_cycles_settle_ns(NS_PER_S, 8 * NS_PER_S, 100_280_000);
        assert_eq!((8 * NS_PER_S - s) % 100_280_000, 0);
        assert!((NS_PER_S..1_100_280_000).contains(&s));
        assert_eq!(
            whole_cycles_settle_ns(2 * NS_PER_S, 8 * NS_PER_S, 2 * NS_PER_S),
            2 * NS_PER_S
        );
        assert_eq!(whole_cycles_settle_ns(100, 150, 1000), 100);
    }

    #[test]
    fn settle_is_one_period_within_bounds() {
        assert_eq!(settle_ns(500 * NS_PER_MS, 8 * NS_PER_S), NS_PER_S);
        assert_eq!(settle_ns(1500 * NS_PER_MS, 8 * NS_PER_S), 1500 * NS_PER_MS);
        assert_eq!(settle_ns(20 * NS_PER_MS, 2 * NS_PER_S), 500 * NS_PER_MS);
        assert_eq!(settle_ns(4 * NS_PER_S, 60 * NS_PER_S), 2 * NS_PER_S);
        assert_eq!(settle_ns(2 * NS_PER_S, 4 * NS_PER_S), NS_PER_S);
    }
}
