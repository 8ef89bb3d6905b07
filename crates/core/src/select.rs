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

    /// The selected GPUs' positions among the visible ones (given by
    /// UUID, in their order), in the selector's order. `node` names the
    /// node in messages ("the simulated node", "CUDA").
    ///
    /// # Errors
    /// An index beyond the visible GPUs, a UUID none of them has, or one
    /// GPU selected twice (by its index and by its UUID, say): it would be
    /// driven and summed twice.
    pub fn resolve(&self, uuids: &[String], node: &str) -> Result<Vec<usize>, String> {
        let refs = match self {
            GpuSelector::All => return Ok((0..uuids.len()).collect()),
            GpuSelector::List(refs) => refs,
        };
        let mut picked: Vec<usize> = Vec::with_capacity(refs.len());
        for r in refs {
            let at = match r {
                GpuRef::Index(i) if (*i as usize) < uuids.len() => *i as usize,
                GpuRef::Index(i) => {
                    return Err(format!(
                        "the campaign selects GPU index {i}, but {node} has {} visible GPU(s)",
                        uuids.len()
                    ));
                }
                GpuRef::Uuid(u) => uuids
                    .iter()
                    .position(|v| v == u)
                    .ok_or_else(|| format!("no GPU visible on {node} has UUID {u}"))?,
            };
            if picked.contains(&at) {
                return Err(format!(
                    "the campaign selects GPU {at} ({}) twice (by index and by UUID?): list each GPU once",
                    uuids[at]
                ));
            }
            picked.push(at);
        }
        Ok(picked)
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

    #[test]
    fn resolving_names_what_is_missing_and_refuses_a_gpu_twice() {
        let visible: Vec<String> = ["GPU-a", "GPU-b", "GPU-c"].map(String::from).to_vec();
        assert_eq!(GpuSelector::All.resolve(&visible, "n"), Ok(vec![0, 1, 2]));
        let pick = GpuSelector::List(vec![GpuRef::Uuid("GPU-c".into()), GpuRef::Index(0)]);
        assert_eq!(pick.resolve(&visible, "n"), Ok(vec![2, 0]));
        let e = GpuSelector::List(vec![GpuRef::Index(3)])
            .resolve(&visible, "node x")
            .unwrap_err();
        assert!(e.contains("index 3") && e.contains("node x has 3"), "{e}");
        let e = GpuSelector::List(vec![GpuRef::Uuid("GPU-z".into())])
            .resolve(&visible, "n")
            .unwrap_err();
        assert!(e.contains("GPU-z"), "{e}");
        let twice = GpuSelector::List(vec![GpuRef::Index(1), GpuRef::Uuid("GPU-b".into())]);
        let e = twice.resolve(&visible, "n").unwrap_err();
        assert!(e.contains("GPU-b") && e.contains("twice"), "{e}");
    }
}
