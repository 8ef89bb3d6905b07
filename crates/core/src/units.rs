//! Units carried in types and names, so a value never loses what it measures.

use serde::{Deserialize, Serialize};

/// Nanoseconds since the Unix epoch on the run clock (see [`crate::clock`]).
pub type EpochNs = i64;

/// Nanoseconds in a microsecond.
pub const NS_PER_US: i64 = 1_000;
/// Nanoseconds in a millisecond.
pub const NS_PER_MS: i64 = 1_000_000;
/// Nanoseconds in a second.
pub const NS_PER_S: i64 = 1_000_000_000;

/// Electrical power in watts.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize, Default)]
#[serde(transparent)]
pub struct Watts(pub f64);

impl Watts {
    /// Converts milliwatts (NVML's unit) to watts.
    pub fn from_mw(power_mw: u32) -> Self {
        Watts(f64::from(power_mw) / 1000.0)
    }
}

impl std::fmt::Display for Watts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.1} W", self.0)
    }
}

/// Converts seconds (as written in campaign files) to nanoseconds.
pub fn secs_to_ns(seconds: f64) -> i64 {
    (seconds * NS_PER_S as f64).round() as i64
}

/// Converts milliseconds to nanoseconds.
pub fn ms_to_ns(ms: f64) -> i64 {
    (ms * NS_PER_MS as f64).round() as i64
}
