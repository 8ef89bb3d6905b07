//! One campaign at a time per node: an exclusive lock file naming its holder.

use powerlab_rundir::lock::{Held, LockError, try_hold};
use std::path::{Path, PathBuf};

/// A held node lock; released when dropped.
pub type NodeLock = Held;

/// Default lock path (`$POWERLAB_LOCK`, else the temp dir).
pub fn default_lock_path() -> PathBuf {
    std::env::var_os("POWERLAB_LOCK")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join(powerlab_rundir::files::results::NODE_LOCK))
}

/// Takes the lock or says who holds it.
///
/// # Errors
/// The lock is held by another process (the message names its holder and
/// the lock file), or the lock file cannot be created or locked.
pub fn acquire(path: &Path, holder: &str) -> Result<NodeLock, String> {
    match try_hold(path, &format!("running {holder}")) {
        Ok(h) => Ok(h),
        Err(LockError::Busy { path, holder }) => Err(format!(
            "another campaign is running on this node: the node lock {} is held by {holder}; wait for that campaign to end (or stop it) before starting another",
            path.display()
        )),
        Err(e @ LockError::Io { .. }) => Err(e.to_string()),
    }
}

/// The node lock of a rack's ranks that share one host: the host's lowest
/// rank holds it for the whole rack (its holder text names the rack), and
/// every other rank of that rack on the host checks that it does.
pub mod rack {
    use super::{LockError, NodeLock, try_hold};
    use std::path::Path;

    /// The lowest rank on the host takes the lock for the rack `rack_id`.
    ///
    /// # Errors
    /// Another campaign holds the lock (named), or it cannot be opened.
    pub fn lead(path: &Path, rack_id: &str) -> Result<NodeLock, String> {
        super::acquire(path, &format!("the {rack_id}"))
    }

    /// Another rank on the host checks that its rack's leader holds the lock.
    ///
    /// # Errors
    /// Nobody holds the lock (the leader did not take it), or something
    /// other than this rack does (named): the rank must not run.
    pub fn follow(path: &Path, rack_id: &str) -> Result<(), String> {
        match try_hold(path, "a check by a rack rank") {
            Ok(held) => {
                drop(held);
                Err(format!(
                    "the node lock {} is not held by this rack's first rank on this host: no rank of the {rack_id} leads here",
                    path.display()
                ))
            }
            Err(LockError::Busy { holder, .. }) if holder.contains(rack_id) => Ok(()),
            Err(LockError::Busy { holder, path }) => Err(format!(
                "another campaign is running on this node: the node lock {} is held by {holder}, not by the {rack_id}",
                path.display()
            )),
            Err(e @ LockError::Io { .. }) => Err(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn second_holder_is_refused_by_name() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("lock");
        let held = super::acquire(&p, "campaign A").unwrap();
        let err = super::acquire(&p, "campaign B").err().unwrap();
        assert!(err.contains("campaign A"), "{err}");
        drop(held);
        assert!(super::acquire(&p, "campaign B").is_ok());
    }

    #[test]
    fn ranks_of_one_rack_share_the_host_lock_and_others_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("lock");
        // Before the leader takes it, a follower is refused.
        assert!(super::rack::follow(&p, "rack A").is_err());
        let held = super::rack::lead(&p, "rack A").unwrap();
        assert!(super::rack::follow(&p, "rack A").is_ok());
        let other = super::rack::follow(&p, "rack B").unwrap_err();
        assert!(other.contains("rack A"), "{other}");
        // A single-node campaign is refused while the rack holds the host.
        assert!(super::acquire(&p, "campaign C").is_err());
        assert!(super::rack::lead(&p, "rack B").is_err());
        drop(held);
        assert!(super::acquire(&p, "campaign C").is_ok());
    }
}
