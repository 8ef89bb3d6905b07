//! Bringing a rack's node reports up to date before the rack step: a node
//! whose report is fresh (its hand-off files are there and its inputs have
//! not changed, [`crate::handoff::freshness`]) is reused; a stale one is
//! collated again, `jobs` nodes at a time. A node whose own collation fails
//! is reported, not fatal: the rack then shows it as a gap.

use crate::handoff::{Freshness, freshness};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

pub use super::tables::NodeReport;

/// How a stale node is collated: its run directory in, the error's text out.
pub type NodeCollator = dyn Fn(&Path) -> Result<(), String> + Sync;

/// Collates a node in this process ([`crate::collation::collate`]).
///
/// # Errors
///
/// The collation's error, as text.
pub fn collate_here(dir: &Path) -> Result<(), String> {
    crate::collation::collate(dir)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Brings every node's report up to date with `collate` (for example
/// [`collate_here`]; the binary runs each node in a child process, so the
/// memory one node's collation leaves behind never adds up across nodes).
/// `force` collates every node. The result is in the order of `dirs`.
pub fn refresh(
    dirs: &[PathBuf],
    force: bool,
    jobs: usize,
    collate: &NodeCollator,
) -> Vec<NodeReport> {
    let stale: Vec<(usize, String)> = dirs
        .iter()
        .enumerate()
        .filter_map(|(i, d)| {
            if force {
                return Some((i, "--force".to_string()));
            }
            match freshness(d) {
                Freshness::Fresh | Freshness::RawArchived => None,
                Freshness::Stale(why) => Some((i, why)),
            }
        })
        .collect();
    let out: Mutex<Vec<NodeReport>> = Mutex::new(
        dirs.iter()
            .map(|d| {
                if !force && freshness(d) == Freshness::RawArchived {
                    NodeReport::ReusedRawArchived
                } else {
                    NodeReport::Reused
                }
            })
            .collect(),
    );
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..jobs.clamp(1, stale.len().max(1)) {
            s.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some((i, why)) = stale.get(k) else { break };
                    tracing::info!("collating node {} ({why})", dirs[*i].display());
                    let r = match collate(&dirs[*i]) {
                        Ok(()) => NodeReport::Recollated(why.clone()),
                        Err(e) => NodeReport::Failed(e),
                    };
                    if let Ok(mut v) = out.lock() {
                        v[*i] = r;
                    }
                }
            });
        }
    });
    out.into_inner().unwrap_or_else(|e| e.into_inner())
}
