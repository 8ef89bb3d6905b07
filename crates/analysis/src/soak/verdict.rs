//! What a soak row says: whether its power held or moved
//! ([`SoakVerdict`], judged once here; the report writes it), and its
//! thermal equilibrium ([`Equilibrium`], written as `report/soak.csv`'s
//! `equilibrium` column has always read).

use super::SoakRow;
use powerlab_samples::format::write_joined;
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
                write_joined(f, gpus, ", ")?;
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

/// A change between the first and last window beyond this share of the
/// first reads as movement even when no straight line fits it (a GPU
/// that throttled and settled lower).
pub const MOVED_SHARE: f64 = 0.01;

/// The figures a soak row is judged on (as the row states them).
#[derive(Debug, Clone, Copy)]
pub(super) struct Trend {
    /// The drift and its 95 % interval, W per 10 min.
    pub drift: Option<(f64, f64, f64)>,
    /// Last − first window, W.
    pub change_w: Option<f64>,
    /// The first window's mean, W.
    pub first_w: Option<f64>,
    /// The measured window, s.
    pub window_s: f64,
}

/// One reason a soak's power moved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Movement {
    /// A trend of this many W per 10 min whose interval excludes zero.
    Trend(f64),
    /// The last window this many W from the first (signed) of a first
    /// window of `first_w`.
    Shift {
        /// Last − first, W.
        change_w: f64,
        /// The first window's mean, W.
        first_w: f64,
    },
}

impl fmt::Display for Movement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Trend(d) => write!(
                f,
                "a trend of {d:+.1} W/10 min whose interval excludes zero"
            ),
            Self::Shift {
                change_w: c,
                first_w,
            } => write!(
                f,
                "the last window {:.1} W ({:.1} %) {} the first",
                c.abs(),
                100.0 * c.abs() / first_w,
                if c < 0.0 { "below" } else { "above" }
            ),
        }
    }
}

/// Why a soak's power moved, and the data it is judged on when that is
/// incomplete.
#[derive(Debug, Clone, PartialEq)]
pub struct Moved {
    /// Every reason, in order (at least one).
    pub why: Vec<Movement>,
    /// The row's `incomplete` words, where its data is incomplete.
    pub incomplete: Option<String>,
}

impl fmt::Display for Moved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_joined(f, &self.why, "; ")?;
        match &self.incomplete {
            Some(cut) => write!(f, " (incomplete data: {cut})"),
            None => Ok(()),
        }
    }
}

/// Why a soak was not judged.
#[derive(Debug, Clone, PartialEq)]
pub enum NotJudged {
    /// Its data is incomplete (the row's `incomplete` words) and shows no
    /// movement.
    Incomplete(String),
    /// Too short for a trend: the window, s.
    TooShort(f64),
}

impl fmt::Display for NotJudged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Incomplete(cut) => write!(f, "incomplete data: {cut}"),
            Self::TooShort(window_s) => write!(
                f,
                "too short for a trend ({window_s:.0} s; a drift needs four 10 s means, and the first and last windows)"
            ),
        }
    }
}

/// What a soak row's power did.
#[derive(Debug, Clone, PartialEq)]
pub enum SoakVerdict {
    /// It moved: why.
    Moved(Moved),
    /// It held: no trend distinguishable from zero, and the last window
    /// within [`MOVED_SHARE`] of the first. The node's lists the GPUs
    /// that moved (two GPUs drifting apart cancel in the sum); a GPU's
    /// list is empty.
    Held(Vec<(String, Moved)>),
    /// Not judged: why.
    NotJudged(NotJudged),
}

/// Judges a row (a GPU, or the node as a sum) on its `trend` and its
/// `incomplete` words (empty: complete).
pub(super) fn judge(t: Trend, incomplete: &str) -> SoakVerdict {
    let mut why = Vec::new();
    if let Some((d, lo, hi)) = t.drift
        && (lo > 0.0 || hi < 0.0)
    {
        why.push(Movement::Trend(d));
    }
    if let (Some(c), Some(first)) = (t.change_w, t.first_w)
        && first > 0.0
        && c.abs() > MOVED_SHARE * first
    {
        why.push(Movement::Shift {
            change_w: c,
            first_w: first,
        });
    }
    let incomplete = (!incomplete.is_empty()).then(|| incomplete.to_string());
    match (why.is_empty(), incomplete) {
        (true, Some(cut)) => SoakVerdict::NotJudged(NotJudged::Incomplete(cut)),
        (false, incomplete) => SoakVerdict::Moved(Moved { why, incomplete }),
        (true, None) if t.drift.is_none() || t.change_w.is_none() => {
            SoakVerdict::NotJudged(NotJudged::TooShort(t.window_s))
        }
        (true, None) => SoakVerdict::Held(Vec::new()),
    }
}

/// Judges the node on its own `trend`, naming the `gpus` that moved when
/// the node held.
pub(super) fn judge_node(t: Trend, incomplete: &str, gpus: &[SoakRow]) -> SoakVerdict {
    match judge(t, incomplete) {
        SoakVerdict::Held(_) => SoakVerdict::Held(
            gpus.iter()
                .filter_map(|g| match &g.verdict {
                    SoakVerdict::Moved(m) => Some((g.gpu.clone(), m.clone())),
                    _ => None,
                })
                .collect(),
        ),
        other => other,
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

    fn trend(drift: Option<(f64, f64, f64)>, change_w: f64) -> Trend {
        Trend {
            drift,
            change_w: Some(change_w),
            first_w: Some(700.0),
            window_s: 1800.0,
        }
    }

    #[test]
    fn a_soak_is_judged_once_and_written_as_before() {
        let moved = judge(trend(Some((4.2, 1.1, 7.3)), -14.0), "");
        assert_eq!(
            moved,
            SoakVerdict::Moved(Moved {
                why: vec![
                    Movement::Trend(4.2),
                    Movement::Shift {
                        change_w: -14.0,
                        first_w: 700.0
                    }
                ],
                incomplete: None
            })
        );
        let SoakVerdict::Moved(m) = &moved else {
            unreachable!()
        };
        assert_eq!(
            m.to_string(),
            "a trend of +4.2 W/10 min whose interval excludes zero; the last window 14.0 W (2.0 %) below the first"
        );
        // Within 1 % and no trend: held.
        assert_eq!(
            judge(trend(Some((0.5, -1.0, 2.0)), 6.9), ""),
            SoakVerdict::Held(Vec::new())
        );
        // Incomplete and still: not judged; incomplete and moved: moved, said so.
        assert_eq!(
            judge(trend(Some((0.5, -1.0, 2.0)), 1.0), "ran 600 of 1800 s"),
            SoakVerdict::NotJudged(NotJudged::Incomplete("ran 600 of 1800 s".into()))
        );
        let SoakVerdict::Moved(cut) = judge(trend(None, 20.0), "ran 600 of 1800 s") else {
            panic!("a 20 W shift is movement")
        };
        assert_eq!(
            cut.to_string(),
            "the last window 20.0 W (2.9 %) above the first (incomplete data: ran 600 of 1800 s)"
        );
        // No drift: too short.
        assert_eq!(
            judge(trend(None, 1.0), ""),
            SoakVerdict::NotJudged(NotJudged::TooShort(1800.0))
        );
        assert_eq!(
            NotJudged::TooShort(1800.0).to_string(),
            "too short for a trend (1800 s; a drift needs four 10 s means, and the first and last windows)"
        );
    }
}
