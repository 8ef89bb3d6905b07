//! What a soak row says of its GPU's (or the node's) thermal equilibrium:
//! [`Equilibrium`], written as `report/soak.csv`'s `equilibrium` column has
//! always read.

use serde::Serialize;
use std::fmt;

/// Why a GPU's thermal equilibrium was not found: not judged (too few
/// readings to tell) or not reached (the readings say it moved).
#[derive(Debug, Clone, PartialEq)]
pub enum Unreached {
    /// Not judged: this many temperature readings in the last window.
    FewReadings(usize),
    /// Not judged: no whole 10 s bin of temperature readings.
    NoWholeBin,
    /// Not judged: no temperature readings before the last window.
    NothingBefore,
    /// Not judged: under 4 whole 10 s bins from this second on.
    FewBins(f64),
    /// Not reached: the last 10 s bin, from this second, is off the
    /// plateau (°C).
    OffPlateau {
        /// The bin's start, s.
        from_s: f64,
        /// The plateau, °C.
        plateau_c: f64,
    },
    /// Not reached: still moving in the last window (the plateau, °C).
    StillMoving(f64),
    /// Not reached: still climbing or falling from the equilibrium point.
    StillDrifting {
        /// °C moved from `from_s` to the end (signed).
        moved_c: f64,
        /// The equilibrium point, s.
        from_s: f64,
        /// The slope, °C per 10 min.
        per_10min: f64,
    },
    /// Not reached: the last window's halves are this many °C apart.
    HalvesApart(f64),
}

impl Unreached {
    /// Whether the readings were enough to judge (not reached), or not
    /// (not judged).
    pub fn judged(&self) -> bool {
        matches!(
            self,
            Self::OffPlateau { .. }
                | Self::StillMoving(_)
                | Self::StillDrifting { .. }
                | Self::HalvesApart(_)
        )
    }

    /// The reason alone, without `not reached: ` or `not judged: `.
    pub fn reason(&self) -> Reason<'_> {
        Reason(self)
    }
}

/// [`Unreached`]'s reason in words, without its `not …: ` head.
pub struct Reason<'a>(&'a Unreached);

impl fmt::Display for Reason<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self.0 {
            Unreached::FewReadings(n) => {
                write!(f, "{n} temperature reading(s) in the last window")
            }
            Unreached::NoWholeBin => f.write_str("no whole 10 s bin of temperature readings"),
            Unreached::NothingBefore => {
                f.write_str("no temperature readings before the last window")
            }
            Unreached::FewBins(at_s) => write!(
                f,
                "under 4 whole 10 s bins from {at_s:.0} s to show the plateau holds"
            ),
            Unreached::OffPlateau { from_s, plateau_c } => write!(
                f,
                "the 10 s from {from_s:.0} s are off the plateau ({plateau_c:.1} °C)"
            ),
            Unreached::StillMoving(plateau_c) => write!(
                f,
                "still moving in the last window (plateau {plateau_c:.1} °C)"
            ),
            Unreached::StillDrifting {
                moved_c,
                from_s,
                per_10min,
            } => write!(
                f,
                "still {} {:.1} °C from {from_s:.0} s to the end ({:+.2} °C/min)",
                if moved_c > 0.0 { "climbing" } else { "falling" },
                moved_c.abs(),
                per_10min / 10.0
            ),
            Unreached::HalvesApart(c) => {
                write!(f, "{c:+.1} °C between the halves of the last window")
            }
        }
    }
}

impl fmt::Display for Unreached {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let head = if self.judged() {
            "not reached"
        } else {
            "not judged"
        };
        write!(f, "{head}: {}", self.reason())
    }
}

/// How a soak row's thermal equilibrium was judged.
#[derive(Debug, Clone, PartialEq)]
pub enum Equilibrium {
    /// A GPU reached one.
    Reached,
    /// A GPU did not: why.
    Unreached(Unreached),
    /// The node: every GPU reached one; the slowest was this GPU.
    ReachedBySlowest(String),
    /// The node: these GPUs did not reach one.
    NotByAll {
        /// The GPUs that did not.
        gpus: Vec<String>,
        /// Whether any of them was judged (not reached), not only not
        /// judged.
        judged: bool,
        /// Why, where only one did not.
        why: Option<Unreached>,
    },
}

impl fmt::Display for Equilibrium {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Reached => f.write_str("reached"),
            Self::Unreached(u) => write!(f, "{u}"),
            Self::ReachedBySlowest(gpu) => write!(f, "reached (slowest: {gpu})"),
            Self::NotByAll { gpus, judged, why } => {
                f.write_str(if *judged {
                    "not reached by "
                } else {
                    "not judged for "
                })?;
                for (i, g) in gpus.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    f.write_str(g)?;
                }
                match why {
                    Some(u) => write!(f, ": {}", u.reason()),
                    None => Ok(()),
                }
            }
        }
    }
}

impl Serialize for Equilibrium {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_equilibrium_writes_the_words_the_column_always_held() {
        let drift = Unreached::StillDrifting {
            moved_c: -1.46,
            from_s: 120.0,
            per_10min: -3.25,
        };
        assert!(drift.judged());
        assert_eq!(
            drift.to_string(),
            "not reached: still falling 1.5 °C from 120 s to the end (-0.33 °C/min)"
        );
        assert!(!Unreached::FewReadings(1).judged());
        assert_eq!(
            Unreached::FewReadings(1).to_string(),
            "not judged: 1 temperature reading(s) in the last window"
        );
        assert_eq!(Equilibrium::Reached.to_string(), "reached");
        assert_eq!(
            Equilibrium::ReachedBySlowest("gpu3".into()).to_string(),
            "reached (slowest: gpu3)"
        );
        let one = Equilibrium::NotByAll {
            gpus: vec!["gpu1".into()],
            judged: true,
            why: Some(Unreached::HalvesApart(0.74)),
        };
        assert_eq!(
            one.to_string(),
            "not reached by gpu1: +0.7 °C between the halves of the last window"
        );
        let two = Equilibrium::NotByAll {
            gpus: vec!["gpu0".into(), "gpu1".into()],
            judged: false,
            why: None,
        };
        assert_eq!(two.to_string(), "not judged for gpu0, gpu1");
    }
}
