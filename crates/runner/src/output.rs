//! A workload's output streams, each copied into a file up to
//! [`KEEP_BYTES`], the rest counted and dropped.

use std::fs::File;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The most of each output stream a run keeps, bytes; past it the run
/// stops the phase (a job that floods its output would fill the disk
/// the raw samples live on).
pub const KEEP_BYTES: u64 = 64 << 20;

/// One output stream copied into a file, the rest counted and dropped.
pub(crate) struct Tap {
    seen: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Tap {
    pub(crate) fn start(
        mut from: impl Read + Send + 'static,
        path: PathBuf,
    ) -> std::io::Result<Tap> {
        let mut file = File::create(&path)?;
        let seen = Arc::new(AtomicU64::new(0));
        let counter = seen.clone();
        let thread = std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 << 10];
            let mut kept = 0u64;
            while let Ok(n) = from.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let keep = (KEEP_BYTES.saturating_sub(kept) as usize).min(n);
                if keep > 0 && file.write_all(&buf[..keep]).is_ok() {
                    kept += keep as u64;
                }
                counter.fetch_add(n as u64, Ordering::Relaxed);
            }
            let _ = file.flush();
        });
        Ok(Tap {
            seen,
            thread: Some(thread),
        })
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.seen.load(Ordering::Relaxed)
    }

    /// Waits up to `limit` for the copy to end (its pipe closed by every
    /// holder); past it the thread is left to end with the process.
    pub(crate) async fn join_within(&mut self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while self.thread.as_ref().is_some_and(|t| !t.is_finished()) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if let Some(t) = self.thread.take_if(|t| t.is_finished()) {
            let _ = t.join();
        }
    }
}
