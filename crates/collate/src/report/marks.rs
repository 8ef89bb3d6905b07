//! Marks on a node's rung summaries that the reader must see first: a
//! window some GPU's readings do not cover, and the rung the run stopped in.

use powerlab_analysis::{metric, summary};
use powerlab_core::units::PeriodMs;
use powerlab_core::units::{ms_to_ns_f64, ns_f64_to_s};
use powerlab_samples::{integrity, load, stats};

/// Marks rungs whose window some GPU's readings do not cover; where the
/// GPUs disagree (one covers less than another) every node figure the
/// registry withholds ([`metric::RungMetric::withheld`]) goes, the
/// method says `none`: a sum missing part of a GPU's draw is not the node's.
pub fn mark_incomplete(
    rungs: &mut [summary::RungSummary],
    coverage: &std::collections::BTreeMap<u32, integrity::Coverage>,
) {
    for r in rungs {
        let Some(c) = coverage.get(&r.rung.id) else {
            continue;
        };
        r.window_coverage = Some(stats::r3(c.worst));
        r.incomplete = c.mark();
        if r.incomplete.is_some() && c.withheld() {
            for m in metric::METRICS.iter().filter(|m| m.withheld()) {
                metric::blank(*m, r);
            }
            r.method = powerlab_rundir::summary::Method::None;
        }
    }
}

/// Marks the rung the run was stopped in: its figures are those of the
/// part that ran (whole cycles, for a duty rung), and its coverage is that
/// part's share of the planned window.
pub fn mark_stopped(rungs: &mut [summary::RungSummary], run: &load::Run) {
    for w in &run.rungs {
        let Some(planned_end) = w.stopped_from_ns else {
            continue;
        };
        let Some(r) = rungs.iter_mut().find(|r| r.rung.id == w.info.id) else {
            continue;
        };
        let planned = (planned_end - w.measure_from_ns).max(1) as f64;
        let ran = (w.end_ns - w.measure_from_ns) as f64;
        let share = (ran / planned).min(r.window_coverage.unwrap_or(1.0));
        r.window_coverage = Some(stats::r3(share));
        let what = match w.info.period_ms.map(PeriodMs::ms).filter(|p| *p > 0.0) {
            Some(p) => format!("the {:.0} whole cycles", ran / ms_to_ns_f64(p)),
            None => "the part".to_string(),
        };
        let prior = r
            .incomplete
            .take()
            .map(|m| format!("; {m}"))
            .unwrap_or_default();
        r.incomplete = Some(if w.records_end {
            format!(
                "INCOMPLETE RAW DATA: the run's records end {:.1} s into this rung's {:.1} s window ({:.0} %; the run was killed, or is still being written): every GPU's samples and edges cover the rung that far (edges reach disk up to about a second late, so samples may run past them); figures cover {what} before it; its edges are those the GPUs reported while it ran{prior}",
                ns_f64_to_s(ran),
                ns_f64_to_s(planned),
                100.0 * share
            )
        } else {
            format!(
                "INCOMPLETE RAW DATA: the run was stopped {:.1} s into this rung's {:.1} s window ({:.0} %): figures cover the part that was sampled, {what} before the stop{prior}",
                ns_f64_to_s(ran),
                ns_f64_to_s(planned),
                100.0 * share
            )
        });
    }
}
