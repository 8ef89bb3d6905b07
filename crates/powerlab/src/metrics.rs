//! `run --metrics-listen`: binds the live metrics endpoint before anything
//! is loaded (a port already taken refuses the run, exit 1, with no run
//! directory made), says on stderr where it serves, and keeps it up for
//! `--metrics-linger-s` after the run.

use crate::cli::RunOptions;
use powerlab_live::{Live, MetricsServer};
use std::sync::Arc;
use std::time::Duration;

/// A bound endpoint and the state it serves.
pub struct Serving {
    /// The state the run records into.
    pub live: Arc<Live>,
    server: MetricsServer,
    linger: Duration,
}

impl Serving {
    /// Keeps serving the final values for the linger time (none after a
    /// run a signal stopped), then stops; a stopping signal (node::signals) ends
    /// the wait. The run's exit code, or 128 + N for a signal N that came
    /// while lingering.
    pub fn linger(self, code: i32) -> i32 {
        if self.linger.is_zero() || code > 128 || crate::node::signals::seen() != 0 {
            return code;
        }
        errln!(
            "metrics: serving the final values at {} for {:.1} s more (Ctrl-C ends it)",
            self.server.url(),
            self.linger.as_secs_f64()
        );
        match crate::node::signals::wait_unless_signalled(self.linger) {
            Ok(None) => code,
            Ok(Some(signo)) => {
                errln!("metrics: stopped serving early (signal {signo})");
                128 + signo
            }
            Err(e) => {
                errln!("metrics: cannot wait for signals ({e}); not lingering");
                code
            }
        }
    }
}

/// This process's rank among those a launcher started on this host (0
/// when alone).
fn local_rank() -> usize {
    if powerlab_rack::launcher::detect_from_process().is_none() {
        return 0;
    }
    powerlab_rack::launcher::local_place(|k| std::env::var(k).ok()).map_or(0, |p| p.rank)
}

/// Starts the endpoint `--metrics-listen` asks for (None when not asked).
///
/// # Errors
/// The exit code of a refusal (its cause is said on stderr): the port
/// plus the node-local rank is out of range, or the address cannot be bound.
pub fn serve(opts: &RunOptions) -> Result<Option<Serving>, i32> {
    let Some(base) = opts.metrics.metrics_listen else {
        return Ok(None);
    };
    let rank = local_rank();
    let refuse = |e: String| {
        errln!("error: --metrics-listen {base}: {e}");
        errln!("(no load was started)");
        crate::exit::ERROR
    };
    let addr = powerlab_live::rank_address(base, rank).map_err(refuse)?;
    let live = Arc::new(Live::new(env!("CARGO_PKG_VERSION")));
    let server = MetricsServer::start(addr, Arc::clone(&live)).map_err(refuse)?;
    let whose = if rank > 0 || addr.port() != base.port() {
        format!(" (node-local rank {rank}: port {} + {rank})", base.port())
    } else {
        String::new()
    };
    errln!("metrics: serving {}{whose}", server.url());
    Ok(Some(Serving {
        live,
        server,
        linger: Duration::from_secs_f64(opts.metrics.metrics_linger_s),
    }))
}
