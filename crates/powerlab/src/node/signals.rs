//! Signals during a run: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and
//! SIGUSR2 each stop the run the way Ctrl-C does (load off, samples
//! flushed, the manifest says why), through the run's stop reason. The
//! same signals end `observe` and the metrics endpoint's linger.

use powerlab_runner::{StopLatch, StopReason};

/// Watches for the stopping signals; the first one raises the run's stop reason.
pub fn spawn_signal_handlers(abort: StopLatch) {
    tokio::spawn(async move {
        let (signo, reason) = first().await;
        // The exit code says which signal stopped the run (128 + N).
        crate::exit::STOP_SIGNAL.store(signo, std::sync::atomic::Ordering::Relaxed);
        powerlab_runner::rack::SIGNAL_SEEN.store(true, std::sync::atomic::Ordering::Relaxed);
        let reason = launcher_context(reason, |k| std::env::var(k).ok());
        abort.raise(StopReason::Interrupted(reason));
    });
}

/// The first stopping signal to arrive (within a tokio runtime): its
/// number and what it means. Also ends `observe` and the metrics linger.
pub async fn first() -> (i32, &'static str) {
    first_signal(listen()).await
}

/// Listens for every stopping signal from now on (within a tokio
/// runtime): a stream per signal, with its number and what it means. A
/// signal is seen only by streams that exist when it arrives.
fn listen() -> Vec<(tokio::signal::unix::Signal, i32, &'static str)> {
    use tokio::signal::unix::{SignalKind, signal};
    // SIGHUP (a dropped ssh session), SIGQUIT, SIGUSR1 and SIGUSR2 stop a run the
    // way SIGTERM does: load off, samples flushed, the manifest says why.
    let mut streams = Vec::new();
    for (signo, name) in [
        (libc::SIGINT, "SIGINT (Ctrl-C) received"),
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
    streams
}

/// Watches the stopping signals on a thread of its own and records the
/// first in `exit::STOP_SIGNAL`; returns once it listens. Started before
/// a run's runtime, it leaves no moment uncovered: once a runtime has
/// listened for a signal its default action is gone for the process, and
/// a signal that arrived after the run's runtime stopped listening and
/// before another listened would be lost (the run then collated and
/// lingered as if never told to stop).
pub fn watch_in_background(name: &str) {
    let (ready, listening) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            let streams = {
                let _inside = rt.enter();
                listen()
            };
            let _ = ready.send(());
            let (signo, _) = rt.block_on(first_signal(streams));
            crate::exit::STOP_SIGNAL.store(signo, std::sync::atomic::Ordering::Relaxed);
        });
    match spawned {
        // A watcher that cannot start its runtime says nothing: wait no longer.
        Ok(_) => drop(listening.recv_timeout(std::time::Duration::from_secs(5))),
        Err(e) => tracing::warn!("cannot watch for Ctrl-C: {e}"),
    }
}

/// The signal recorded so far (0: none).
pub fn seen() -> i32 {
    crate::exit::STOP_SIGNAL.load(std::sync::atomic::Ordering::Relaxed)
}

/// Waits `d`, or less if a stopping signal arrives (or arrived already,
/// as recorded): its number, recorded in `exit::STOP_SIGNAL`.
///
/// # Errors
/// The runtime that watches the signals cannot start.
pub fn wait_unless_signalled(d: std::time::Duration) -> std::io::Result<Option<i32>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let streams = {
        let _inside = rt.enter();
        listen()
    };
    // One that arrived before these streams listened was recorded.
    if seen() != 0 {
        return Ok(Some(seen()));
    }
    let got = rt.block_on(async {
        tokio::select! {
            (signo, _) = first_signal(streams) => Some(signo),
            () = tokio::time::sleep(d) => None,
        }
    });
    if let Some(signo) = got {
        crate::exit::STOP_SIGNAL.store(signo, std::sync::atomic::Ordering::Relaxed);
    }
    Ok(got)
}

/// A signal's reason with what it most likely means under the launcher
/// that started this process. Under mpirun a SIGTERM usually means another
/// rank failed; under Slurm it is as often `scancel` or the job's time
/// limit, so the job is named for `sacct` (a batch job of one rank included).
fn launcher_context(reason: &str, env: impl Fn(&str) -> Option<String>) -> String {
    let launch = powerlab_rack::launcher::detect(&env);
    // mpirun inside an allocation: its ranks inherit its daemons' Slurm
    // step, but mpirun is what started them.
    let by_mpirun = launch
        .as_ref()
        .is_some_and(|l| l.variable == "OMPI_COMM_WORLD_SIZE");
    let slurm_step = env("SLURM_JOB_ID").zip(env("SLURM_STEP_ID"));
    match slurm_step {
        Some((job, step)) if !by_mpirun => format!(
            "{reason} (under Slurm, job {job} step {step}: `scancel`, the job's time limit, or srun ending the step because a rank failed; the job's output or `sacct -j {job}` says which)"
        ),
        _ if launch.is_some_and(|l| l.world_size > 1) => format!(
            "{reason} (under a launcher: it ends every rank when one fails or is killed; its own message names that rank)"
        ),
        _ => reason.to_string(),
    }
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

#[cfg(test)]
mod tests {
    use super::launcher_context;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn a_signal_says_what_the_launcher_likely_meant() {
        assert_eq!(
            launcher_context("SIGTERM received", env(&[])),
            "SIGTERM received"
        );
        let ompi = launcher_context("SIGTERM received", env(&[("OMPI_COMM_WORLD_SIZE", "4")]));
        assert!(ompi.contains("when one fails or is killed"), "{ompi}");
        // srun's step, even of one rank: scancel and the time limit are named.
        let slurm = launcher_context(
            "SIGTERM received",
            env(&[
                ("SLURM_JOB_ID", "42"),
                ("SLURM_STEP_ID", "0"),
                ("SLURM_STEP_NUM_TASKS", "1"),
            ]),
        );
        assert!(
            slurm.contains("job 42 step 0")
                && slurm.contains("`scancel`, the job's time limit")
                && slurm.contains("sacct -j 42"),
            "{slurm}"
        );
        // mpirun's ranks inside an allocation: mpirun's text.
        let inside = launcher_context(
            "SIGTERM received",
            env(&[
                ("SLURM_JOB_ID", "42"),
                ("SLURM_STEP_ID", "1"),
                ("OMPI_COMM_WORLD_SIZE", "4"),
            ]),
        );
        assert!(inside.contains("when one fails or is killed"), "{inside}");
        // The batch script's shell (no step) is no launch of this process.
        let batch = launcher_context("SIGTERM received", env(&[("SLURM_JOB_ID", "42")]));
        assert_eq!(batch, "SIGTERM received");
    }
}
