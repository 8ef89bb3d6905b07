//! Signals during a run: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and
//! SIGUSR2 each stop the run the way Ctrl-C does (load off, samples
//! flushed, the manifest says why), through the run's stop reason.

use powerlab_runner::{StopLatch, StopReason};

/// Watches for the stopping signals; the first one raises the run's stop reason.
pub fn spawn_signal_handlers(abort: StopLatch) {
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        // SIGHUP (a dropped ssh session), SIGQUIT, SIGUSR1 and SIGUSR2 stop a run the
        // way SIGTERM does: load off, samples flushed, the manifest says why.
        let mut streams = Vec::new();
        for (signo, name) in [
            (libc::SIGTERM, "SIGTERM received"),
            (
                libc::SIGHUP,
                "SIGHUP received (the terminal or ssh session went away; run under tmux or nohup to survive that)",
            ),
            (libc::SIGQUIT, "SIGQUIT received"),
            (libc::SIGUSR1, "SIGUSR1 received"),
            (libc::SIGUSR2, "SIGUSR2 received"),
        ] {
            match signal(SignalKind::from_raw(signo)) {
                Ok(s) => streams.push((s, signo, name)),
                Err(e) => tracing::warn!("cannot watch for {name}: {e}"),
            }
        }
        let any = first_signal(streams);
        let (signo, reason) = tokio::select! {
            _ = tokio::signal::ctrl_c() => (libc::SIGINT, "SIGINT (Ctrl-C) received"),
            first = any => first,
        };
        // The exit code says which signal stopped the run (128 + N).
        crate::exit::STOP_SIGNAL.store(signo, std::sync::atomic::Ordering::Relaxed);
        powerlab_runner::rack::SIGNAL_SEEN.store(true, std::sync::atomic::Ordering::Relaxed);
        // Under mpirun / srun a SIGTERM usually means another rank failed.
        let reason = if powerlab_rack::launcher::detect_from_process()
            .is_some_and(|l| l.world_size > 1)
        {
            format!(
                "{reason} (under a launcher: it ends every rank when one fails or is killed; its own message names that rank)"
            )
        } else {
            reason.to_string()
        };
        abort.raise(StopReason::Interrupted(reason));
    });
}

/// Waits for the first of several signal streams; returns its number and name.
async fn first_signal(
    mut streams: Vec<(tokio::signal::unix::Signal, i32, &'static str)>,
) -> (i32, &'static str) {
    if streams.is_empty() {
        return std::future::pending().await;
    }
    std::future::poll_fn(|cx| {
        for (s, signo, name) in streams.iter_mut() {
            if s.poll_recv(cx).is_ready() {
                return std::task::Poll::Ready((*signo, *name));
            }
        }
        std::task::Poll::Pending
    })
    .await
}
