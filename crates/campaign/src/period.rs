//! The duty period a phase asks for and a rung runs, in milliseconds, as
//! its own type: serialized as the bare number (`"period_ms": 500.0`), so
//! plans and rung records read the same as before; conversions go through
//! [`powerlab_core::units`].

use powerlab_core::units::{ms_to_ns, ms_to_ns_f64};
use serde::{Deserialize, Serialize};
use std::fmt;

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
impl fmt::Debug for PeriodMs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

/// Shown as the bare number of milliseconds.
impl fmt::Display for PeriodMs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_as_the_bare_number() {
        let p = PeriodMs(100.28);
        assert_eq!(toml::to_string(&[p]).ok(), toml::to_string(&[100.28]).ok());
        assert_eq!(format!("{p} {p:?}"), "100.28 100.28");
        assert_eq!(p.ns(), 100_280_000);
        assert_eq!(p.ns_f64(), ms_to_ns_f64(100.28));
    }
}
