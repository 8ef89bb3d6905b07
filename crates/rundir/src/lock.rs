//! Advisory locks (flock) that name their holder: one campaign per node, one
//! writer per run directory, one collation per run directory at a time. A
//! lock dies with its process, so a killed run never leaves one held: its
//! file stays (naming the dead pid) and is free to the next taker. A holder
//! that ends normally removes its lock file as it lets go; a taker checks,
//! once it holds the lock, that the file it locked is still the one at the
//! path (not one removed meanwhile by the holder before it).

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// How every lock file's name ends (`.run.lock`, `.collate.lock`, ...).
pub const LOCK_SUFFIX: &str = ".lock";

/// A held lock; released when dropped (or when the process dies). Dropping
/// it removes the lock file first, while still holding it.
#[derive(Debug)]
pub struct Held {
    _file: File,
    /// The lock file.
    pub path: PathBuf,
}

impl Drop for Held {
    fn drop(&mut self) {
        // Removed while the lock is still held: a taker that opened the
        // file before this finds it gone once it gets the lock, and tries
        // again on the path (see `take`). A file that cannot be removed
        // stays, unlocked: free to the next taker, as after a crash.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// How often a taker tries again when each lock file it got was removed
/// by its holder in between.
const RETRIES: usize = 100;

/// Why a lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another live process holds it.
    #[error("{path} is held by {holder}")]
    Busy {
        /// The lock file.
        path: PathBuf,
        /// What the holder wrote into it (`pid N …`).
        holder: String,
    },
    /// The lock file cannot be opened or locked.
    #[error("cannot open the lock {path}: {source}")]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

fn open(path: &Path) -> Result<File, LockError> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|source| LockError::Io {
            path: path.to_path_buf(),
            source,
        })
}

fn holder_of(file: &mut File) -> String {
    let mut who = String::new();
    let _ = file.read_to_string(&mut who);
    if who.trim().is_empty() {
        "an unknown process".to_string()
    } else {
        who.trim().to_string()
    }
}

/// Takes the lock at `path` for `holder` (written into it with this pid),
/// or says who holds it.
///
/// # Errors
///
/// Returns [`LockError::Busy`], with what the holder wrote into the file, if
/// another live process holds the lock, and [`LockError::Io`] if the lock
/// file cannot be opened or created, or the `flock` call itself fails.
/// Failing to write this process's name into the file is not an error.
pub fn try_hold(path: &Path, holder: &str) -> Result<Held, LockError> {
    for _ in 0..RETRIES {
        if let Some(held) = take(open(path)?, path, holder)? {
            return Ok(held);
        }
    }
    Err(LockError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(format!(
            "the lock file was removed and created again {RETRIES} times while this process tried to take it; try again"
        )),
    })
}

/// Locks `file`, opened at `path`, for `holder`: None when the file is no
/// longer the one at `path` once locked (its holder removed it as it let
/// go, after this process opened it), so a lock on it guards nothing.
fn take(mut file: File, path: &Path, holder: &str) -> Result<Option<Held>, LockError> {
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(LockError::Busy {
                path: path.to_path_buf(),
                holder: holder_of(&mut file),
            });
        }
        Err(std::fs::TryLockError::Error(source)) => {
            return Err(LockError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    }
    if !still_at(&file, path) {
        return Ok(None);
    }
    let _ = file.set_len(0);
    let _ = file.rewind();
    let _ = write!(file, "pid {} {holder}", std::process::id());
    let _ = file.flush();
    Ok(Some(Held {
        _file: file,
        path: path.to_path_buf(),
    }))
}

/// Whether the open `file` is the file at `path` (same device and inode).
fn still_at(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Takes the lock at `path` for `holder`, waiting up to `limit` while
/// another live process holds it; `waiting` is called once, with the
/// holder's words, when the first try finds the lock held.
///
/// # Errors
///
/// Returns [`LockError::Busy`] if the lock is still held after `limit`, and
/// [`LockError::Io`] if the lock file cannot be opened or locked.
pub fn hold_waiting(
    path: &Path,
    holder: &str,
    limit: std::time::Duration,
    mut waiting: impl FnMut(&str),
) -> Result<Held, LockError> {
    let until = std::time::Instant::now() + limit;
    let mut told = false;
    loop {
        match try_hold(path, holder) {
            Err(LockError::Busy { holder: who, .. }) if std::time::Instant::now() < until => {
                if !told {
                    waiting(&who);
                    told = true;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            other => return other,
        }
    }
}

/// Who holds the lock at `path`, if a live process does (a missing file or
/// a lock left by a dead process is free).
pub fn holder(path: &Path) -> Option<String> {
    let mut file = std::fs::OpenOptions::new().read(true).open(path).ok()?;
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            None
        }
        Err(std::fs::TryLockError::WouldBlock) => Some(holder_of(&mut file)),
        Err(std::fs::TryLockError::Error(_)) => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_second_holder_is_refused_by_name_and_a_released_lock_is_free() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("x.lock");
        assert_eq!(super::holder(&p), None);
        let held = super::try_hold(&p, "collating").unwrap();
        match super::try_hold(&p, "another") {
            Err(super::LockError::Busy { holder, .. }) => assert!(
                holder.contains(&format!("pid {} collating", std::process::id())),
                "{holder}"
            ),
            other => panic!("expected busy, got {other:?}"),
        }
        assert!(super::holder(&p).is_some_and(|h| h.contains("collating")));
        drop(held);
        assert_eq!(super::holder(&p), None);
        assert!(super::try_hold(&p, "another").is_ok());
    }

    /// Issue 31: lock files stayed in every run directory. A holder that
    /// lets go removes its file; one left by a dead process (no flock on
    /// it) is still free to take, as before.
    #[test]
    fn a_released_lock_leaves_no_file_and_a_dead_holders_file_is_free() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join(".run.lock");
        let held = super::try_hold(&p, "writing this run").unwrap();
        assert!(p.exists());
        drop(held);
        assert!(!p.exists(), "the lock file outlived its holder");
        // What a killed holder leaves: its words, no lock.
        std::fs::write(&p, "pid 4194303 writing this run").unwrap();
        assert_eq!(super::holder(&p), None);
        let held = super::try_hold(&p, "collating").unwrap();
        assert!(super::holder(&p).is_some_and(|h| h.contains("collating")));
        drop(held);
        assert!(!p.exists());
    }

    /// A taker that opened the file before its holder removed it and let go
    /// must not count the lock on the removed file as held: another taker
    /// would create a new file at the path and hold that one too.
    #[test]
    fn a_lock_on_a_file_removed_by_its_holder_is_not_taken() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("x.lock");
        let first = super::try_hold(&p, "first").unwrap();
        let opened_early = super::open(&p).unwrap();
        drop(first);
        assert!(
            super::take(opened_early, &p, "late").unwrap().is_none(),
            "a lock on a removed file was taken"
        );
        let now = super::try_hold(&p, "second").unwrap();
        assert!(matches!(
            super::try_hold(&p, "third"),
            Err(super::LockError::Busy { .. })
        ));
        drop(now);
    }
}
