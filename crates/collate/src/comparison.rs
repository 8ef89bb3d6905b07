//! `powerlab compare`'s pipeline: each run directory read through its
//! collated report ([`load_side`]), then compared
//! ([`crate::compare::compare_sides`]). A report is used only while it is
//! up to date with the run's files ([`crate::handoff::freshness`], the
//! check a rack makes of its nodes); otherwise the run is collated again
//! when asked ([`crate::collation::collate`]), or refused by name. The
//! figures are never re-derived here, and `report.md` is never parsed.

use crate::compare::side::{ReportState, Side, SummaryRow};
use crate::compare::{CompareError, CompareOptions, Comparison, compare_sides};
use crate::handoff::{Freshness, freshness};
use powerlab_analysis::per_gpu::GpuRungRow;
use powerlab_rundir::Manifest;
use std::path::Path;

/// Compares run `b` (candidate) with run `a` (baseline).
///
/// # Errors
///
/// As [`load_side`] for either run; [`CompareError::Nothing`] when no rung
/// of `b` matches one of `a`, or no matched rung has a judged figure in
/// both runs (nothing was compared, so no verdict can be given).
pub fn compare(a: &Path, b: &Path, opts: &CompareOptions) -> Result<Comparison, CompareError> {
    let sa = load_side(a, opts.collate_stale)?;
    let sb = load_side(b, opts.collate_stale)?;
    let c = compare_sides(&sa, &sb, opts);
    let nothing = |why: String| CompareError::Nothing {
        a: a.to_path_buf(),
        b: b.to_path_buf(),
        why,
    };
    if c.rungs.is_empty() {
        return Err(nothing(format!(
            "no rung of the candidate matches a rung of the baseline by label ({} rung label(s) in one run only; the candidate may have stopped before its first rung, or run another campaign): nothing was compared",
            c.unmatched_rungs.len()
        )));
    }
    let compared = c
        .rungs
        .iter()
        .flat_map(|r| &r.figures)
        .any(|f| f.judged && f.delta.delta_w.is_some());
    if !compared {
        return Err(nothing(format!(
            "no rung has a figure in both runs ({} matched rung(s), none with a mean, peak or swing on both sides): nothing was compared",
            c.rungs.len()
        )));
    }
    Ok(c)
}

/// Reads one run. With `collate_stale`, a run whose report is missing or
/// out of date is collated first (which rewrites its `report/`).
///
/// # Errors
///
/// [`CompareError::NotARun`] for a path without a readable manifest or a
/// rack run directory; [`CompareError::NotCollated`] for a report that is
/// missing or out of date (without `collate_stale`);
/// [`CompareError::Collate`] when that collation fails;
/// [`CompareError::BadReport`] when `summary.csv` or `per_gpu.csv` does not
/// read, or when two of the run's rungs share a label
/// ([`crate::compare::rungs::ambiguous_label`]).
pub fn load_side(path: &Path, collate_stale: bool) -> Result<Side, CompareError> {
    let not_a_run = |why: String| CompareError::NotARun {
        path: path.to_path_buf(),
        why,
    };
    if !path.is_dir() {
        return Err(not_a_run("no such directory".into()));
    }
    if path.join(powerlab_rundir::RunFile::Nodes.name()).is_dir() {
        return Err(not_a_run(
            "a rack run directory: compare one node's directory under nodes/".into(),
        ));
    }
    let manifest = Manifest::read(&path.join(powerlab_rundir::RunFile::Manifest.name()))
        .map_err(|e| not_a_run(e.to_string()))?;
    let state = if path.join(powerlab_rundir::RunFile::Report.name()).is_dir() {
        freshness(path)
    } else {
        Freshness::Stale("it was never collated: no report/".into())
    };
    let report = match state {
        Freshness::Fresh => ReportState::UpToDate,
        Freshness::RawArchived => ReportState::RawArchived,
        Freshness::Stale(why) if collate_stale => {
            crate::collation::collate(path).map_err(|source| CompareError::Collate {
                path: path.to_path_buf(),
                source,
            })?;
            ReportState::CollatedNow(why)
        }
        Freshness::Stale(why) => {
            return Err(CompareError::NotCollated {
                path: path.to_path_buf(),
                why,
            });
        }
    };
    let report_dir = path.join(powerlab_rundir::RunFile::Report.name());
    let bad = |file: &Path, e: powerlab_rundir::RunDirError| CompareError::BadReport {
        path: file.to_path_buf(),
        message: format!("does not read as the collator writes it ({e}): collate the run again"),
    };
    let summary = report_dir.join(powerlab_rundir::ReportFile::SummaryCsv.file_name());
    let rungs: Vec<SummaryRow> =
        powerlab_rundir::summary::read_summary(&summary).map_err(|e| bad(&summary, e))?;
    if let Some(why) = crate::compare::rungs::ambiguous_label(&rungs) {
        return Err(CompareError::BadReport {
            path: summary,
            message: format!(
                "{why}: rungs that one label cannot tell apart are not compared (their figures would be pooled as repeats); run the campaign again with phase names that validate"
            ),
        });
    }
    let per_gpu_csv = report_dir.join(powerlab_rundir::ReportFile::PerGpuCsv.file_name());
    let has_per_gpu = per_gpu_csv.is_file();
    let per_gpu: Vec<GpuRungRow> =
        powerlab_rundir::read_rows(&per_gpu_csv).map_err(|e| bad(&per_gpu_csv, e))?;
    let health_path = powerlab_rundir::RunFile::Health.path_in(path);
    let health = health_path.is_file().then(|| {
        std::fs::read_to_string(&health_path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str(&t).map_err(|e| format!("not JSON: {e}")))
    });
    Ok(Side {
        dir: path.to_path_buf(),
        manifest,
        report,
        rungs,
        per_gpu,
        has_per_gpu,
        health,
    })
}
