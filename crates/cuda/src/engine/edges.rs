//! Edges placed on the device clock: `spin_until` holds the load stream
//! until a rise (or a rung start), `burn_until` keeps the GPU busy until a
//! fall, and `stamp` marks the end of the load; each writes the device time
//! it let go into one of the edge slots ([`Stamps`]). Also how a constant,
//! idle or square-wave rung is queued edge by edge: each fall, the chunks
//! of the stretch before it and the next rise are queued together, between
//! one and two `ARM_AHEAD_NS` ahead of the fall.
#![allow(unsafe_code)] // the edge kernels are launched through unsafe FFI; each site states its invariant.

use super::Engine;
use super::pacing::{ARM_AHEAD_NS, MIN_FALL_TAIL_NS};
use super::setup::dev_err;
use cudarc::driver::{CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use powerlab_core::hw::{GpuSchedule, HwError};
use powerlab_core::shape::{EdgeKind, LoadKind, LoadShape};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// The device slots the edge kernels write their achieved times into, and
/// the stream they are zeroed and read on while a window runs.
///
/// Streams: the slots are written by the edge kernels on the load stream
/// and are allocated, zeroed and peeked at on `readback`, a stream of
/// their own that never waits behind load. Allocation and zeroing happen
/// only while no edge kernel is queued (a rung's start, the load stream
/// having been synchronised at the end of the one before) and are waited
/// for before any edge kernel is queued. A peek reads while kernels may
/// write: each slot is one aligned u64 written once by one thread, so it
/// reads 0 (not yet achieved) or its final value.
pub(super) struct Stamps {
    /// One u64 of `%globaltimer` per edge, plus one for the end stamp.
    slots: CudaSlice<u64>,
    /// Where the slots are allocated, zeroed and peeked at.
    readback: Arc<CudaStream>,
}

impl Stamps {
    /// Allocates 1024 slots on a readback stream of `stream`'s context.
    pub(super) fn new(stream: &Arc<CudaStream>, gpu: &str) -> Result<Stamps, HwError> {
        let readback = stream
            .context()
            .new_stream()
            .map_err(|er| dev_err(gpu, "edge readback stream", er))?;
        let slots = readback
            .alloc_zeros::<u64>(1024)
            .map_err(|er| dev_err(gpu, "allocating edge slots", er))?;
        readback
            .synchronize()
            .map_err(|er| dev_err(gpu, "allocating edge slots", er))?;
        Ok(Stamps { slots, readback })
    }

    /// Makes room for `n` slots and zeroes them (a slot still 0 has not
    /// been achieved); waits until both are done.
    pub(super) fn ready(&mut self, n: usize, gpu: &str) -> Result<(), HwError> {
        if self.slots.len() < n {
            self.slots = self
                .readback
                .alloc_zeros::<u64>(n)
                .map_err(|e| dev_err(gpu, "edge slots", e))?;
        } else {
            self.readback
                .memset_zeros(&mut self.slots)
                .map_err(|e| dev_err(gpu, "zeroing edge slots", e))?;
        }
        self.readback
            .synchronize()
            .map_err(|e| dev_err(gpu, "zeroing edge slots", e))
    }

    /// Copies the first `n` slots back to the host (waits for `stream`).
    pub(super) fn read(
        &self,
        stream: &Arc<CudaStream>,
        n: usize,
        gpu: &str,
    ) -> Result<Vec<u64>, HwError> {
        stream
            .clone_dtoh(&self.slots.slice(0..n))
            .map_err(|e| dev_err(gpu, "reading edges", e))
    }

    /// The first `n` slots as they are now, without waiting for the load
    /// stream (0: not achieved yet).
    pub(super) fn peek(&self, n: usize, gpu: &str) -> Result<Vec<u64>, HwError> {
        self.readback
            .clone_dtoh(&self.slots.slice(0..n))
            .map_err(|e| dev_err(gpu, "peeking at edges", e))
    }
}

impl Engine {
    /// Queues a `stamp` that records when the load before it ended in `slot`.
    pub(super) fn launch_stamp(&mut self, slot: usize) -> Result<(), HwError> {
        let mut view = self.stamps.slots.slice_mut(slot..slot + 1);
        let mut b = self.dev.stream.launch_builder(&self.dev.kernels.stamp);
        b.arg(&mut view);
        // SAFETY: one thread writes one u64 into a one-element view.
        unsafe {
            b.launch(LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (1, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .map_err(|e| dev_err(&self.gpu, "stamp kernel", e))?;
        self.pace.break_chain();
        Ok(())
    }

    /// Queues a `spin_until` that holds the load stream until the device
    /// clock reaches the deadline and records that moment in `slot`.
    pub(super) fn launch_spin(&mut self, deadline_run_ns: i64, slot: usize) -> Result<(), HwError> {
        let deadline_dev = (deadline_run_ns + self.probe.predicted(deadline_run_ns)).max(0) as u64;
        let mut view = self.stamps.slots.slice_mut(slot..slot + 1);
        let mut b = self.dev.stream.launch_builder(&self.dev.kernels.spin);
        b.arg(&deadline_dev).arg(&mut view);
        // SAFETY: one thread spins on the clock and writes one u64.
        unsafe {
            b.launch(LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (1, 1, 1),
                shared_mem_bytes: 0,
            })
        }
        .map_err(|e| dev_err(&self.gpu, "spin kernel", e))?;
        self.pace.break_chain();
        self.pace.predicted_end = self.pace.predicted_end.max(deadline_run_ns);
        Ok(())
    }

    /// Queues the end of an on-phase: HBM streaming and mma.sync that stop
    /// when the device clock reaches the deadline and record that moment in
    /// `slot`.
    fn launch_burn(&mut self, deadline_run_ns: i64, slot: usize) -> Result<(), HwError> {
        let all = self.dev.sms * 4;
        self.launch_burn_blocks(deadline_run_ns, slot, all)
    }

    /// [`Self::launch_burn`] on `blocks` blocks only: the level load of
    /// power smoothing (see `smooth`).
    pub(super) fn launch_burn_blocks(
        &mut self,
        deadline_run_ns: i64,
        slot: usize,
        blocks: u32,
    ) -> Result<(), HwError> {
        let deadline_dev = (deadline_run_ns + self.probe.predicted(deadline_run_ns)).max(0) as u64;
        let dev = &mut self.dev;
        let n4: u64 = (dev.hbm_src.len() / 4) as u64;
        let mut view = self.stamps.slots.slice_mut(slot..slot + 1);
        let cfg = LaunchConfig {
            grid_dim: (
                blocks.clamp(1, dev.sms * super::smooth::LEVEL_BLOCKS_PER_SM),
                1,
                1,
            ),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = dev.stream.launch_builder(&dev.kernels.burn);
        b.arg(&deadline_dev)
            .arg(&dev.hbm_src)
            .arg(&mut dev.hbm_dst)
            .arg(&n4)
            .arg(&mut view);
        // SAFETY: src and dst hold n4 float4 elements each and every index stays
        // below n4; one thread writes one u64 into a one-element view.
        unsafe { b.launch(cfg) }.map_err(|e| dev_err(&self.gpu, "burn kernel", e))?;
        self.pace.break_chain();
        self.pace.predicted_end = self.pace.predicted_end.max(deadline_run_ns);
        Ok(())
    }

    /// Queues the load of a constant, idle or square-wave rung edge by edge.
    pub(super) fn run_edges(
        &mut self,
        s: &GpuSchedule,
        edges: &[(EdgeKind, i64)],
    ) -> Result<(), HwError> {
        let load = s.shape.load().unwrap_or(LoadKind::Virus);
        let small = matches!(s.shape, LoadShape::Square { .. });
        let mut on = self.warm.is_some();
        let warm_small = false;
        // GEMM chunks stop at least this long before a fall (planned with
        // PLAN_SLACK on top); burn_until covers the rest. A chunk can take
        // 30-50 % longer than estimated when the power controller pulls the
        // clocks down (H200, 50 and 100 ms periods).
        let tail_ns = (2 * self.pace.chunk_ns).max(MIN_FALL_TAIL_NS);
        let smoothing = match &s.shape {
            LoadShape::Square { smoothing, .. } => smoothing.clone(),
            _ => None,
        };
        let scratch = Self::scratch_slot(edges.len());
        // What the off-phase holds until the next rise (the floor, or the
        // step of the ramp down the rise cuts).
        let mut held = smoothing.as_ref().map_or(0.0, |m| m.floor);
        let next_at = |i: usize| edges.get(i + 1).map_or(s.end_ns, |e| e.1);
        for (i, (kind, t)) in edges.iter().copied().enumerate() {
            if self.stop.load(Ordering::Relaxed) {
                return Err(HwError::Other("stopped".into()));
            }
            let next_on = match kind {
                EdgeKind::Start => s.shape.is_on(s.start_ns, s.start_ns),
                EdgeKind::Rise => true,
                EdgeKind::Fall => false,
            };
            if kind == EdgeKind::Fall {
                if on {
                    // Fed as it goes up to the last stretch; that stretch,
                    // the fall and the next rise are queued in one go, at
                    // least ARM_AHEAD_NS ahead, so that a host descheduled
                    // for less than that cannot move an edge.
                    self.fill_until(t - ARM_AHEAD_NS, small, load)?;
                    self.wait_to_arm(t - 2 * ARM_AHEAD_NS)?;
                    self.plan_until(t - tail_ns, load)?;
                }
                self.launch_burn(t, i)?;
                if let Some(m) = &smoothing {
                    let steps = m.off_steps(next_at(i) - t);
                    if let Some((last, head)) = steps.split_last() {
                        self.queue_levels(t, head, scratch)?;
                        held = last.0;
                    }
                }
            } else {
                if on {
                    let kind_small = if i == 0 { warm_small } else { small };
                    self.fill_until(t, kind_small, self.warm.filter(|_| i == 0).unwrap_or(load))?;
                }
                // Armed at once, also after a fall: the rise waits on the
                // device, and the host need not be on time for it.
                match (kind, &smoothing) {
                    (EdgeKind::Rise, Some(m)) => {
                        self.launch_level(t, i, held)?;
                        self.queue_levels(t, &m.on_steps(next_at(i) - t), scratch)?;
                    }
                    _ => self.launch_spin(t, i)?,
                }
                // The fall and this rise are queued: the host has the
                // off-phase to spare for handing over the edges achieved.
                if kind == EdgeKind::Rise {
                    self.feed_progress();
                }
            }
            on = next_on;
            self.warm = None;
        }
        if on {
            self.fill_until(s.end_ns, small, load)?;
        } else if smoothing.is_some() {
            self.launch_level(s.end_ns, scratch, held)?;
        }
        self.launch_stamp(edges.len())
    }
}
