//! What a composed rung's intervals pin down, typed: every figure resolved
//! (no [`Resolution`] at all), some figures only bounded (each stated as
//! "≤ hi" or "lo–hi" at 95 %), or no bound at all (too few whole cycles
//! to resample, with the rung length that would give one).
//!
//! Its text is `summary.csv`'s `unresolved` column; the report renders the
//! typed value, never that text.

use crate::cycle::interval::MIN_CYCLES_FOR_INTERVAL;
use crate::cycle::{Bounds, NodeCycle};
use std::fmt;

/// A composed figure whose 95 % interval is wider than this share of the
/// node's step is stated as its interval, not as a point.
pub const UNRESOLVED_STEP_SHARE: f64 = 0.25;

pub use crate::metric::Figure;

/// A figure with its 95 % interval within the run, W.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FigureInterval {
    /// Which figure.
    pub figure: Figure,
    /// The figure, W.
    pub value_w: f64,
    /// Its 95 % interval.
    pub interval: Bounds,
}

impl FigureInterval {
    /// Whether the interval is wider than the figure itself: then the
    /// figure is only bounded from above.
    pub fn at_most(&self) -> bool {
        self.interval.width() > self.value_w.abs()
    }

    /// The bound in words, without the figure's name: `≤ 194 W (95 %)`,
    /// or `37–260 W (95 %)` where the interval is narrower than the figure
    /// but wide against the step.
    pub fn bound_text(&self) -> String {
        if self.at_most() {
            format!("≤ {:.0} W (95 %)", self.interval.hi)
        } else {
            format!("{:.0}–{:.0} W (95 %)", self.interval.lo, self.interval.hi)
        }
    }
}

/// What a composed rung's intervals leave open.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    /// Fewer whole cycles than [`MIN_CYCLES_FOR_INTERVAL`]: the intervals
    /// bound nothing (the figures and their nominal intervals are kept).
    TooFewCycles {
        /// Whole cycles in the rung.
        cycles: usize,
        /// The period the GPUs ran, ms.
        period_ms: f64,
        /// Every figure with the interval it came out with.
        figures: Vec<FigureInterval>,
    },
    /// The figures whose interval is wider than the figure or than
    /// [`UNRESOLVED_STEP_SHARE`] of the step: each is stated as a bound.
    Bounded {
        /// The step judged against, W.
        step_w: f64,
        /// The figures stated as bounds.
        figures: Vec<FigureInterval>,
    },
}

impl Resolution {
    /// What `c`'s intervals leave open; None when every figure is
    /// resolved, or when it has no interval at all.
    pub fn of(c: &NodeCycle) -> Option<Self> {
        let i = c.interval.as_ref()?;
        let st = &c.stats;
        let figures = [
            (Figure::Mean, st.mean_w, i.mean),
            (Figure::Peak, st.peak_w, i.peak),
            (Figure::Spread, st.p99_w - st.p1_w, i.spread),
            (Figure::Swing, st.p90_w - st.p10_w, i.swing),
        ]
        .map(|(figure, value_w, interval)| FigureInterval {
            figure,
            value_w,
            interval,
        });
        if i.cycles < MIN_CYCLES_FOR_INTERVAL {
            return Some(Self::TooFewCycles {
                cycles: i.cycles,
                period_ms: c.period_ms,
                figures: figures.to_vec(),
            });
        }
        let step_w = c.range_step_w.unwrap_or(c.step_w);
        let wide: Vec<FigureInterval> = figures
            .into_iter()
            .filter(|f| f.at_most() || f.interval.width() > UNRESOLVED_STEP_SHARE * step_w.abs())
            .collect();
        (!wide.is_empty()).then_some(Self::Bounded {
            step_w,
            figures: wide,
        })
    }

    /// Whether no bound exists (too few cycles).
    pub fn unbounded(&self) -> bool {
        matches!(self, Self::TooFewCycles { .. })
    }

    /// `figure` stated as a bound, where this names it.
    pub fn bounded(&self, figure: Figure) -> Option<&FigureInterval> {
        match self {
            Self::Bounded { figures, .. } => figures.iter().find(|f| f.figure == figure),
            Self::TooFewCycles { .. } => None,
        }
    }

    /// The remedy for too few cycles: the measured window the rung needs,
    /// s, and in periods. A rung's whole cycles run about one short of its
    /// window's periods (the partial cycles at its ends are dropped), so
    /// it asks for two periods more than [`MIN_CYCLES_FOR_INTERVAL`].
    pub fn lengthen_to(&self) -> Option<(f64, usize)> {
        match self {
            Self::TooFewCycles { period_ms, .. } => {
                let periods = MIN_CYCLES_FOR_INTERVAL + 2;
                Some((periods as f64 * period_ms / 1e3, periods))
            }
            Self::Bounded { .. } => None,
        }
    }

    /// The remedy in words: `lengthen the rung to at least 14.1 s of
    /// measured window (7 periods of 2010 ms)`; None where a bound exists.
    pub fn remedy(&self) -> Option<String> {
        let Self::TooFewCycles { period_ms, .. } = self else {
            return None;
        };
        let (s, periods) = self.lengthen_to()?;
        Some(format!(
            "lengthen the rung to at least {s:.1} s of measured window ({periods} periods of {period_ms:.0} ms)"
        ))
    }
}

/// `summary.csv`'s `unresolved` text.
impl fmt::Display for Resolution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooFewCycles {
                cycles, figures, ..
            } => {
                let named: Vec<String> = figures
                    .iter()
                    .map(|x| {
                        format!(
                            "{} {:.0} W [{:.0}, {:.0}]",
                            x.figure.name(),
                            x.value_w,
                            x.interval.lo,
                            x.interval.hi
                        )
                    })
                    .collect();
                write!(
                    f,
                    "interval from {cycles} whole cycles, fewer than {MIN_CYCLES_FOR_INTERVAL}: too few to resample ({}): {}",
                    self.remedy().unwrap_or_default(),
                    named.join(", ")
                )
            }
            Self::Bounded { step_w, figures } => {
                let named: Vec<String> = figures
                    .iter()
                    .map(|x| format!("{} {}", x.figure.name(), x.bound_text()))
                    .collect();
                write!(
                    f,
                    "bounded, not resolved (interval wider than the figure or than {:.0} % of the {step_w:.0} W step): {}",
                    100.0 * UNRESOLVED_STEP_SHARE,
                    named.join(", ")
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(figure: Figure, value_w: f64, lo: f64, hi: f64) -> FigureInterval {
        FigureInterval {
            figure,
            value_w,
            interval: Bounds {
                lo,
                hi,
                centre: value_w,
            },
        }
    }

    #[test]
    fn an_interval_wider_than_its_figure_is_an_upper_bound() {
        let x = fig(Figure::Swing, 91.0, 0.0, 194.4);
        assert!(x.at_most());
        assert_eq!(x.bound_text(), "≤ 194 W (95 %)");
        let y = fig(Figure::Spread, 300.0, 200.0, 450.0);
        assert!(!y.at_most());
        assert_eq!(y.bound_text(), "200–450 W (95 %)");
    }

    #[test]
    fn too_few_cycles_names_the_length_that_would_bound_them() {
        let u = Resolution::TooFewCycles {
            cycles: 2,
            period_ms: 2010.0,
            figures: vec![fig(Figure::Mean, 3260.0, 3259.0, 3261.0)],
        };
        assert!(u.unbounded());
        let (s, periods) = u.lengthen_to().unwrap();
        assert_eq!(periods, 7);
        assert!((s - 14.07).abs() < 1e-9);
        let text = u.to_string();
        assert!(text.contains("from 2 whole cycles"), "{text}");
        assert!(
            text.contains("at least 14.1 s of measured window (7 periods of 2010 ms)"),
            "{text}"
        );
        assert!(u.bounded(Figure::Mean).is_none());
    }

    #[test]
    fn a_bounded_rung_states_each_figure_as_its_bound() {
        let u = Resolution::Bounded {
            step_w: 5231.0,
            figures: vec![fig(Figure::Swing, 91.0, 0.0, 194.4)],
        };
        assert!(!u.unbounded());
        assert!(u.remedy().is_none());
        assert_eq!(u.bounded(Figure::Swing).map(|x| x.value_w), Some(91.0));
        assert!(u.bounded(Figure::Peak).is_none());
        assert!(u.to_string().ends_with("swing ≤ 194 W (95 %)"), "{u}");
    }
}
