//! The node's rungs of A and B, matched by label: the repeats of a rung
//! are grouped as the summaries group them (the label less its
//! `/r<repeat>` suffix, [`powerlab_analysis::summary::base_label_of`]), and each
//! label's mean, peak, spread and swing are compared across the repeats
//! ([`super::delta`]). A label found in one run only is listed as
//! unmatched, never dropped.

use super::delta::{Delta, beyond, delta, with_within_run};
use super::side::{Side, SummaryRow};
use powerlab_analysis::metric::{self, Judged, RungMetric};
use powerlab_analysis::summary::base_label_of;
use powerlab_rundir::{Mode, PhaseKind};
use powerlab_samples::format::fmt_ms;
use serde::Serialize;

/// One figure of one rung (or one GPU in one rung) compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureDelta {
    /// `mean`, `peak`, `spread` or `swing`.
    pub figure: String,
    /// The comparison.
    #[serde(flatten)]
    pub delta: Delta,
    /// Whether this figure is judged against the threshold (spread never;
    /// swing on duty rungs only; a GPU's mean only).
    pub judged: bool,
    /// Judged and beyond the threshold (and the interval): a regression.
    pub regression: bool,
}

impl FigureDelta {
    /// Judged, but one run has no value: it could not be compared.
    pub fn uncomparable(&self) -> bool {
        self.judged && self.delta.delta_w.is_none()
    }

    /// Compares one figure; judged figures are checked against `threshold_pct`.
    pub fn new(figure: &str, a: &[f64], b: &[f64], judged: bool, threshold_pct: f64) -> Self {
        let delta = delta(a, b);
        let regression = judged && beyond(&delta, threshold_pct);
        FigureDelta {
            figure: figure.into(),
            delta,
            judged,
            regression,
        }
    }
}

/// One rung label of the node, compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RungDelta {
    /// The label shared by the rung's repeats.
    pub label: String,
    /// The rung's kind (A's).
    pub kind: PhaseKind,
    /// The rung's mode (A's).
    pub mode: Mode,
    /// Mean, peak, spread and swing.
    pub figures: Vec<FigureDelta>,
    /// What qualifies the figures (incomplete data, a verdict instead of
    /// figures, a different method or period).
    pub notes: Vec<String>,
    /// Some repeat of either run was collated from incomplete raw data.
    pub incomplete_data: bool,
}

impl RungDelta {
    /// Whether any judged figure changed beyond the threshold.
    pub fn regressed(&self) -> bool {
        self.figures.iter().any(|f| f.regression)
    }
}

/// A rung label found in one run only.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unmatched {
    /// The label.
    pub label: String,
    /// `A` or `B`: the run that has it.
    pub only_in: String,
    /// Its repeats there.
    pub repeats: usize,
}

/// The repeats of each label, in the order the run first ran them.
pub fn by_label(rows: &[SummaryRow]) -> Vec<(String, Vec<&SummaryRow>)> {
    let mut out: Vec<(String, Vec<&SummaryRow>)> = Vec::new();
    for r in rows {
        let label = base_label_of(&r.label, r.repeat);
        match out.iter_mut().find(|(l, _)| *l == label) {
            Some((_, g)) => g.push(r),
            None => out.push((label, vec![r])),
        }
    }
    out
}

/// Why the rows' labels cannot tell the rungs apart, if they cannot: two
/// rows with one label (its repeat suffix aside) and one repeat number, or
/// with one label and a different phase, kind or mode. Grouped by label,
/// such rows would be pooled as repeats of one rung (a campaign validated
/// before phase names were held to their rule could name a sustained
/// phase `sweep/p500ms/in_phase` beside a duty phase `sweep`).
pub fn ambiguous_label(rows: &[SummaryRow]) -> Option<String> {
    for (label, group) in by_label(rows) {
        let first = group[0];
        let mut repeats = std::collections::HashSet::new();
        for r in &group {
            if !repeats.insert(r.repeat) {
                return Some(format!(
                    "two rungs are labelled `{label}` in repeat {}",
                    r.repeat
                ));
            }
            if (r.phase.as_str(), r.kind, r.mode) != (first.phase.as_str(), first.kind, first.mode)
            {
                return Some(format!(
                    "rungs of phase `{}` ({} {}) and of phase `{}` ({} {}) are both labelled `{label}`",
                    first.phase, first.kind, first.mode, r.phase, r.kind, r.mode
                ));
            }
        }
    }
    None
}

/// The 95 % half-width, within their runs, of the mean over `g`'s rungs of
/// metric `m`: their intervals' half-widths in quadrature over the count.
/// None unless every rung with the figure has an interval.
fn within_run(g: &[&SummaryRow], m: &dyn RungMetric) -> Option<f64> {
    powerlab_samples::stats::half_width_of_mean(
        g.iter()
            .map(|r| metric::read(m, r))
            .filter(|v| v[0].is_some())
            .map(|v| match (v[1], v[2]) {
                (Some(lo), Some(hi)) => Some((hi - lo) / 2.0),
                _ => None,
            }),
    )
}

/// Metric `m`'s values over `g`'s rungs (those that have it).
fn values(g: &[&SummaryRow], m: &dyn RungMetric) -> Vec<f64> {
    g.iter().filter_map(|r| metric::read(m, r)[0]).collect()
}

/// What qualifies one label's figures, side by side.
fn notes(a: &[&SummaryRow], b: &[&SummaryRow]) -> Vec<String> {
    let mut out = Vec::new();
    for (side, g) in [("A", a), ("B", b)] {
        for r in g {
            if let Some(why) = r.incomplete.as_deref().filter(|s| !s.is_empty()) {
                out.push(format!(
                    "{side} repeat {}: figures from incomplete raw data ({why})",
                    r.repeat
                ));
            }
            if let Some(v) = r.verdict.as_deref().filter(|s| !s.is_empty()) {
                out.push(format!("{side} repeat {}: {v}", r.repeat));
            }
        }
    }
    let methods = |g: &[&SummaryRow]| {
        let mut m: Vec<&str> = g.iter().map(|r| r.method.as_str()).collect();
        m.dedup();
        m.join(", ")
    };
    let (ma, mb) = (methods(a), methods(b));
    if ma != mb {
        out.push(format!(
            "the figures come from different methods: A {ma}, B {mb}"
        ));
    }
    let (pa, pb) = (a[0].period_ms, b[0].period_ms);
    if pa != pb {
        let p = |v: Option<f64>| v.map_or("none".into(), |v| format!("{} ms", fmt_ms(v)));
        out.push(format!("periods differ: A {}, B {}", p(pa), p(pb)));
    }
    if (a[0].duty - b[0].duty).abs() > 1e-9 || a[0].kind != b[0].kind || a[0].mode != b[0].mode {
        out.push(format!(
            "the rung differs: A {} {} duty {}, B {} {} duty {}",
            a[0].kind, a[0].mode, a[0].duty, b[0].kind, b[0].mode, b[0].duty
        ));
    }
    out
}

/// Compares every label of the node present in both runs; lists the rest.
pub fn compare_rungs(a: &Side, b: &Side, threshold_pct: f64) -> (Vec<RungDelta>, Vec<Unmatched>) {
    let (ga, gb) = (by_label(&a.rungs), by_label(&b.rungs));
    let mut rungs = Vec::new();
    let mut unmatched = Vec::new();
    for (label, ra) in &ga {
        let Some((_, rb)) = gb.iter().find(|(l, _)| l == label) else {
            unmatched.push(Unmatched {
                label: label.clone(),
                only_in: "A".into(),
                repeats: ra.len(),
            });
            continue;
        };
        let duty = matches!(ra[0].kind, PhaseKind::Duty | PhaseKind::RampUp);
        let fig = |m: &dyn RungMetric, judged: Judged| {
            let judged = match judged {
                Judged::Always => true,
                Judged::DutyRungs => duty,
                Judged::Never => false,
            };
            let (va, vb) = (values(ra, m), values(rb, m));
            let mut d = FigureDelta::new(m.name(), &va, &vb, judged, threshold_pct);
            d.delta = with_within_run(d.delta, (within_run(ra, m), within_run(rb, m)));
            d.regression = judged && beyond(&d.delta, threshold_pct);
            d
        };
        rungs.push(RungDelta {
            label: label.clone(),
            kind: ra[0].kind,
            mode: ra[0].mode,
            figures: metric::METRICS
                .iter()
                .filter_map(|m| m.compare().map(|j| fig(*m, j)))
                .collect(),
            notes: notes(ra, rb),
            incomplete_data: ra
                .iter()
                .chain(rb.iter())
                .any(|r| r.incomplete.as_deref().is_some_and(|t| !t.is_empty())),
        });
    }
    for (label, rb) in &gb {
        if !ga.iter().any(|(l, _)| l == label) {
            unmatched.push(Unmatched {
                label: label.clone(),
                only_in: "B".into(),
                repeats: rb.len(),
            });
        }
    }
    (rungs, unmatched)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn row(id: u32, label: &str, repeat: u32, mean: f64) -> SummaryRow {
        let mut r = powerlab_analysis::summary::fixture::summary(None).row();
        r.rung_id = id;
        r.label = label.into();
        r.phase = "p".into();
        r.kind = PhaseKind::Sustained;
        r.mode = Mode::InPhase;
        r.period_ms = None;
        r.nominal_period_ms = None;
        r.duty = 1.0;
        r.repeat = repeat;
        r.method = powerlab_rundir::summary::Method::SampleAndHold;
        r.mean_w = Some(mean);
        r.harmonics = None;
        r
    }

    /// Issue 31, defect 2: a sustained phase named like a duty rung's
    /// label was pooled with it as "2 repeats" by `compare`.
    #[test]
    fn defect2_rungs_that_share_a_label_are_not_pooled_as_repeats() {
        let mut duty = row(1, "sweep/p500ms/in_phase", 1, 1386.0);
        duty.kind = PhaseKind::Duty;
        duty.phase = "sweep".into();
        let forged = row(2, "sweep/p500ms/in_phase", 1, 880.0);
        let why = ambiguous_label(&[duty.clone(), forged.clone()]).unwrap();
        assert!(
            why.contains("two rungs are labelled `sweep/p500ms/in_phase` in repeat 1"),
            "{why}"
        );
        let mut forged2 = forged;
        forged2.repeat = 2;
        forged2.label = "sweep/p500ms/in_phase/r2".into();
        let why = ambiguous_label(&[duty, forged2]).unwrap();
        assert!(why.contains("phase `p` (sustained in_phase)"), "{why}");
        let ok = [row(0, "idle-0/r1", 1, 1.0), row(1, "idle-0/r2", 2, 1.0)];
        assert_eq!(ambiguous_label(&ok), None);
    }

    #[test]
    fn repeats_are_grouped_by_their_label_without_the_repeat_suffix() {
        let rows = vec![
            row(0, "idle-0/r1", 1, 100.0),
            row(1, "sustained-1/r1", 1, 700.0),
            row(2, "idle-0/r2", 2, 102.0),
            row(3, "sustained-1/r2", 2, 710.0),
            // A label that merely ends like a repeat of another number.
            row(4, "odd/r7", 1, 5.0),
        ];
        let g = by_label(&rows);
        let labels: Vec<&str> = g.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(labels, vec!["idle-0", "sustained-1", "odd/r7"]);
        let ids: Vec<u32> = g[0].1.iter().map(|r| r.rung_id).collect();
        assert_eq!(ids, vec![0, 2]);
        // One repeat without a suffix groups under the same label.
        assert_eq!(by_label(&[row(0, "idle-0", 1, 1.0)])[0].0, "idle-0");
    }

    #[test]
    fn a_figure_is_judged_only_when_asked_and_missing_values_are_not_comparable() {
        let f = FigureDelta::new("spread", &[10.0], &[20.0], false, 3.0);
        assert!(!f.regression && !f.uncomparable());
        let f = FigureDelta::new("mean", &[100.0], &[110.0], true, 3.0);
        assert!(f.regression);
        let f = FigureDelta::new("mean", &[100.0], &[], true, 3.0);
        assert!(!f.regression && f.uncomparable());
    }
}
