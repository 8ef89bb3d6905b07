//! The barrier before every rung: choosing the window start from measured
//! readiness, and judging each GPU against its *intended* start.

use powerlab_core::hw::{EdgeRecord, Readiness};
use powerlab_core::shape::EdgeKind;

/// Smallest lead the coordinator ever uses.
pub const MIN_LEAD_NS: i64 = 10_000_000;
/// Largest lead (a GPU reporting more is itself a problem).
pub const MAX_LEAD_NS: i64 = 5_000_000_000;

/// The lead between choosing the epoch and the window start: four times the
/// slowest measured arm latency plus twice the measured dispatch time,
/// clamped to [10 ms, 5 s]. Derived from what the GPUs report, so a cold or
/// slow device lengthens it instead of missing it.
pub fn choose_lead_ns(ready: &[Readiness], dispatch_ns: i64) -> i64 {
    let slowest = ready.iter().map(|r| r.arm_latency_ns).max().unwrap_or(0);
    (4 * slowest + 2 * dispatch_ns.max(0)).clamp(MIN_LEAD_NS, MAX_LEAD_NS)
}

/// Start error of one GPU: achieved minus intended time of its `Start`
/// edge. A staggered GPU's intended start already includes its offset, so
/// stagger is never an error.
pub fn start_error_ns(edges: &[EdgeRecord]) -> Option<i64> {
    edges
        .iter()
        .find(|e| e.kind == EdgeKind::Start)
        .map(|e| e.achieved_ns - e.intended_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lead_follows_the_slowest_gpu() {
        let r = |arm| Readiness {
            ready_at_ns: 0,
            arm_latency_ns: arm,
            device_clock_offset_ns: None,
            realtime_thread: None,
        };
        assert_eq!(choose_lead_ns(&[r(1_000_000), r(2_000_000)], 0), 10_000_000);
        assert_eq!(
            choose_lead_ns(&[r(1_000_000), r(30_000_000)], 1_000_000),
            122_000_000
        );
        assert_eq!(choose_lead_ns(&[r(10_000_000_000)], 0), MAX_LEAD_NS);
    }
}
