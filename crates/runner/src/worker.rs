//! One task per GPU, owning its [`Gpu`] and obeying the coordinator.
//! Any command in flight is abandoned when the run is stopped, and the GPU
//! is told to stop: no GPU keeps drawing power after an abort.

use crate::StopReason;
use powerlab_core::hw::{Gpu, GpuSchedule, HwError, Readiness, RungOutcome};
use powerlab_core::shape::LoadKind;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

/// A command to a worker.
pub enum WorkerCmd {
    /// Warm up (and keep warm) for the next rung.
    Prepare {
        /// Warm-up duration.
        warmup_ns: i64,
        /// Load to keep running until the rung (None for idle rungs).
        warm_load: Option<LoadKind>,
        /// Where the GPU's readiness (or its error) is sent.
        reply: oneshot::Sender<Result<Readiness, HwError>>,
    },
    /// Run one schedule.
    Run {
        /// The schedule.
        schedule: GpuSchedule,
        /// Where the rung's outcome (or its error) is sent.
        reply: oneshot::Sender<Result<RungOutcome, HwError>>,
    },
    /// Stop all load.
    Stop {
        /// Where the stop's result is sent.
        reply: oneshot::Sender<Result<(), HwError>>,
    },
    /// The edges a window cut short by the stop achieved before it.
    StoppedEdges {
        /// Where they are sent.
        reply: oneshot::Sender<Vec<powerlab_core::hw::EdgeRecord>>,
    },
    /// What became of a workload's process (the simulated node draws it).
    Job {
        /// The event.
        event: powerlab_core::job::JobEvent,
        /// Where the answer (a simulated job's exit) or the error is sent.
        reply: oneshot::Sender<Result<Option<i64>, HwError>>,
    },
    /// Round trip, to measure dispatch time.
    Ping {
        /// Answered at once, to time the round trip.
        reply: oneshot::Sender<()>,
    },
}

fn aborted() -> HwError {
    HwError::Other("stopped: the run was aborted".into())
}

/// Spawns the worker of one GPU.
pub fn spawn_worker(
    mut gpu: Box<dyn Gpu>,
    mut abort: watch::Receiver<Option<StopReason>>,
) -> (mpsc::Sender<WorkerCmd>, JoinHandle<()>) {
    let (tx, mut rx) = mpsc::channel::<WorkerCmd>(4);
    let handle = tokio::spawn(async move {
        while let Some(cmd) = rx.recv().await {
            match cmd {
                WorkerCmd::Prepare {
                    warmup_ns,
                    warm_load,
                    reply,
                } => {
                    let result = tokio::select! {
                        r = gpu.prepare(warmup_ns, warm_load) => r,
                        _ = abort.wait_for(|v| v.is_some()) => Err(aborted()),
                    };
                    if result.is_err() {
                        let _ = gpu.stop().await;
                    }
                    let _ = reply.send(result);
                }
                WorkerCmd::Run { schedule, reply } => {
                    let result = tokio::select! {
                        r = gpu.run(&schedule) => r,
                        _ = abort.wait_for(|v| v.is_some()) => Err(aborted()),
                    };
                    if result.is_err() {
                        let _ = gpu.stop().await;
                    }
                    let _ = reply.send(result);
                }
                WorkerCmd::Stop { reply } => {
                    let _ = reply.send(gpu.stop().await);
                }
                WorkerCmd::StoppedEdges { reply } => {
                    let _ = reply.send(gpu.stopped_edges().await);
                }
                WorkerCmd::Job { event, reply } => {
                    let _ = reply.send(gpu.job(event).await);
                }
                WorkerCmd::Ping { reply } => {
                    let _ = reply.send(());
                }
            }
        }
        // Channel closed: the run is over either way.
        let _ = gpu.stop().await;
    });
    (tx, handle)
}

/// Sends every worker the command `make` builds for it, then waits for
/// every answer, in worker order.
pub(crate) async fn ask_all<T: Send + 'static>(
    workers: &[mpsc::Sender<WorkerCmd>],
    make: impl Fn(usize, oneshot::Sender<T>) -> WorkerCmd,
) -> Result<Vec<T>, HwError> {
    let mut rxs = Vec::new();
    for (i, w) in workers.iter().enumerate() {
        let (tx, rx) = oneshot::channel();
        w.send(make(i, tx))
            .await
            .map_err(|_| HwError::Other(format!("worker {i} is gone")))?;
        rxs.push(rx);
    }
    let mut out = Vec::new();
    for (i, rx) in rxs.into_iter().enumerate() {
        out.push(
            rx.await
                .map_err(|_| HwError::Other(format!("worker {i} ended without answering")))?,
        );
    }
    Ok(out)
}

/// The answers of every GPU, or the first GPU's error with that GPU's key.
pub(crate) fn first_error<T>(
    results: Vec<Result<T, HwError>>,
    keys: &[String],
) -> Result<Vec<T>, (String, HwError)> {
    let mut out = Vec::new();
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Ok(v) => out.push(v),
            Err(e) => return Err((keys[i].clone(), e)),
        }
    }
    Ok(out)
}
