//! The signals that stop a command: Ctrl-C, SIGTERM (a launcher or
//! `scancel`) and SIGHUP (a dropped ssh session), watched with tokio.

use std::time::Duration;

/// The number of the first of SIGINT, SIGTERM and SIGHUP to arrive
/// (never returns if a handler cannot be installed).
pub async fn first() -> i32 {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => libc::SIGINT,
        _ = term.recv() => libc::SIGTERM,
        _ = hup.recv() => libc::SIGHUP,
    }
}

/// Waits `d`, or less if one of those signals arrives: its number, recorded
/// in `exit::STOP_SIGNAL`.
///
/// # Errors
/// The runtime that watches the signals cannot start.
pub fn wait_unless_signalled(d: Duration) -> std::io::Result<Option<i32>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let got = rt.block_on(async {
        tokio::select! {
            signo = first() => Some(signo),
            () = tokio::time::sleep(d) => None,
        }
    });
    if let Some(signo) = got {
        crate::exit::STOP_SIGNAL.store(signo, std::sync::atomic::Ordering::Relaxed);
    }
    Ok(got)
}
