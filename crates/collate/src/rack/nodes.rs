//! Bringing a rack's node reports up to date before the rack step: a node
//! whose report is fresh (its hand-off files are there and its inputs have
//! not changed, [`crate::handoff::freshness`]) is reused; a stale one is
//! collated again, `jobs` nodes at a time. A node whose own collation fails
//! is reported, not fatal: the rack then shows it as a gap.

use crate::handoff::{Freshness, freshness};
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What became of one node's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeReport {
    /// Up to date: reused.
    Reused,
    /// Its raw files are gone (archived) and its report is intact: reused
    /// as it was.
    ReusedRawArchived,
    /// Collated again now; the text says why it was stale.
    Recollated(String),
    /// Stale, and its collation failed: the error.
    Failed(String),
}

/// Brings every node's report up to date. `force` collates every node.
/// The result is in the order of `dirs`.
pub fn refresh(dirs: &[PathBuf], force: bool, jobs: usize) -> Vec<NodeReport> {
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
                    let r = match crate::collation::collate(&dirs[*i]) {
                        Ok(_) => NodeReport::Recollated(why.clone()),
                        Err(e) => NodeReport::Failed(e.to_string()),
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
