//! The first rack step: every node says who it is and which campaign it
//! runs; a node with a different campaign stops every node, naming it.

use super::say;
use anyhow::Result;
use powerlab_campaign::Campaign;
use powerlab_rack::RackLink;
use powerlab_rack::protocol::gather_json;
use serde::{Deserialize, Serialize};

/// What every node says about itself before load.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct NodeHello {
    label: String,
    campaign_hash: String,
    host: String,
    pid: u32,
}

/// The rack as the first exchange found it.
pub struct Met {
    /// Every node's label, by rank.
    pub nodes: Vec<String>,
    /// How long the first exchange took (the launcher's start-up spread), ns.
    pub first_exchange_ns: i64,
    /// Every rank's host, by rank (several ranks may share one).
    pub hosts: Vec<String>,
    /// Every rank's process id, by rank.
    pub pids: Vec<u32>,
}

impl Met {
    /// The ranks that share `rank`'s host, `rank` included, in rank order.
    pub fn ranks_on_host_of(&self, rank: usize) -> Vec<usize> {
        (0..self.hosts.len())
            .filter(|&r| self.hosts[r] == self.hosts[rank])
            .collect()
    }

    /// The rack's identity on every host: its first rank's host and pid.
    pub fn rack_id(&self) -> String {
        format!(
            "rack of {} ranks led by {} pid {}",
            self.hosts.len(),
            self.hosts[0],
            self.pids[0]
        )
    }
}

/// A hash of the resolved campaign: equal files give equal hashes (FNV-1a).
fn campaign_hash(c: &Campaign) -> String {
    let text = serde_json::to_string(c).unwrap_or_default();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Who is who, and the same campaign everywhere (`Ok(Err(code))` if not).
pub fn meet(link: &RackLink, label: &str, campaign: &Campaign) -> Result<Result<Met, i32>> {
    let rank = link.info().rank;
    let t_hello = std::time::Instant::now();
    let hello = NodeHello {
        label: label.to_string(),
        campaign_hash: campaign_hash(campaign),
        host: link.info().node_name.clone(),
        pid: std::process::id(),
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
        return Ok(Err(crate::exit::ERROR));
    }
    if rank == 0 {
        say(
            rank,
            &format!("rack of {} nodes: {}", nodes.len(), nodes.join(", ")),
        );
    }
    Ok(Ok(Met {
        nodes,
        first_exchange_ns,
        hosts: hellos.iter().map(|h| h.host.clone()).collect(),
        pids: hellos.iter().map(|h| h.pid).collect(),
    }))
}
