//! `powerlab compare A B`: a thin layer over `powerlab_collate::compare`.
//! Exit status as `health-diff`'s (diff's convention): 0 no regression, 1
//! at least one regression flagged, 2 a run cannot be compared or an
//! output cannot be written.

use crate::cli::CompareArgs;
use anyhow::Result;
use powerlab_collate::compare::CompareOptions;
use powerlab_collate::comparison::compare as compare_runs;
use powerlab_collate::export::compare::{json, write_all};
use powerlab_collate::export::markdown::compare::markdown;

pub fn compare(a: &CompareArgs) -> Result<i32> {
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
