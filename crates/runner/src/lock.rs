//! One campaign at a time per node: an exclusive lock file naming its holder.

use powerlab_rundir::lock::{Held, LockError, try_hold};
use std::path::{Path, PathBuf};

/// A held node lock; released when dropped.
pub type NodeLock = Held;

/// Default lock path (`$POWERLAB_LOCK`, else the temp dir).
pub fn default_lock_path() -> PathBuf {
    std::env::var_os("POWERLAB_LOCK")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("powerlab-node.lock"))
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
}
