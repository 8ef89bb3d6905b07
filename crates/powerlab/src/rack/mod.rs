//! `run` under mpirun / srun: one process per node, rank 0 coordinating.
//!
//! Order, each step a collective every node takes part in:
//! 1. who is who (node labels) and the same campaign on every node;
//! 2. each node's realtime clock against rank 0's (MPI round trips);
//! 3. preflight on every node, the clock check included: one unhealthy
//!    node stops every node before load, naming it;
//! 4. rank 0 names the rack run directory; each node writes its own
//!    `nodes/<label>/` run directory inside it;
//! 5. the runner, which agrees every rung's start epoch across the rack;
//! 6. each node collates its own directory, then rank 0 the rack.

mod finish;
mod meet;
mod nccl_world;
mod preflight;
mod rundir;

use crate::cli::BackendKind;
use crate::node::{RackJoin, RunConfig, run_node};
use anyhow::Result;
use powerlab_campaign::RackPosition;
use powerlab_rack::launcher::Launch;
use powerlab_rack::protocol::clock_offsets;
use powerlab_rack::{ClockOffset, RackLink, node_label};
use powerlab_runner::RackRun;
use std::sync::Arc;
use std::time::Duration;

/// Starts MPI and runs the campaign as one node of the rack.
#[cfg(feature = "mpi")]
pub fn run(cfg: &RunConfig, launch: Launch) -> Result<i32> {
    let link = RackLink::start(|| {
        Ok(
            Box::new(powerlab_rack::mpi_transport::MpiTransport::init()?)
                as Box<dyn powerlab_rack::Transport>,
        )
    })
    .map_err(|e| {
        anyhow::anyhow!(
            "started by {} but MPI could not be initialised: {e}",
            launch.launcher
        )
    })?;
    rack_main(cfg, link)
}

/// Without MPI support every rank would run its own single-node campaign:
/// refuse, naming the fix.
#[cfg(not(feature = "mpi"))]
pub fn run(_cfg: &RunConfig, launch: Launch) -> Result<i32> {
    errln!(
        "error: started by {} as one of {} processes ({} is set), but this powerlab was built without MPI support: each process would run its own unrelated single-node campaign.\n\
         Build it with `cargo build --release --features mpi` (needs the MPI library's mpicc and libclang), or run one process without the launcher.",
        launch.launcher,
        launch.world_size,
        launch.variable
    );
    Ok(crate::exit::ERROR)
}

/// This process's realtime clock, Unix-epoch ns.
fn realtime_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// The node lock of this host: the real node's host-wide lock, or for a
/// simulated rack one per host in the shared results directory.
fn host_lock_path(cfg: &RunConfig, host: &str) -> std::path::PathBuf {
    match cfg.backend() {
        BackendKind::Cuda => powerlab_runner::lock::default_lock_path(),
        BackendKind::Sim => {
            let host: String = host
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            cfg.results
                .join(powerlab_rundir::files::results::sim_host_lock(&host))
        }
    }
}

/// A line on stderr, prefixed with this process's rank.
fn say(rank: usize, text: &str) {
    errln!("[rank {rank}] {text}");
}

/// Finalises MPI once this is the last handle on the link, giving up after
/// `limit` (a node that never reaches finalisation).
fn finalize(run: Arc<RackRun>, limit: Duration) {
    if let Ok(Ok(link)) = Arc::try_unwrap(run).map(|r| Arc::try_unwrap(r.link)) {
        link.shutdown_within(limit);
    }
}

/// The rack's other ranks on this host (`on_host`, rank `rank`'s among
/// them): each one's process id, in words, for the preflight to set
/// aside the GPUs it holds.
fn siblings(met: &meet::Met, on_host: &[usize], rank: usize) -> Vec<(u32, String)> {
    on_host
        .iter()
        .filter(|&&r| r != rank)
        .map(|&r| {
            (
                met.pids[r],
                format!("rank {r} of this rack, {}", met.nodes[r]),
            )
        })
        .collect()
}

/// The rack run over any transport (MPI in production): the steps of the
/// module doc, each a collective every node takes part in.
///
/// # Errors
/// A rack exchange that fails (a peer gone, a garbled message) or a rack
/// directory that cannot be created; refusals are exit codes.
pub fn rack_main(cfg: &RunConfig, link: RackLink) -> Result<i32> {
    let info = link.info().clone();
    let (rank, size) = (info.rank, info.size);
    let label = node_label(rank, &info.node_name);

    // 1. Who is who; the same campaign everywhere.
    let met = match meet::meet(&link, &label, &cfg.campaign)? {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };

    // One node lock per host. The host's first rank holds it for the rack;
    // the others check, after the next exchange, that it does. Anything
    // else that wants the host (another campaign, another rack) is refused.
    let on_host = met.ranks_on_host_of(rank);
    if let Some(live) = &cfg.live {
        live.set_node_ranks(on_host.len());
    }
    let lock_path = host_lock_path(cfg, &met.hosts[rank]);
    if let Some(dir) = lock_path.parent() {
        // The simulated rack's lock lives in the results directory.
        let _ = std::fs::create_dir_all(dir);
    }
    let (_host_lock, lead_problem) = if on_host[0] == rank {
        match powerlab_runner::lock::rack::lead(&lock_path, &met.rack_id()) {
            Ok(l) => (Some(l), None),
            Err(e) => (None, Some(e)),
        }
    } else {
        (None, None)
    };

    // 2. Clocks. The simulated node can be told its clock is off.
    let skew = cfg.sim().map(|s| s.faults.clock_offset_ns).unwrap_or(0);
    let offsets: Vec<ClockOffset> = link
        .submit(move |t| clock_offsets(t, 32, &move || realtime_ns() + skew))
        .wait()?;

    // 3. Preflight on every node, the clock included.
    let node_lock = match lead_problem {
        Some(e) => Err(e),
        None if on_host[0] != rank => {
            powerlab_runner::lock::rack::follow(&lock_path, &met.rack_id())
        }
        None => Ok(()),
    };
    let siblings = siblings(&met, &on_host, rank);
    let checked = match preflight::check(cfg, &link, &label, &offsets, &siblings, node_lock)? {
        Ok(c) => c,
        Err(code) => {
            link.shutdown();
            return Ok(code);
        }
    };

    // 4. The rack's run directory, named by rank 0; NCCL's id from rank 0.
    let root = rundir::agree_root(cfg, &link, &met.nodes, &offsets, &checked.verdicts)?;
    let nccl_world = if cfg.backend() == BackendKind::Cuda && cfg.campaign.needs_nccl() {
        nccl_world::world(&link, &checked.verdicts)?
    } else {
        None
    };

    // 5. The run.
    let run = Arc::new(RackRun {
        link: Arc::new(link),
        position: RackPosition { rank, nodes: size },
        nodes: met.nodes.clone(),
        node_dir: root
            .join(powerlab_rundir::RunFile::Nodes.name())
            .join(&label),
        exchange_timeout: Duration::from_secs(180 + 60),
        first_exchange_ns: met.first_exchange_ns,
    });
    let join = RackJoin {
        run: run.clone(),
        label,
        nccl_world,
        health: (cfg.backend() == BackendKind::Cuda).then_some(checked.health),
        siblings,
    };
    let result = match run_node(cfg, Some(join))? {
        Ok(r) => r,
        Err(code) => {
            // Every node took the same decision (the start was confirmed
            // collectively): finalise MPI if the link is idle.
            finalize(run, Duration::from_secs(5));
            return Ok(code);
        }
    };

    // 6. Collation: each node its own, then rank 0 the rack.
    finish::finish(cfg, run, &root, &result)
}
