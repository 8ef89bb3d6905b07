//! Which GPUs a campaign drives: all visible ones, or a list of indices and
//! UUIDs. Both backends resolve the selector against the devices they see;
//! the planner and the command line only need how many GPUs it names.

use serde::{Deserialize, Serialize};

/// Which GPUs a campaign drives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuSelector {
    /// Every GPU visible to the process.
    All,
    /// Chosen GPUs: indices into the visible set, or UUIDs.
    List(Vec<GpuRef>),
}

impl GpuSelector {
    /// How many GPUs this selects on a node where `available` are visible
    /// (a list names its own count; resolving it may still fail later).
    pub fn count(&self, available: usize) -> usize {
        match self {
            GpuSelector::All => available,
            GpuSelector::List(l) => l.len(),
        }
    }
}

/// One GPU reference in a selector.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum GpuRef {
    /// Index into the visible devices (after `CUDA_VISIBLE_DEVICES`).
    Index(u32),
    /// A UUID (`GPU-…`), the stable identity.
    Uuid(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_follows_the_selector() {
        assert_eq!(GpuSelector::All.count(8), 8);
        let two = GpuSelector::List(vec![GpuRef::Index(3), GpuRef::Uuid("GPU-x".into())]);
        assert_eq!(two.count(8), 2);
        assert_eq!(two.count(1), 2);
    }
}
