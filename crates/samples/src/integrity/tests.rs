//! `covered`: the share of a window its readings cover.

use super::{MAX_GAP_NS, covered};

#[test]
fn coverage_counts_only_gaps_shorter_than_the_limit() {
    let s: Vec<(i64, f64)> = (0..=100).map(|k| (k * 20_000_000, 1.0)).collect();
    assert!((covered(&s, 0, 2_000_000_000) - 1.0).abs() < 1e-9);
    // Half the window has no readings at all.
    assert!((covered(&s, 1_000_000_000, 3_000_000_000) - 0.5).abs() < 0.01);
    // A hole of 1 s in the middle.
    let holed: Vec<(i64, f64)> = s
        .iter()
        .copied()
        .filter(|x| !(500_000_000..1_500_000_000).contains(&x.0))
        .collect();
    let c = covered(&holed, 0, 2_000_000_000);
    assert!((c - 0.49).abs() < 0.02, "{c}");
}

#[test]
fn a_reading_not_yet_due_at_the_window_s_edge_is_no_loss() {
    // Readings every 20 ms from 3 ms after the window's start to 17 ms
    // before its end, none beyond (a last rung without cooldown): whole.
    let s: Vec<(i64, f64)> = (0..100)
        .map(|k| (3_000_000 + k * 20_000_000, 1.0))
        .collect();
    let end = s[99].0 + 17_000_000;
    assert!((covered(&s, 0, end) - 1.0).abs() < 1e-12);
    // A stretch longer than a gap that counts is a loss.
    let c = covered(&s, 0, end + 2 * MAX_GAP_NS);
    assert!(c < 0.96, "{c}");
}
