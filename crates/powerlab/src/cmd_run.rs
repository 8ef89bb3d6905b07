//! `run`: validate the configuration once, bind the live metrics endpoint
//! when asked, then either join a rack (when started by a launcher as one
//! of several processes) or run this node.

use crate::cli::RunArgs;
use crate::node::{RunConfig, finish, run_node};
use anyhow::Result;

/// Runs a campaign as the command line asks; returns the exit code.
///
/// # Errors
/// An error that ends the command with exit 1 (the message is printed by `main`).
pub fn run(a: &RunArgs) -> Result<i32> {
    let mut cfg = match RunConfig::from_args(a) {
        Ok(c) => c,
        Err(e) => {
            errln!("{e}");
            return Ok(e.exit_code());
        }
    };
    // Bound before any preflight or load: a port already taken refuses
    // the run here, with nothing made.
    let serving = match crate::metrics::serve(&a.opts) {
        Ok(s) => s,
        Err(code) => return Ok(code),
    };
    cfg.live = serving.as_ref().map(|s| s.live.clone());
    let mut code = run_configured(&cfg)?;
    let signo = crate::node::signals::seen();
    if code == 0 && signo != 0 {
        // The run had ended; the signal came during what follows it.
        errln!(
            "stopped by signal {signo} after the run ended: its raw files and manifest are complete; collate again if the report is missing or stale"
        );
        code = 128 + signo;
    }
    Ok(match serving {
        Some(s) => s.linger(code),
        None => code,
    })
}

fn run_configured(cfg: &RunConfig) -> Result<i32> {
    // Under a launcher, a build with MPI runs as a rack (one rank is a rack
    // of one node); a build without MPI refuses several processes and runs
    // a single one as a node.
    if let Some(launch) = powerlab_rack::launcher::detect_from_process()
        .filter(|l| cfg!(feature = "mpi") || l.world_size > 1)
    {
        return crate::rack::run(cfg, launch);
    }
    let outcome = run_node(cfg, None)?;
    finish(cfg, outcome)
}
