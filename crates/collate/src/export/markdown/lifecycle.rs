//! The "Lifecycle edges" section of `report.md`: per kind of edge (a
//! cold start, a kill, a clean exit, a held context's rise and fall) the
//! levels one GPU steps between, the delay from the moment to 10 % of the
//! step and the 10–90 % time, each as mean ± standard deviation over the
//! events (GPU × repeat), and what the reader must know.

use super::cells::text;
use powerlab_analysis::lifecycle::{LifecycleEdge, Spread};
use std::fmt::Write;

/// `mean ± sd` of a figure.
fn pm(s: &Spread) -> String {
    if s.n == 0 || !s.mean.is_finite() {
        return "–".into();
    }
    format!("{:.1} ± {:.1}", s.mean, s.sd)
}

/// Appends the section.
pub fn write_section(s: &mut String, edges: &[LifecycleEdge], refused: &[String]) {
    let _ = writeln!(s, "\n## Lifecycle edges (one GPU)\n");
    let _ = writeln!(
        s,
        "How fast one GPU's draw rises when a job starts and falls when it stops, measured about each recorded moment: a cold start from the command's spawn (CUDA initialisation, then load), a kill from the SIGKILL, a clean exit from the exit the runner saw (its fall may come first: a negative delay); a held context's rise and fall from the plain duty rungs of the longest period, read off each GPU's folded cycle. Before: the mean over the last second before the moment (or the edge, if earlier); after: the mean from 1 s to 2 s past the edge (or the later half of a shorter span); delay: the moment to 10 % of the step; 10–90 %: the samples of every event pooled (each at its own phase of the sample grid, aligned at the moment or at its own edge), the pooled edge's own time, ± one event's standard deviation by the jackknife (the pooled edge without each event in turn; `lifecycle_edges.csv` gives that leave-one-out range as `t10_90_ms_loo_min`/`_max`: one event's samples cannot time an edge shorter than their spacing). Other figures: mean ± standard deviation over the events (GPU × repeat); `≤`: a bound, under twice the samples' own spacing (or the resolution, where coarser), however many events were pooled (a 10–90 % time: the edge is at least this fast; a delay: at most this long); a pooled delay's ± is the events' own scatter (each event's own 10 % crossing).\n"
    );
    let _ = writeln!(
        s,
        "| edge | rungs | events | before W | after W | step W | delay ms | 10–90 % ms | resolution ms | note |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    for e in edges {
        let t = if e.t10_90_is_bound() {
            format!("≤ {:.1}", e.t10_90_ms.mean)
        } else {
            pm(&e.t10_90_ms)
        };
        let delay = if e.delay_is_bound() {
            format!(
                "{} (a bound: under 2 × {:.1} ms)",
                pm(&e.delay_ms),
                e.spacing_ms.max(e.resolution_ms)
            )
        } else {
            pm(&e.delay_ms)
        };
        let rungs = match e.rungs.as_slice() {
            [one] => one.clone(),
            [first, .., last] => format!("{first} … {last}"),
            [] => String::new(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} ({} × {} GPUs) | {} | {} | {} | {delay} | {t} | {:.1} | {} |",
            e.kind.name(),
            text(&rungs),
            e.step_w.n,
            e.repeats,
            e.gpus,
            pm(&e.before_w),
            pm(&e.after_w),
            pm(&e.step_w),
            e.resolution_ms,
            text(e.caveat.as_deref().unwrap_or("")),
        );
    }
    if edges.is_empty() {
        let _ = writeln!(s, "| – | | 0 | | | | | | | no edge could be measured |");
    }
    if !refused.is_empty() {
        let _ = writeln!(
            s,
            "\nNot measured ({}): {}.",
            refused.len(),
            text(&refused.join("; "))
        );
    }
}
