//! The verdict table a report leads with ([`crate::report::verdicts`]),
//! in Markdown: spec item | limit | figure (± 95 %) | margin | verdict |
//! set by. The same rows for a node (powers in W, rates in kW/s) and a
//! prediction (every figure at its scale).

use super::cells::code;
use crate::report::verdicts::{Quantity, SourceKey, SpecItem, SpecRow};
use powerlab_analysis::grid::{GridMetrics, GridVerdict, Metric};
use powerlab_core::units::W_PER_KW;
use powerlab_samples::format::{fmt_ms, fmt_power, fmt_power_pm};
use std::fmt::Write;

/// How a table writes its powers and rates.
#[derive(Clone, Copy)]
pub enum Scale {
    /// A node's: W without decimals, kW/s with one.
    Node,
    /// A prediction's: each at its own scale (W, kW, MW; per s for rates).
    Scaled,
}

impl Scale {
    /// `v` of `q` with its unit.
    pub fn write(self, q: Quantity, v: f64) -> String {
        match (self, q) {
            (_, Quantity::Percent) => format!("{v:.1} %"),
            (_, Quantity::Millihertz) => format!("{v:.2} mHz"),
            (_, Quantity::HzPerS) => format!("{v:.4} Hz/s"),
            (_, Quantity::Megawatt) => format!("{v:.2} MW"),
            (Scale::Node, Quantity::Power) => format!("{v:.0} W"),
            (Scale::Node, Quantity::Rate) => format!("{:.1} kW/s", v / W_PER_KW),
            (Scale::Node, Quantity::RatePerMin) => format!("{:.1} kW/min", v / W_PER_KW),
            (Scale::Scaled, Quantity::RatePerMin) => format!("{}/min", fmt_power(v)),
            (Scale::Scaled, Quantity::Power) => fmt_power(v),
            (Scale::Scaled, Quantity::Rate) => format!("{}/s", fmt_power(v)),
        }
    }
}

impl Scale {
    /// `v ± pm` of `q`, the unit once: `246.8 ± 27.3 kW/s`.
    pub fn write_pm(self, q: Quantity, v: f64, pm: f64) -> String {
        match (self, q) {
            (_, Quantity::Percent) => format!("{v:.1} ± {pm:.1} %"),
            (_, Quantity::Millihertz) => format!("{v:.2} ± {pm:.2} mHz"),
            (_, Quantity::HzPerS) => format!("{v:.4} ± {pm:.4} Hz/s"),
            (_, Quantity::Megawatt) => format!("{v:.2} ± {pm:.2} MW"),
            (Scale::Node, Quantity::Power) => format!("{v:.0} ± {pm:.0} W"),
            (Scale::Node, Quantity::Rate) => {
                format!("{:.1} ± {:.1} kW/s", v / W_PER_KW, pm / W_PER_KW)
            }
            (Scale::Scaled, Quantity::Power) => fmt_power_pm(v, Some(pm)),
            (Scale::Scaled, Quantity::Rate) => format!("{}/s", fmt_power_pm(v, Some(pm))),
            (Scale::Node, Quantity::RatePerMin) => {
                format!("{:.1} ± {:.1} kW/min", v / W_PER_KW, pm / W_PER_KW)
            }
            (Scale::Scaled, Quantity::RatePerMin) => format!("{}/min", fmt_power_pm(v, Some(pm))),
        }
    }
}

/// What a run's table is judged against, in words: `scope` is `node` or
/// `rack`.
pub fn against(g: &GridMetrics, scope: &str) -> String {
    format!(
        "The {scope}'s GPU draw (board power, not wall power) against the campaign's `[supply]` and `[grid]` (band share: {}–{} Hz). The rating row holds every loaded rung's mean (`summary.csv`); a grid row is the worst verdict, then the largest figure, of every loaded rung but a mitigation's (those are in the Mitigation section).",
        g.band_hz[0], g.band_hz[1]
    )
}

/// The table's heading row.
pub const HEADER: &str =
    "| spec item | limit | figure (95 %) | margin | verdict | set by |\n|---|---|---|---|---|---|";

/// Appends the table, then what it is judged against in one paragraph.
pub fn write_table(s: &mut String, rows: &[SpecRow], scale: Scale, against: &str) {
    let _ = writeln!(s, "\n{HEADER}");
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            item(&r.item),
            limit(r, scale),
            figure(r, scale),
            margin(r, scale),
            verdict(r),
            set_by(r)
        );
    }
    let _ = writeln!(
        s,
        "\n{against} Figures ± 95 %; `≥` a lower bound at what the instrument resolves; `≤` an upper bound (an interval wider than its figure); ? undecided: the interval holds the limit. Margin: limit − figure. The supply excursion row shows the window with the least margin, its verdict counting every judged window; `set by` names the row of the file that holds the figure."
    );
}

/// The spec item in words.
pub fn item(i: &SpecItem) -> String {
    match i {
        SpecItem::SupplyExcursion => "Supply excursion (highest mean over a window)".into(),
        SpecItem::SupplyRated => "Supply rating (continuous)".into(),
        SpecItem::Grid(m) => match m {
            Metric::RampUp => "Ramp up (10–90 %)".into(),
            Metric::RampDown => "Ramp down (10–90 %)".into(),
            Metric::DynamicRange => "Dynamic range (max − min)".into(),
            Metric::DynamicRangePct => "Dynamic range (% of max)".into(),
            Metric::BandShare => "Band share (critical band)".into(),
            other => other.name().replace('_', " "),
        },
        SpecItem::Other(w) => w.clone(),
    }
}

/// " over 50 ms" for a figure read over a window.
fn over(r: &SpecRow) -> String {
    match r.source.as_ref().map(|x| &x.key) {
        Some(SourceKey::Window(w)) => format!(" over {} ms", fmt_ms(*w)),
        _ => String::new(),
    }
}

/// The limit cell.
fn limit(r: &SpecRow, scale: Scale) -> String {
    match (r.limit, &r.item) {
        (None, _) => r
            .limit_words
            .clone()
            .unwrap_or_else(|| "none declared".into()),
        (Some(l), SpecItem::SupplyExcursion) => {
            format!("{}{}", scale.write(r.quantity, l), over(r))
        }
        (Some(l), _) => scale.write(r.quantity, l),
    }
}

/// The figure cell: `≥ v`, `v ± pm`, `lo–hi`, with its window.
fn figure(r: &SpecRow, scale: Scale) -> String {
    let Some(v) = r.value else {
        return "not measured".into();
    };
    let w = |x: f64| scale.write(r.quantity, x);
    if r.unresolved {
        // A point from too few cycles: no interval to state.
        return format!(
            "{}{} (**unresolved**: too few whole cycles for an interval)",
            w(v),
            over(r)
        );
    }
    let body = match (r.lower_bound, r.upper, r.plus_minus) {
        (_, Some(hi), _) => format!("{}–{}", w(v), w(hi)),
        (true, None, _) => format!("≥ {}", w(v)),
        // An interval wider than the figure bounds it, nothing more.
        (false, None, Some(pm)) if pm > v.abs() => format!("≤ {}", w(v + pm)),
        (false, None, Some(pm)) => scale.write_pm(r.quantity, v, pm),
        (false, None, None) => w(v),
    };
    format!("{body}{}", over(r))
}

/// The margin cell, signed; a lower bound's margin is at most that.
fn margin(r: &SpecRow, scale: Scale) -> String {
    match r.margin {
        None => "–".into(),
        Some(m) => {
            let sign = if m < 0.0 { "−" } else { "+" };
            let at_most = if r.lower_bound { "≤ " } else { "" };
            format!("{at_most}{sign}{}", scale.write(r.quantity, m.abs()))
        }
    }
}

/// How a verdict is written: a fail in bold in Markdown, plain on a
/// terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Markdown: `**✘ fail**`.
    Markdown,
    /// Plain text: `✘ fail`.
    Plain,
}

/// The verdict cell: `✔ pass`, `**✘ fail** (3 of 8)`, …
pub fn verdict(r: &SpecRow) -> String {
    verdict_in(r, Style::Markdown)
}

/// The verdict in `style`: `✔ pass`, `✘ fail (3 of 8)`, …
pub fn verdict_in(r: &SpecRow, style: Style) -> String {
    // A prediction's grid study judges its played windows.
    let grid_study = matches!(
        r.quantity,
        Quantity::Millihertz | Quantity::HzPerS | Quantity::Megawatt
    );
    let what = match r.item {
        SpecItem::SupplyExcursion => "windows",
        _ if grid_study => "windows",
        _ => "rungs",
    };
    let of = if r.judged > 1 {
        format!(" ({} of {} {what} over)", r.failed, r.judged)
    } else {
        String::new()
    };
    match r.verdict {
        GridVerdict::Pass => format!("✔ pass{of}"),
        GridVerdict::Fail => match style {
            Style::Markdown => format!("**✘ fail**{of}"),
            Style::Plain => format!("✘ fail{of}"),
        },
        GridVerdict::Undecided if r.note.is_some() => {
            format!("? undecided: {}", r.note.clone().unwrap_or_default())
        }
        GridVerdict::Undetermined | GridVerdict::Undecided => format!("? {}{of}", r.verdict.name()),
        GridVerdict::NoLimit => "no limit declared".into(),
        GridVerdict::NotMeasured if r.limit.is_some() || r.judged == 0 => "not judged".into(),
        GridVerdict::NotMeasured => "not measured".into(),
    }
}

/// The set-by cell: the row, and where it is.
fn set_by(r: &SpecRow) -> String {
    let Some(x) = &r.source else {
        return "–".into();
    };
    let (row, file) = (code(&x.row), code(&x.file));
    match &x.key {
        SourceKey::Window(w) => format!("`{row}` at {} ms (`{file}`)", fmt_ms(*w)),
        SourceKey::Metric(m) => format!("`{row}` (`{file}`, `{}`)", m.name()),
        SourceKey::Other(k) => format!("`{row}` (`{file}`, `{}`)", code(k)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fail_is_bold_in_markdown_and_plain_on_a_terminal() {
        let row = SpecRow {
            verdict: GridVerdict::Fail,
            judged: 8,
            failed: 3,
            ..SpecRow::empty(SpecItem::SupplyExcursion, Quantity::Power, Some(5000.0))
        };
        assert_eq!(verdict(&row), "**✘ fail** (3 of 8 windows over)");
        assert_eq!(
            verdict_in(&row, Style::Plain),
            "✘ fail (3 of 8 windows over)"
        );
        let pass = SpecRow {
            verdict: GridVerdict::Pass,
            judged: 1,
            ..row
        };
        assert_eq!(verdict(&pass), verdict_in(&pass, Style::Plain));
        assert_eq!(verdict(&pass), "✔ pass");
    }
}
