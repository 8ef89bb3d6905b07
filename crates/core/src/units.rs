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

/// Converts seconds to nanoseconds, truncating toward zero (`as i64`), not rounding.
pub fn secs_to_ns_trunc(seconds: f64) -> i64 {
    (seconds * NS_PER_S as f64) as i64
}

/// Converts milliseconds to nanoseconds, truncating toward zero (`as i64`), not rounding.
pub fn ms_to_ns_trunc(ms: f64) -> i64 {
    (ms * NS_PER_MS as f64) as i64
}

/// Converts microseconds to nanoseconds, truncating toward zero (`as i64`), not rounding.
pub fn us_to_ns_trunc(us: f64) -> i64 {
    (us * NS_PER_US as f64) as i64
}

/// Converts milliseconds to nanoseconds as an unrounded `f64`.
pub fn ms_to_ns_f64(ms: f64) -> f64 {
    ms * NS_PER_MS as f64
}

/// Converts microseconds to nanoseconds as an unrounded `f64`.
pub fn us_to_ns_f64(us: f64) -> f64 {
    us * NS_PER_US as f64
}

/// Converts nanoseconds to seconds as `f64`.
pub fn ns_to_s(ns: i64) -> f64 {
    ns as f64 / NS_PER_S as f64
}

/// Converts nanoseconds to milliseconds as `f64`.
pub fn ns_to_ms(ns: i64) -> f64 {
    ns as f64 / NS_PER_MS as f64
}

/// Converts nanoseconds to microseconds as `f64`.
pub fn ns_to_us(ns: i64) -> f64 {
    ns as f64 / NS_PER_US as f64
}

/// Converts a fractional nanosecond count to seconds.
pub fn ns_f64_to_s(ns: f64) -> f64 {
    ns / NS_PER_S as f64
}

/// Converts a fractional nanosecond count to milliseconds.
pub fn ns_f64_to_ms(ns: f64) -> f64 {
    ns / NS_PER_MS as f64
}

/// Converts a fractional nanosecond count to microseconds.
pub fn ns_f64_to_us(ns: f64) -> f64 {
    ns / NS_PER_US as f64
}

/// Converts milliseconds to seconds.
pub fn ms_to_s(ms: f64) -> f64 {
    ms / 1e3
}

/// Converts seconds to milliseconds.
pub fn s_to_ms(seconds: f64) -> f64 {
    seconds * 1e3
}

/// Converts millijoules (NVML's energy counter unit) to joules.
pub fn mj_to_j(mj: f64) -> f64 {
    mj / 1000.0
}

/// Converts milliseconds to whole microseconds, rounded to nearest.
pub fn ms_to_us_rounded(ms: f64) -> i64 {
    (ms * 1000.0).round() as i64
}

/// Converts a fraction (0..=1) to parts per million, rounded to nearest.
pub fn fraction_to_ppm(fraction: f64) -> i64 {
    (fraction * 1e6).round() as i64
}

/// Converts a fraction to parts per million as an unrounded `f64`.
pub fn fraction_to_ppm_f64(fraction: f64) -> f64 {
    fraction * 1e6
}

/// Converts parts per million to a fraction (multiplies by 1e-6).
pub fn ppm_to_fraction(ppm: f64) -> f64 {
    ppm * 1e-6
}

/// Converts joules to millijoules.
pub fn j_to_mj(joules: f64) -> f64 {
    joules * 1000.0
}

/// Watts in a kilowatt.
pub const W_PER_KW: f64 = 1e3;
/// Watts in a megawatt.
pub const W_PER_MW: f64 = 1e6;
/// Watts in a gigawatt.
pub const W_PER_GW: f64 = 1e9;

/// Joules in a kilojoule.
pub const J_PER_KJ: f64 = 1e3;
/// Joules in a megajoule (not a millijoule: see [`j_to_mj`] for those).
pub const J_PER_MEGAJOULE: f64 = 1e6;

/// A million, for a count given in millions and for the upper bound of
/// plain (not scientific) notation in messages.
pub const MILLION: f64 = 1e6;

/// Bytes in a (decimal) megabyte, as disk-space messages count them.
pub const BYTES_PER_MB: u64 = 1_000_000;

/// Converts bytes to (decimal) megabytes as `f64`.
pub fn bytes_to_mb(bytes: u64) -> f64 {
    bytes as f64 / BYTES_PER_MB as f64
}

/// A duty period, ms.
#[derive(Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PeriodMs(pub f64);

impl PeriodMs {
    /// The period, ms.
    pub fn ms(self) -> f64 {
        self.0
    }

    /// The period, ns, rounded to the nearest.
    pub fn ns(self) -> i64 {
        ms_to_ns(self.0)
    }

    /// The period, ns, unrounded.
    pub fn ns_f64(self) -> f64 {
        ms_to_ns_f64(self.0)
    }
}

impl From<f64> for PeriodMs {
    fn from(ms: f64) -> Self {
        PeriodMs(ms)
    }
}

impl From<PeriodMs> for f64 {
    fn from(p: PeriodMs) -> f64 {
        p.0
    }
}

/// Shown as the bare number of milliseconds, as the plan was printed
/// before the type existed.
impl std::fmt::Debug for PeriodMs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.0, f)
    }
}

/// Shown as the bare number of milliseconds.
impl std::fmt::Display for PeriodMs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_helpers_round() {
        assert_eq!(secs_to_ns(1.5), 1_500_000_000);
        assert_eq!(ms_to_ns(0.000_000_6), 1);
        assert_eq!(ms_to_ns(-0.000_000_6), -1);
    }

    #[test]
    fn trunc_helpers_truncate() {
        assert_eq!(secs_to_ns_trunc(0.000_000_001_9), 1);
        assert_eq!(ms_to_ns_trunc(0.000_000_9), 0);
        assert_eq!(ms_to_ns_trunc(-0.000_000_9), 0);
        assert_eq!(ms_to_ns_trunc(2.5), 2_500_000);
        assert_eq!(us_to_ns_trunc(1.999), 1_999);
        assert_eq!(us_to_ns_trunc(0.000_9), 0);
    }

    #[test]
    fn to_float_helpers_match_hand_written() {
        for ns in [0i64, 1, 999, 1_234_567_891, -7_000_001] {
            assert_eq!(ns_to_s(ns), ns as f64 / 1e9);
            assert_eq!(ns_to_ms(ns), ns as f64 / 1e6);
            assert_eq!(ns_to_us(ns), ns as f64 / 1e3);
            let f = ns as f64 + 0.25;
            assert_eq!(ns_f64_to_s(f), f / 1e9);
            assert_eq!(ns_f64_to_ms(f), f / 1e6);
            assert_eq!(ns_f64_to_us(f), f / 1e3);
        }
        for x in [0.0, 0.1, 2.5, 1e-7, 123.456] {
            assert_eq!(ms_to_ns_f64(x), x * 1e6);
            assert_eq!(us_to_ns_f64(x), x * 1e3);
            assert_eq!(ms_to_s(x), x / 1e3);
            assert_eq!(s_to_ms(x), x * 1e3);
            assert_eq!(mj_to_j(x), x / 1000.0);
        }
        assert_eq!(Watts::from_mw(1500).0, 1.5);
    }

    #[test]
    fn rounded_integer_helpers() {
        assert_eq!(ms_to_us_rounded(2.0004), 2_000);
        assert_eq!(ms_to_us_rounded(2.0006), 2_001);
        assert_eq!(fraction_to_ppm(0.25), 250_000);
        assert_eq!(fraction_to_ppm(0.000_000_6), 1);
        assert_eq!(3_500_000 / BYTES_PER_MB, 3);
        for x in [0.0, 0.37, 12.5, -3.0] {
            assert_eq!(fraction_to_ppm_f64(x), x * 1e6);
            assert_eq!(ppm_to_fraction(x), x * 1e-6);
            assert_eq!(j_to_mj(x), x * 1000.0);
        }
        assert_eq!(2.5 * W_PER_KW, 2500.0);
        assert_eq!(2.5 * W_PER_MW, 2_500_000.0);
        assert_eq!(2.5 * W_PER_GW, 2_500_000_000.0);
        assert_eq!(j_to_mj(J_PER_MEGAJOULE), 1e9);
        assert_eq!(j_to_mj(J_PER_KJ), 1e6);
        assert_eq!(MILLION, 1_000_000.0);
        assert_eq!(bytes_to_mb(3_500_000), 3_500_000_f64 / 1e6);
    }
}
