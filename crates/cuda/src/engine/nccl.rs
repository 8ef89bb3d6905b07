//! Collectives on the engine thread: one NCCL communicator rank per GPU
//! (cudarc's bindings), created on the first NCCL rung on the load stream.
//!
//! Every rank must issue the same collectives in the same order, so no rank
//! decides alone to stop or how much to issue: before each step the ranks
//! agree with a one-int all-reduce (min) on whether the step still fits in
//! the window and, in the fabric rung, on the batch's number of all-reduces. Every wait
//! on collective work is bounded by the rung's timeout and by the stop flag;
//! on either the communicator is aborted (which releases kernels stuck
//! waiting for a peer) and the error names the rank and the GPU.
#![allow(unsafe_code)] // the buffer fill is a kernel launch, unsafe FFI; the site states its invariant.

use super::Engine;
use super::setup::dev_err;
use cudarc::driver::{CudaEvent, CudaSlice, LaunchConfig, PushKernelArg};
use cudarc::nccl::{Comm, Id, ReduceOp};
use powerlab_core::collective::{
    Collective, CollectiveTiming, FabricSpec, SweepSpec, fabric_batch_proposal,
};
use powerlab_core::hw::HwError;
use powerlab_core::shape::LoadKind;
use powerlab_core::units::{NS_PER_MS, ms_to_ns_trunc, ns_to_s};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// This engine's place in the node's communicator.
#[derive(Debug, Clone, Copy)]
pub struct NcclRank {
    /// The unique id every rank initialises with.
    pub id: Id,
    /// This GPU's rank (its position in the run).
    pub rank: usize,
    /// Ranks in the communicator.
    pub ranks: usize,
}

/// Device buffers of one NCCL rung.
pub(super) struct Buffers {
    send: CudaSlice<f32>,
    recv: CudaSlice<f32>,
    flag: CudaSlice<i32>,
}

impl Engine {
    fn rank_desc(&self) -> String {
        match self.cfg.nccl {
            Some(n) => format!(
                "rank {} of {} (GPU {}, CUDA device {})",
                n.rank, n.ranks, self.gpu, self.cfg.ordinal
            ),
            None => format!("GPU {}", self.gpu),
        }
    }

    fn nccl_err(&self, what: &str, e: impl std::fmt::Debug) -> HwError {
        HwError::DeviceFailed {
            gpu: self.gpu.clone(),
            detail: format!("NCCL {what} failed on {}: {e:?}", self.rank_desc()),
        }
    }

    /// Creates the communicator (blocks until every rank has joined).
    fn ensure_comm(&mut self) -> Result<(), HwError> {
        if self.comm.is_some() {
            return Ok(());
        }
        let Some(n) = self.cfg.nccl else {
            return Err(HwError::Missing {
                what: "NCCL (libnccl)".into(),
                detail: "the node was opened without an NCCL communicator id".into(),
                fix: "install NCCL (libnccl.so.2) and check `powerlab preflight --needs-nccl`"
                    .into(),
            });
        };
        // ncclCommInitRank uses the thread's current device: make it ours.
        self.dev
            .stream
            .context()
            .bind_to_thread()
            .map_err(|e| dev_err(&self.gpu, "binding the CUDA context", e))?;
        let comm = Comm::from_rank(self.dev.stream.clone(), n.rank, n.ranks, n.id)
            .map_err(|e| self.nccl_err("communicator init (ncclCommInitRank)", e))?;
        self.comm = Some(comm);
        Ok(())
    }

    /// Aborts the communicator: kernels stuck waiting for a peer are released.
    pub(super) fn abort_comm(&mut self) {
        if let Some(c) = self.comm.take() {
            // cudarc's Drop calls ncclCommAbort and panics if that fails;
            // never let that take the engine thread down.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(c)));
        }
    }

    /// Waits for collective work with a deadline; aborts on timeout or stop.
    fn wait_collective(
        &mut self,
        ev: &CudaEvent,
        timeout_ns: i64,
        what: &str,
    ) -> Result<(), HwError> {
        let t0 = self.clock.now_ns();
        loop {
            match ev.try_is_complete() {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(e) => {
                    self.abort_comm();
                    return Err(self.nccl_err(what, e));
                }
            }
            if self.stop.load(Ordering::Relaxed) {
                self.abort_comm();
                return Err(HwError::Other("stopped".into()));
            }
            if self.clock.now_ns() - t0 > timeout_ns {
                self.abort_comm();
                return Err(HwError::DeviceFailed {
                    gpu: self.gpu.clone(),
                    detail: format!(
                        "NCCL {what} did not complete within {:.0} s on {}; the communicator was aborted (a peer is hung or gone)",
                        ns_to_s(timeout_ns),
                        self.rank_desc()
                    ),
                });
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }

    fn alloc_buffers(&mut self, elems: usize) -> Result<Buffers, HwError> {
        let e = |w: &'static str| {
            let gpu = self.gpu.clone();
            move |er| dev_err(&gpu, w, er)
        };
        let send = self
            .dev
            .stream
            .alloc_zeros::<f32>(elems)
            .map_err(e("allocating NCCL send buffer"))?;
        let recv = self
            .dev
            .stream
            .alloc_zeros::<f32>(elems)
            .map_err(e("allocating NCCL receive buffer"))?;
        let flag = self
            .dev
            .stream
            .alloc_zeros::<i32>(1)
            .map_err(e("allocating the agreement flag"))?;
        let mut bufs = Buffers { send, recv, flag };
        let rank = self.cfg.nccl.map_or(0, |n| n.rank) as u32;
        for (buf, seed) in [
            (&mut bufs.send, 0x9e37_79b9u32 ^ rank),
            (&mut bufs.recv, 0x85eb_ca6bu32 ^ rank),
        ] {
            let n = buf.len() as u64;
            let mut b = self.dev.stream.launch_builder(&self.dev.kernels.fill);
            b.arg(buf).arg(&n).arg(&seed);
            // SAFETY: the kernel writes n floats into a buffer of n floats.
            unsafe {
                b.launch(LaunchConfig {
                    grid_dim: (self.dev.sms * 4, 1, 1),
                    block_dim: (256, 1, 1),
                    shared_mem_bytes: 0,
                })
            }
            .map_err(|er| dev_err(&self.gpu, "fill kernel", er))?;
        }
        Ok(bufs)
    }

    /// All ranks agree whether to go on: true only if every rank says so.
    fn agree(&mut self, bufs: &mut Buffers, go: bool, timeout_ns: i64) -> Result<bool, HwError> {
        Ok(self.agree_min(bufs, i32::from(go), timeout_ns)? == 1)
    }

    /// All ranks agree on one number: the smallest that any rank proposes
    /// (one all-reduce of one int). Everything the ranks must do
    /// identically — how many collectives the next batch issues, whether
    /// it runs at all — goes through here, never a rank's own timing alone.
    fn agree_min(
        &mut self,
        bufs: &mut Buffers,
        proposal: i32,
        timeout_ns: i64,
    ) -> Result<i32, HwError> {
        let v = [proposal];
        self.dev
            .stream
            .memcpy_htod(&v, &mut bufs.flag)
            .map_err(|e| dev_err(&self.gpu, "agreement flag", e))?;
        let Some(comm) = self.comm.as_ref() else {
            return Err(HwError::Other("no communicator".into()));
        };
        comm.all_reduce_in_place(&mut bufs.flag, &ReduceOp::Min)
            .map_err(|e| self.nccl_err("agreement all_reduce", e))?;
        let ev = self
            .dev
            .stream
            .record_event(None)
            .map_err(|e| dev_err(&self.gpu, "event", e))?;
        self.wait_collective(&ev, timeout_ns, "agreement all_reduce")?;
        let out = self
            .dev
            .stream
            .clone_dtoh(&bufs.flag)
            .map_err(|e| dev_err(&self.gpu, "reading the agreement", e))?;
        out.first().copied().ok_or_else(|| {
            HwError::Other(format!(
                "the agreement all_reduce returned nothing on {}",
                self.rank_desc()
            ))
        })
    }

    /// Enqueues `count` collectives of `bytes`.
    fn launch_ops(
        &self,
        c: Collective,
        bytes: u64,
        count: u32,
        bufs: &mut Buffers,
    ) -> Result<(), HwError> {
        let Some(comm) = self.comm.as_ref() else {
            return Err(HwError::Other("no communicator".into()));
        };
        let (s, r, _) = c.buffers(bytes, comm.world_size());
        let send = bufs.send.slice(0..s);
        let mut recv = bufs.recv.slice_mut(0..r);
        for _ in 0..count {
            let res = match c {
                Collective::AllReduce => comm.all_reduce(&send, &mut recv, &ReduceOp::Sum),
                Collective::AllGather => comm.all_gather(&send, &mut recv),
                Collective::ReduceScatter => comm.reduce_scatter(&send, &mut recv, &ReduceOp::Sum),
                Collective::Broadcast => comm.broadcast(Some(&send), &mut recv, 0),
            };
            res.map_err(|e| self.nccl_err(c.as_str(), e))?;
        }
        Ok(())
    }

    fn timed_ops(
        &mut self,
        c: Collective,
        bytes: u64,
        count: u32,
        bufs: &mut Buffers,
        timeout_ns: i64,
    ) -> Result<i64, HwError> {
        let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let e0 = self
            .dev
            .stream
            .record_event(timing)
            .map_err(|e| dev_err(&self.gpu, "event", e))?;
        self.launch_ops(c, bytes, count, bufs)?;
        let e1 = self
            .dev
            .stream
            .record_event(timing)
            .map_err(|e| dev_err(&self.gpu, "event", e))?;
        self.wait_collective(&e1, timeout_ns, &format!("{} of {bytes} bytes", c.as_str()))?;
        let ms = e0
            .elapsed_ms(&e1)
            .map_err(|e| dev_err(&self.gpu, "event timing", e))?;
        Ok(ms_to_ns_trunc(f64::from(ms)))
    }

    /// The sweep: every collective at every size that fits in the window.
    pub(super) fn sweep(
        &mut self,
        spec: &SweepSpec,
        start_ns: i64,
        end_ns: i64,
    ) -> Result<Vec<CollectiveTiming>, HwError> {
        self.ensure_comm()?;
        let ranks = self.cfg.nccl.map_or(1, |n| n.ranks);
        let elems = spec
            .collectives
            .iter()
            .flat_map(|c| spec.sizes.iter().map(move |&b| c.buffers(b, ranks)))
            .map(|(s, r, _)| s.max(r))
            .max()
            .unwrap_or(1);
        let mut bufs = self.alloc_buffers(elems)?;
        // The first agreement waits behind the rung's start spin.
        let first_timeout = spec.timeout_ns + (start_ns - self.clock.now_ns()).max(0);
        let mut out = Vec::new();
        'all: for &c in &spec.collectives {
            let mut last: Option<(u64, i64)> = None;
            for &size in &spec.sizes {
                let (_, _, moved) = c.buffers(size, ranks);
                let est_op = last.map_or(NS_PER_MS, |(b, ns)| {
                    (ns as f64 * (moved as f64 / b as f64).max(1.0)) as i64
                });
                let est = est_op * i64::from(spec.warmup_iters + spec.iterations);
                let timeout = if out.is_empty() {
                    first_timeout
                } else {
                    spec.timeout_ns
                };
                let fits = self.clock.now_ns().max(start_ns) + est < end_ns;
                if !self.agree(&mut bufs, fits, timeout)? {
                    break 'all;
                }
                self.launch_ops(c, size, spec.warmup_iters, &mut bufs)?;
                let elapsed_ns =
                    self.timed_ops(c, size, spec.iterations, &mut bufs, spec.timeout_ns)?;
                out.push(CollectiveTiming {
                    collective: c,
                    bytes: moved,
                    ranks,
                    iterations: spec.iterations,
                    elapsed_ns,
                    ended_ns: self.clock.now_ns(),
                });
                last = Some((moved, elapsed_ns / i64::from(spec.iterations.max(1))));
            }
        }
        Ok(out)
    }

    /// Back-to-back all-reduces (or compute bursts each followed by one) until the window ends.
    pub(super) fn fabric(
        &mut self,
        spec: &FabricSpec,
        start_ns: i64,
        end_ns: i64,
    ) -> Result<Vec<CollectiveTiming>, HwError> {
        self.ensure_comm()?;
        let ranks = self.cfg.nccl.map_or(1, |n| n.ranks);
        let (s, r, moved) = Collective::AllReduce.buffers(spec.bytes, ranks);
        let mut bufs = self.alloc_buffers(s.max(r))?;
        let mut op_ns: i64 = 5_000_000;
        let (mut total_ns, mut total_ops) = (0i64, 0u32);
        let mut first = true;
        loop {
            let count = fabric_batch_proposal(op_ns, spec.compute_ns.is_some());
            let step_ns = op_ns * i64::from(count) + spec.compute_ns.unwrap_or(0);
            let fits = self.clock.now_ns().max(start_ns) + step_ns <= end_ns + step_ns / 2;
            let timeout = if first {
                spec.timeout_ns + (start_ns - self.clock.now_ns()).max(0)
            } else {
                spec.timeout_ns
            };
            first = false;
            // Each rank proposes its batch from its own op time; the batch
            // issued is the smallest proposal (0: some rank's window is over),
            // so every rank issues the same number of all-reduces.
            let proposal = if fits { count as i32 } else { 0 };
            let agreed = self.agree_min(&mut bufs, proposal, timeout)?;
            if agreed <= 0 {
                break;
            }
            let count = agreed as u32;
            if let Some(compute_ns) = spec.compute_ns {
                // The burst: duty-size GEMMs on the same stream, so the
                // all-reduce starts when the compute ends, as in training.
                let chunks = (compute_ns / self.pace.chunk_ns.max(1000)).max(1);
                for _ in 0..chunks {
                    self.launch_unit(true, LoadKind::Virus)?;
                }
            }
            let ns = self.timed_ops(
                Collective::AllReduce,
                spec.bytes,
                count,
                &mut bufs,
                spec.timeout_ns,
            )?;
            op_ns = (ns / i64::from(count)).max(1000);
            total_ns += ns;
            total_ops += count;
        }
        if spec.compute_ns.is_some() || total_ops == 0 {
            return Ok(Vec::new());
        }
        Ok(vec![CollectiveTiming {
            collective: Collective::AllReduce,
            bytes: moved,
            ranks,
            iterations: total_ops,
            elapsed_ns: total_ns,
            ended_ns: self.clock.now_ns(),
        }])
    }
}
