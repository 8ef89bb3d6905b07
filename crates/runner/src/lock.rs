//! One campaign at a time per node: an exclusive lock file naming its holder.

use fs2::FileExt;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// A held node lock; released when dropped.
pub struct NodeLock {
    _file: File,
    /// Where the lock lives.
    pub path: PathBuf,
}

/// Default lock path (`$POWERLAB_LOCK`, else the temp dir).
pub fn default_lock_path() -> PathBuf {
    std::env::var_os("POWERLAB_LOCK").map(PathBuf::from).unwrap_or_else(|| std::env::temp_dir().join("powerlab-node.lock"))
}

/// Takes the lock or says who holds it.
pub fn acquire(path: &Path, holder: &str) -> Result<NodeLock, String> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| format!("cannot open the node lock {}: {e}", path.display()))?;
    if file.try_lock_exclusive().is_err() {
        let mut who = String::new();
        let _ = file.read_to_string(&mut who);
        return Err(format!(
            "the node lock {} is held by {}; wait for that campaign to end (or stop it) before starting another",
            path.display(),
            if who.trim().is_empty() { "an unknown process".to_string() } else { who.trim().to_string() }
        ));
    }
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = write!(file, "pid {} running {holder}", std::process::id());
    let _ = file.flush();
    Ok(NodeLock { _file: file, path: path.to_path_buf() })
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
