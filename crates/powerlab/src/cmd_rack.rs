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

use crate::cli::BackendKind;
use crate::node::{RackJoin, RunConfig, run_node};
use anyhow::{Result, anyhow};
use powerlab_campaign::{Campaign, RackPosition};
use powerlab_rack::launcher::Launch;
use powerlab_rack::protocol::{clock_offsets, gather_json};
use powerlab_rack::{ClockOffset, RackLink, node_label};
use powerlab_runner::RackRun;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
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
        anyhow!(
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

/// What every node says about itself before load.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct NodeHello {
    label: String,
    campaign_hash: String,
}

/// A node's preflight verdict.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct NodeVerdict {
    node: String,
    passed: bool,
    headline: String,
    clock_offset_ns: i64,
    clock_rtt_ns: i64,
    gpus: usize,
}

/// `rack.json`.
#[derive(Debug, Clone, Serialize)]
struct RackFile<'a> {
    campaign: &'a str,
    nodes: Vec<String>,
    clock_tolerance_ns: i64,
    clock_offsets: &'a [ClockOffset],
    preflight: &'a [NodeVerdict],
    stagger: &'a str,
    launched_by: String,
}

fn campaign_hash(c: &Campaign) -> String {
    // FNV-1a over the resolved campaign: equal files give equal hashes.
    let text = serde_json::to_string(c).unwrap_or_default();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

fn realtime_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

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

/// The rack run over any transport (MPI in production).
pub fn rack_main(cfg: &RunConfig, link: RackLink) -> Result<i32> {
    let campaign = &cfg.campaign;
    let info = link.info().clone();
    let (rank, size) = (info.rank, info.size);
    let label = node_label(rank, &info.node_name);
    let t_hello = std::time::Instant::now();

    // 1. Who is who; the same campaign everywhere.
    let hello = NodeHello {
        label: label.clone(),
        campaign_hash: campaign_hash(campaign),
    };
    let hellos: Vec<NodeHello> = link.submit(move |t| gather_json(t, &hello)).wait()?;
    let first_exchange_ns = t_hello.elapsed().as_nanos() as i64;
    let nodes: Vec<String> = hellos.iter().map(|h| h.label.clone()).collect();
    if let Some((r, h)) = hellos
        .iter()
        .enumerate()
        .find(|(_, h)| h.campaign_hash != hellos[0].campaign_hash)
    {
        say(
            rank,
            &format!(
                "error: node {} (rank {r}) runs a different campaign than rank 0 (hash {} vs {}): give every node the same file",
                h.label, h.campaign_hash, hellos[0].campaign_hash
            ),
        );
        return Ok(crate::exit::ERROR);
    }
    if rank == 0 {
        say(rank, &format!("rack of {size} nodes: {}", nodes.join(", ")));
    }

    // 2. Clocks. The simulated node can be told its clock is off.
    let skew = cfg.sim().map(|s| s.faults.clock_offset_ns).unwrap_or(0);
    let offsets: Vec<ClockOffset> = link
        .submit(move |t| clock_offsets(t, 32, &move || realtime_ns() + skew))
        .wait()?;
    let tolerance_ns = (campaign.rack.clock_tolerance_ms * 1e6) as i64;

    // 3. Preflight on every node, the clock included.
    let needs_nccl = campaign.needs_nccl();
    let (health, available) = match cfg.sim() {
        Some(s) => (
            crate::cmd_preflight::sim_capture(s.gpus, &s.faults, &label, needs_nccl),
            s.gpus,
        ),
        None => {
            let facts = powerlab_health::probe::probe();
            let n = facts.cuda_uuids.len();
            (powerlab_health::run_checks(&facts, "idle", needs_nccl), n)
        }
    };
    let gpus = campaign.gpus.count(available);
    let mine = offsets[rank];
    let clock_ok = !mine.exceeds(tolerance_ns);
    let headline = if !clock_ok {
        format!(
            "FAIL cross-node clock: this node's realtime clock is {:+.3} ms from rank 0's (±{:.3} ms), beyond the campaign's {:.3} ms: synchronise clocks (chrony/PTP) before a rack run",
            mine.offset_ns as f64 / 1e6,
            mine.rtt_ns as f64 / 2e6,
            tolerance_ns as f64 / 1e6
        )
    } else {
        health.headline()
    };
    let verdict = NodeVerdict {
        node: label.clone(),
        passed: clock_ok && !health.failed(),
        headline,
        clock_offset_ns: mine.offset_ns,
        clock_rtt_ns: mine.rtt_ns,
        gpus,
    };
    let verdicts: Vec<NodeVerdict> = link.submit(move |t| gather_json(t, &verdict)).wait()?;
    let failed: Vec<&NodeVerdict> = verdicts.iter().filter(|v| !v.passed).collect();
    if !failed.is_empty() {
        let list: Vec<String> = failed
            .iter()
            .map(|v| format!("{}: {}", v.node, v.headline))
            .collect();
        if cfg.allow_unhealthy {
            say(
                rank,
                &format!(
                    "--allow-unhealthy: running anyway on an unhealthy rack: {}",
                    list.join("; ")
                ),
            );
        } else {
            say(
                rank,
                &format!(
                    "rack preflight failed on {} of {size} nodes; no load was started on any node:\n  {}",
                    failed.len(),
                    list.join("\n  ")
                ),
            );
            if rank == 0 {
                let _ = std::fs::create_dir_all(&cfg.results);
                let path = cfg.results.join("rack-preflight-failed.json");
                let _ = std::fs::write(
                    &path,
                    serde_json::to_string_pretty(&verdicts).unwrap_or_default() + "\n",
                );
            }
            let _ = powerlab_health::report::write(
                &health,
                &cfg.results,
                &format!("preflight-{label}"),
            );
            link.shutdown();
            return Ok(crate::exit::PREFLIGHT);
        }
    }

    // 4. The rack's run directory, named by rank 0.
    let proposal = (rank == 0).then(|| {
        let stamp = powerlab_rundir::layout::utc_stamp(realtime_ns());
        cfg.results
            .join(format!("{}-{stamp}-rack{size}", campaign.name))
            .display()
            .to_string()
    });
    let root: PathBuf = link
        .submit(move |t| gather_json(t, &proposal))
        .wait()?
        .into_iter()
        .next()
        .flatten()
        .map(PathBuf::from)
        .ok_or_else(|| anyhow!("rank 0 named no run directory"))?;
    if rank == 0 {
        std::fs::create_dir_all(root.join("nodes")).map_err(|e| {
            anyhow!(
                "cannot create the rack run directory {}: {e}",
                root.display()
            )
        })?;
        let file = RackFile {
            campaign: &campaign.name,
            nodes: nodes.clone(),
            clock_tolerance_ns: tolerance_ns,
            clock_offsets: &offsets,
            preflight: &verdicts,
            stagger: campaign.rack.stagger.as_str(),
            launched_by: std::env::args().collect::<Vec<_>>().join(" "),
        };
        powerlab_rundir::write_json(&powerlab_rundir::RunFile::Rack.path_in(&root), &file)?;
        say(rank, &format!("rack run directory: {}", root.display()));
    }

    // NCCL across nodes: rank 0's unique id, to every node.
    let nccl_world = if cfg.backend() == BackendKind::Cuda && needs_nccl {
        let id = if rank == 0 {
            powerlab_cuda::nccl_unique_id()
                .ok()
                .map(|id| id.iter().map(|c| *c as u8).collect::<Vec<u8>>())
        } else {
            None
        };
        let all = link.submit(move |t| gather_json(t, &id)).wait()?;
        match all.into_iter().next().flatten().filter(|b| b.len() == 128) {
            Some(bytes) => {
                let mut id = [0 as std::ffi::c_char; 128];
                for (d, b) in id.iter_mut().zip(bytes) {
                    *d = b as std::ffi::c_char;
                }
                // A node's GPUs take consecutive global ranks after those of lower ranks.
                let first_rank = verdicts[..rank].iter().map(|v| v.gpus).sum();
                Some(powerlab_cuda::NcclWorld {
                    id,
                    first_rank,
                    ranks: verdicts.iter().map(|v| v.gpus).sum(),
                })
            }
            None => None,
        }
    } else {
        None
    };

    // 5. The run.
    let exchange_timeout = Duration::from_secs(180 + 60);
    let run = Arc::new(RackRun {
        link: Arc::new(link),
        position: RackPosition { rank, nodes: size },
        nodes: nodes.clone(),
        node_dir: root.join("nodes").join(&label),
        exchange_timeout,
        first_exchange_ns,
    });
    let health = (cfg.backend() == BackendKind::Cuda).then_some(health);
    let join = RackJoin {
        run: run.clone(),
        label: label.clone(),
        nccl_world,
        health,
    };
    let outcome = run_node(cfg, Some(join))?;
    let result = match outcome {
        Ok(r) => r,
        Err(code) => {
            // Every node took the same decision (the start was confirmed
            // collectively): finalise MPI if the link is idle.
            finalize(run, Duration::from_secs(5));
            return Ok(code);
        }
    };
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

    // 6. Collation: each node its own, then rank 0 the rack. Only when the
    // rack exchange ended cleanly: otherwise the launcher may be about to
    // kill this process, and the raw data (already flushed) is what matters;
    // `powerlab collate <rack dir>` regenerates everything later.
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
            match powerlab_collate::rack::collate_rack(&root, false) {
                Ok(out) => {
                    if !cfg.json {
                        outln!(
                            "rack: {} nodes, report {}",
                            out.nodes.len(),
                            out.report_dir.join("report.md").display()
                        );
                        let f = |v: Option<f64>| {
                            v.map(|x| format!("{x:.0} W")).unwrap_or_else(|| "–".into())
                        };
                        for r in out.rungs.iter().filter(|r| r.instrument == "buffered_w") {
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
            powerlab_rundir::RunStatus::Interrupted { .. } => crate::exit::INTERRUPTED,
            _ => crate::exit::RUN_FAILED,
        }
    };
    if rank == 0 && !cfg.json {
        outln!("rack run directory: {}", root.display());
    }
    Ok(code)
}
