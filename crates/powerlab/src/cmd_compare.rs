//! `powerlab compare A B`: a thin layer over `powerlab_collate::compare`.
//! Exit status as `health-diff`'s (diff's convention): 0 no regression, 1
//! at least one regression flagged, 2 a run cannot be compared or an
//! output cannot be written.

use crate::cli::CompareArgs;
use anyhow::Result;
use powerlab_collate::compare::CompareOptions;
use powerlab_collate::comparison::compare as compare_runs;
use powerlab_collate::render::{
    compare_json as json, compare_markdown as markdown, write_compare as write_all,
};
use std::path::{Component, Path, PathBuf};

pub fn compare(a: &CompareArgs) -> Result<i32> {
    if let Some(run) = a.out.as_deref().and_then(inside_a_report) {
        errln!(
            "error: --out {} lies inside the report/ folder of run {}, which every collation of that run replaces whole (the comparison would be deleted); write it elsewhere, e.g. --out {}",
            a.out.as_deref().unwrap_or(Path::new("")).display(),
            run.display(),
            run.join(powerlab_rundir::CompareFile::DIR).display()
        );
        return Ok(crate::exit::TROUBLE);
    }
    let opts = CompareOptions {
        threshold_pct: a.threshold_pct,
        collate_stale: a.collate,
        health_diff: Some(powerlab_health::diff::diff),
    };
    let c = match compare_runs(&a.a, &a.b, &opts) {
        Ok(c) => c,
        Err(e) => {
            errln!("error: {e}");
            return Ok(crate::exit::TROUBLE);
        }
    };
    if let Some(dir) = &a.out {
        match write_all(&c, dir) {
            Ok(files) => {
                for f in files {
                    errln!("wrote {}", f.display());
                }
            }
            Err(e) => {
                errln!("error: {e}");
                return Ok(crate::exit::TROUBLE);
            }
        }
    }
    if a.json {
        out!("{}", json(&c));
    } else if a.out.is_none() {
        out!("{}", markdown(&c));
    } else {
        for w in &c.warnings {
            outln!("WARNING: {w}");
        }
        outln!(
            "{} regression(s) beyond {} % ({} matched rung(s), {} unmatched, GPUs matched by {})",
            c.regressions,
            c.threshold_pct,
            c.rungs.len(),
            c.unmatched_rungs.len(),
            c.gpu_matching.by
        );
    }
    Ok(if c.regressions > 0 {
        crate::exit::DIFFERENT
    } else {
        0
    })
}

/// The run directory whose `report/` (or a staging `report.new-*` /
/// `report.old-*` beside it) holds `out`, if any: a folder holding
/// `manifest.json` whose report folder is `out` or one of its ancestors.
pub(crate) fn inside_a_report(out: &Path) -> Option<PathBuf> {
    let abs = std::path::absolute(out).ok()?;
    // Lexically: `..` steps up (the folders need not exist yet).
    let mut norm = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                norm.pop();
            }
            Component::CurDir => {}
            other => norm.push(other),
        }
    }
    // Through links too, for the part that exists.
    let resolved = norm
        .ancestors()
        .find_map(|a| {
            let real = a.canonicalize().ok()?;
            let rest = norm.strip_prefix(a).ok()?;
            Some(real.join(rest))
        })
        .unwrap_or_else(|| norm.clone());
    [norm, resolved].into_iter().find_map(|p| {
        p.ancestors().find_map(|d| {
            let name = d.file_name()?.to_str()?;
            let report = name == powerlab_rundir::RunFile::Report.name()
                || name.starts_with("report.new-")
                || name.starts_with("report.old-");
            let run = d.parent()?;
            (report
                && run
                    .join(powerlab_rundir::RunFile::Manifest.name())
                    .is_file())
            .then(|| run.to_path_buf())
        })
    })
}
