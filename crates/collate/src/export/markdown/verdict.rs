//! The verdict plots' links, right under a report's title and above its
//! answer block: a reader sees the node's swing against the `[grid]` and
//! its excursion envelope against the `[supply]` before any table.

use super::cells::text;
use crate::export::plots::{SwingLimit, has_envelope_plot, has_swing_plot, supply_words};
use powerlab_analysis::envelope::Envelope;
use powerlab_analysis::grid::GridMetrics;
use powerlab_analysis::summary::RungSummary;
use powerlab_rundir::PlotFile;
use std::fmt::Write;

/// The alt text of the swing plot (it is `report.html`'s caption too).
pub fn swing_alt(grid: &GridMetrics) -> String {
    format!(
        "The verdict: node swing (p90 − p10, 95 % interval) against the duty period, in phase, staggered and every mitigation — {}",
        SwingLimit::of(grid).words()
    )
}

/// The alt text of the envelope plot.
pub fn envelope_alt(envelope: &Envelope) -> String {
    format!(
        "The verdict: highest mean node power over each window, 1 ms to 10 s, the run and its worst rungs — {}",
        supply_words(envelope.supply.as_ref())
    )
}

/// Appends the two verdict plots (each that was drawn, as
/// [`crate::export::plots::write_verdict_plots`] decides) as image links,
/// each in its own paragraph, without a heading: the answer stays the
/// first section.
pub fn write_plots(s: &mut String, rungs: &[RungSummary], envelope: &Envelope, grid: &GridMetrics) {
    if has_swing_plot(rungs) {
        let _ = writeln!(
            s,
            "\n![{}]({})",
            text(&swing_alt(grid)),
            PlotFile::VerdictSwing.svg_link()
        );
    }
    if has_envelope_plot(envelope) {
        let _ = writeln!(
            s,
            "\n![{}]({})",
            text(&envelope_alt(envelope)),
            PlotFile::VerdictEnvelope.svg_link()
        );
    }
}
