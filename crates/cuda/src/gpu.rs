//! [`Gpu`] over an engine thread.

use crate::engine::{Cmd, EngineHandle};
use async_trait::async_trait;
use powerlab_core::hw::{
    EdgeFeed, EdgeRecord, Gpu, GpuIdentity, GpuSchedule, HwError, Readiness, RungOutcome,
};
use powerlab_core::shape::LoadKind;
use std::sync::atomic::Ordering;
use tokio::sync::oneshot;

/// A real GPU driven by its engine thread.
pub struct CudaGpu {
    pub(crate) id: GpuIdentity,
    pub(crate) engine: EngineHandle,
    /// Where the engine hands over a running window's edges.
    pub(crate) feed: Option<EdgeFeed>,
}

impl CudaGpu {
    fn gone(&self) -> HwError {
        HwError::DeviceFailed {
            gpu: self.id.uuid.clone(),
            detail: "the GPU's engine thread ended (CUDA error or panic); see the log".into(),
        }
    }

    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Cmd) -> Result<T, HwError> {
        let (tx, rx) = oneshot::channel();
        self.engine.tx.send(make(tx)).map_err(|_| self.gone())?;
        rx.await.map_err(|_| self.gone())
    }
}

impl Drop for CudaGpu {
    fn drop(&mut self) {
        // Never leave a GPU loaded: tell the engine to stop. No panics here.
        self.engine.stop.store(true, Ordering::Relaxed);
    }
}

#[async_trait]
impl Gpu for CudaGpu {
    fn identity(&self) -> &GpuIdentity {
        &self.id
    }

    async fn prepare(
        &mut self,
        warmup_ns: i64,
        warm_load: Option<LoadKind>,
    ) -> Result<Readiness, HwError> {
        self.ask(|reply| Cmd::Prepare {
            warmup_ns,
            load: warm_load,
            reply,
        })
        .await?
    }

    async fn run(&mut self, schedule: &GpuSchedule) -> Result<RungOutcome, HwError> {
        let schedule = schedule.clone();
        let feed = self.feed.clone();
        self.ask(|reply| Cmd::Run {
            schedule,
            feed,
            reply,
        })
        .await?
    }

    async fn stop(&mut self) -> Result<(), HwError> {
        self.engine.stop.store(true, Ordering::Relaxed);
        self.ask(|reply| Cmd::Stop { reply }).await
    }

    async fn stopped_edges(&mut self) -> Vec<EdgeRecord> {
        self.ask(|reply| Cmd::StoppedEdges { reply })
            .await
            .unwrap_or_default()
    }

    fn set_edge_feed(&mut self, feed: EdgeFeed) {
        self.feed = Some(feed);
    }
}
