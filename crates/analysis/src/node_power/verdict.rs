//! What one source's readings can say of one rung: [`NodePowerVerdict`],
//! a list of [`NodePowerNote`]s, written as `report/node_power.csv`'s
//! `verdict` column has always read (the notes in order, `; ` between).

use powerlab_samples::format::write_joined;
use serde::Serialize;
use std::fmt;

/// One thing the verdict says of a rung's readings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NodePowerNote {
    /// The reading's span (`span_ms`) resolves the rung's period.
    Resolves {
        /// One reading's span, ms.
        span_ms: f64,
        /// The rung's period, ms.
        period_ms: f64,
    },
    /// The reading's span is too long for the rung's period: mean only.
    CannotResolve {
        /// One reading's span, ms.
        span_ms: f64,
        /// The rung's period, ms.
        period_ms: f64,
    },
    /// The window is shorter than one reading's span.
    ShortWindow {
        /// The rung's window, ms.
        window_ms: f64,
        /// One reading's span, ms.
        span_ms: f64,
    },
    /// No reading's span lies in the window.
    NoReading,
    /// Under 90 % of the readings expected.
    Incomplete {
        /// Readings in the window.
        readings: usize,
        /// Readings expected.
        expected: f64,
        /// Their share (0..1).
        coverage: f64,
    },
    /// Reads that failed in the window.
    FailedReads(usize),
    /// The meter reads below the GPU sum by this many W: it does not
    /// measure this node's GPUs.
    BelowGpuSum(f64),
    /// The meter reads this many W above the GPU sum, more than any node
    /// draws beside its GPUs: a meter in mW, or one of many nodes.
    FarAboveGpuSum(f64),
}

impl fmt::Display for NodePowerNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Resolves { span_ms, period_ms } => write!(
                f,
                "a {span_ms:.0} ms average resolves a {period_ms:.0} ms swing"
            ),
            Self::CannotResolve { span_ms, period_ms } => write!(
                f,
                "a {span_ms:.0} ms average cannot resolve a {period_ms:.0} ms swing: mean only"
            ),
            Self::ShortWindow { window_ms, span_ms } => write!(
                f,
                "the window ({window_ms:.0} ms) is shorter than one reading's span ({span_ms:.0} ms)"
            ),
            Self::NoReading => f.write_str("no reading in the window"),
            Self::Incomplete {
                readings,
                expected,
                coverage,
            } => write!(
                f,
                "INCOMPLETE: {readings} of ~{expected:.0} readings ({:.0} %)",
                coverage * 100.0
            ),
            Self::FailedReads(n) => write!(f, "{n} failed reads"),
            Self::BelowGpuSum(by_w) => write!(
                f,
                "CHASSIS BELOW THE GPU SUM by {by_w:.0} W: this meter does not measure this node's GPUs (another node, one PSU, or a stale reading)"
            ),
            Self::FarAboveGpuSum(non_gpu_w) => write!(
                f,
                "CHASSIS FAR ABOVE THE GPU SUM: {non_gpu_w:.0} W beside the GPUs, more than any node draws: this meter does not measure this node (a reading in mW, or a meter of many nodes)"
            ),
        }
    }
}

/// Everything the verdict says of one rung and source (nothing: the
/// readings are complete and the rung has no period to resolve).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodePowerVerdict(pub Vec<NodePowerNote>);

impl NodePowerVerdict {
    /// Whether the meter read below the GPU sum in this rung.
    pub fn below_gpu_sum(&self) -> bool {
        self.0
            .iter()
            .any(|n| matches!(n, NodePowerNote::BelowGpuSum(_)))
    }

    /// Whether the meter read far above the GPU sum in this rung.
    pub fn far_above_gpu_sum(&self) -> bool {
        self.0
            .iter()
            .any(|n| matches!(n, NodePowerNote::FarAboveGpuSum(_)))
    }

    /// Whether the verdict says nothing.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for NodePowerVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_joined(f, &self.0, "; ")
    }
}

impl Serialize for NodePowerVerdict {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_writes_its_notes_in_order_as_the_column_always_read() {
        let v = NodePowerVerdict(vec![
            NodePowerNote::CannotResolve {
                span_ms: 1000.0,
                period_ms: 200.0,
            },
            NodePowerNote::Incomplete {
                readings: 7,
                expected: 10.0,
                coverage: 0.7,
            },
            NodePowerNote::FailedReads(4),
            NodePowerNote::BelowGpuSum(312.4),
        ]);
        assert_eq!(
            v.to_string(),
            "a 1000 ms average cannot resolve a 200 ms swing: mean only; \
             INCOMPLETE: 7 of ~10 readings (70 %); 4 failed reads; \
             CHASSIS BELOW THE GPU SUM by 312 W: this meter does not measure this node's GPUs (another node, one PSU, or a stale reading)"
        );
        assert_eq!(NodePowerVerdict::default().to_string(), "");
        assert_eq!(
            NodePowerNote::ShortWindow {
                window_ms: 400.0,
                span_ms: 1000.0
            }
            .to_string(),
            "the window (400 ms) is shorter than one reading's span (1000 ms)"
        );
        assert_eq!(
            NodePowerNote::Resolves {
                span_ms: 1000.0,
                period_ms: 8000.0
            }
            .to_string(),
            "a 1000 ms average resolves a 8000 ms swing"
        );
        assert_eq!(
            NodePowerNote::NoReading.to_string(),
            "no reading in the window"
        );
    }

    #[test]
    fn below_the_gpu_sum_is_a_note_not_words() {
        let below = NodePowerVerdict(vec![
            NodePowerNote::FailedReads(1),
            NodePowerNote::BelowGpuSum(50.0),
        ]);
        assert!(below.below_gpu_sum());
        let not = NodePowerVerdict(vec![
            NodePowerNote::FailedReads(1),
            NodePowerNote::NoReading,
        ]);
        assert!(!not.below_gpu_sum());
    }
}
