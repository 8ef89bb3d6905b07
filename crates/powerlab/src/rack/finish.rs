//! The end of a rack run: each node collates its own directory, then rank 0
//! the rack. Only when the rack exchange ended cleanly: otherwise the
//! launcher may be about to kill this process, and the raw data (already
//! flushed) is what matters; `powerlab collate <rack dir>` regenerates
//! everything later.

use super::{finalize, say};
use crate::node::RunConfig;
use anyhow::Result;
use powerlab_rack::protocol::gather_json;
use powerlab_runner::{RackRun, RunResult};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Collates and maps the rack's outcome to this process's exit code.
pub fn finish(cfg: &RunConfig, run: Arc<RackRun>, root: &Path, result: &RunResult) -> Result<i32> {
    let (rank, size) = (run.position.rank, run.position.nodes);
    let all_complete = result.rack_ends.as_ref().is_some_and(|ends| {
        ends.iter()
            .all(|e| matches!(e, powerlab_rack::NodeEnd::Complete))
    });
    say(
        rank,
        &format!(
            "node run directory: {} ({:?})",
            result.run_dir.display(),
            result.status
        ),
    );

    let code = if result.rack_ends.is_some() {
        if !cfg.no_collate
            && all_complete
            && let Err(e) = powerlab_collate::collate(&result.run_dir)
        {
            say(
                rank,
                &format!("error: collating {} failed: {e}", result.run_dir.display()),
            );
        }
        let done: Vec<bool> = run.link.submit(|t| gather_json(t, &true)).wait()?;
        debug_assert_eq!(done.len(), size);
        finalize(run, Duration::from_secs(30));
        if rank == 0 && !cfg.no_collate {
            match powerlab_collate::rack::collate_rack(root, Default::default()) {
                Ok(out) => {
                    if !out.gaps.is_empty() {
                        say(
                            rank,
                            &format!(
                                "error: the rack report is incomplete: no report from {}",
                                out.gaps.join(", ")
                            ),
                        );
                    }
                    if !cfg.json {
                        outln!(
                            "rack: {} nodes, report {}",
                            out.nodes.len(),
                            out.report_dir
                                .join(powerlab_rundir::ReportFile::ReportMd.file_name())
                                .display()
                        );
                        let f = |v: Option<f64>| {
                            v.map(|x| format!("{x:.0} W")).unwrap_or_else(|| "–".into())
                        };
                        for r in out
                            .rungs
                            .iter()
                            .filter(|r| r.instrument == powerlab_core::Instrument::BufferedW)
                        {
                            outln!(
                                "  {:<40} mean {:>9}  peak {:>9}  spread {:>9}",
                                r.rung.label,
                                f(r.mean_w),
                                f(r.peak_w),
                                f(r.spread_w)
                            );
                        }
                    }
                }
                Err(e) => say(
                    rank,
                    &format!("error: collating the rack {} failed: {e}", root.display()),
                ),
            }
        }
        if all_complete {
            0
        } else {
            crate::exit::RUN_FAILED
        }
    } else {
        say(
            rank,
            "the rack exchange did not finish; raw data is kept: `powerlab collate` the rack directory once every node has stopped",
        );
        match result.status {
            powerlab_rundir::RunStatus::Interrupted { .. } => crate::exit::interrupted(),
            _ => crate::exit::RUN_FAILED,
        }
    };
    if rank == 0 && !cfg.json {
        outln!("rack run directory: {}", root.display());
    }
    Ok(code)
}
