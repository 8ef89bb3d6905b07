//! The rack's run directory: rank 0 names it (`<campaign>-<UTC>-rack<N>`),
//! every node learns the name, and rank 0 writes `rack.json` (nodes, clocks,
//! preflight verdicts, stagger, launch command) into it.

use super::preflight::NodeVerdict;
use super::{realtime_ns, say};
use crate::node::RunConfig;
use anyhow::{Result, anyhow};
use powerlab_core::units::ms_to_ns_trunc;
use powerlab_rack::protocol::gather_json;
use powerlab_rack::{ClockOffset, RackLink};
use serde::Serialize;
use std::path::PathBuf;

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

/// The rack run directory every node agrees on (created by rank 0).
pub fn agree_root(
    cfg: &RunConfig,
    link: &RackLink,
    nodes: &[String],
    offsets: &[ClockOffset],
    verdicts: &[NodeVerdict],
) -> Result<PathBuf> {
    let campaign = &cfg.campaign;
    let (rank, size) = (link.info().rank, link.info().size);
    let tolerance_ns = ms_to_ns_trunc(campaign.rack.clock_tolerance_ms);
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
        std::fs::create_dir_all(root.join(powerlab_rundir::RunFile::Nodes.name())).map_err(
            |e| {
                anyhow!(
                    "cannot create the rack run directory {}: {e}",
                    root.display()
                )
            },
        )?;
        let file = RackFile {
            campaign: &campaign.name,
            nodes: nodes.to_vec(),
            clock_tolerance_ns: tolerance_ns,
            clock_offsets: offsets,
            preflight: verdicts,
            stagger: campaign.rack.stagger.as_str(),
            launched_by: std::env::args().collect::<Vec<_>>().join(" "),
        };
        powerlab_rundir::write_json(&powerlab_rundir::RunFile::Rack.path_in(&root), &file)?;
        say(rank, &format!("rack run directory: {}", root.display()));
    }

    Ok(root)
}
