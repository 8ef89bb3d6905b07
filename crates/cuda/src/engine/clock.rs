//! The device clock against the run clock: probes of the offset between
//! `%globaltimer` and the run clock on a stream of their own, and the drift
//! prediction that carries the latest probe forward to a deadline.
//! [`ClockProbe`] holds the probe stream, its slot and the recent probes.
#![allow(unsafe_code)] // the probe is a kernel launch, unsafe FFI; the site states its invariant.

use super::Engine;
use super::setup::dev_err;
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use powerlab_core::RunClock;
use powerlab_core::hw::HwError;
use powerlab_core::units::NS_PER_S;
use std::collections::VecDeque;
use std::sync::Arc;

/// Offset probes older than this are left out of the drift fit (the
/// drift rate itself changes: 2.2 to 2.9 µs/s over minutes on an H200).
const DRIFT_SPAN_NS: i64 = 30_000_000_000;

/// What the engine knows about the device clock's offset from the run clock.
pub(super) struct ClockProbe {
    /// Probes run on their own stream so they never wait behind load.
    stream: Arc<CudaStream>,
    /// The one slot the probe's `stamp` writes.
    slot: CudaSlice<u64>,
    /// The offset of the last probe taken as a rung began or warm-up ended, ns.
    pub(super) offset_ns: i64,
    /// Recent offset probes: (run clock, device − run, round trip), ns.
    probes: VecDeque<(i64, i64, i64)>,
}

impl ClockProbe {
    /// Creates the probe stream and its slot in `ctx`; no probe taken yet.
    pub(super) fn new(ctx: &Arc<CudaContext>, gpu: &str) -> Result<ClockProbe, HwError> {
        let stream = ctx
            .new_stream()
            .map_err(|er| dev_err(gpu, "probe stream", er))?;
        let slot = stream
            .alloc_zeros::<u64>(1)
            .map_err(|er| dev_err(gpu, "allocating the probe slot", er))?;
        Ok(ClockProbe {
            stream,
            slot,
            offset_ns: 0,
            probes: VecDeque::new(),
        })
    }

    /// Device clock minus run clock, from the round trip with the least
    /// delay, and that round trip; recorded for the drift fit.
    fn measure(
        &mut self,
        clock: &RunClock,
        stamp: &CudaFunction,
        gpu: &str,
    ) -> Result<(i64, i64), HwError> {
        let mut best = (i64::MAX, 0i64, 0i64);
        for _ in 0..15 {
            let h0 = clock.now_ns();
            let mut b = self.stream.launch_builder(stamp);
            b.arg(&mut self.slot);
            // SAFETY: one thread writes one u64 into a one-element buffer.
            unsafe {
                b.launch(LaunchConfig {
                    grid_dim: (1, 1, 1),
                    block_dim: (1, 1, 1),
                    shared_mem_bytes: 0,
                })
            }
            .map_err(|e| dev_err(gpu, "stamp kernel", e))?;
            self.stream
                .synchronize()
                .map_err(|e| dev_err(gpu, "probe stream", e))?;
            let h1 = clock.now_ns();
            let gt = self
                .stream
                .clone_dtoh(&self.slot)
                .map_err(|e| dev_err(gpu, "reading the probe", e))?[0] as i64;
            if h1 - h0 < best.0 {
                best = (h1 - h0, gt - (h0 + h1) / 2, (h0 + h1) / 2);
            }
        }
        let (rtt, offset, at) = best;
        self.probes.push_back((at, offset, rtt));
        while self
            .probes
            .front()
            .is_some_and(|p| at - p.0 > DRIFT_SPAN_NS)
        {
            self.probes.pop_front();
        }
        Ok((offset, rtt))
    }

    /// The device clock's offset predicted at run-clock time `t`: the last
    /// probe, carried forward at the drift rate of a least-squares line
    /// through the recent probes (no drift until they span a second).
    pub(super) fn predicted(&self, t: i64) -> i64 {
        let Some(&(t_last, o_last, _)) = self.probes.back() else {
            return self.offset_ns;
        };
        let first = self.probes.front().map(|p| p.0).unwrap_or(t_last);
        if self.probes.len() < 2 || t_last - first < NS_PER_S {
            return o_last;
        }
        let n = self.probes.len() as f64;
        let (mt, mo) = (
            self.probes
                .iter()
                .map(|p| (p.0 - t_last) as f64)
                .sum::<f64>()
                / n,
            self.probes
                .iter()
                .map(|p| (p.1 - o_last) as f64)
                .sum::<f64>()
                / n,
        );
        let (mut sxy, mut sxx) = (0.0, 0.0);
        for p in &self.probes {
            let (x, y) = ((p.0 - t_last) as f64 - mt, (p.1 - o_last) as f64 - mo);
            sxy += x * y;
            sxx += x * x;
        }
        let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
        o_last + (slope * (t - t_last) as f64).round() as i64
    }
}

impl Engine {
    /// Probes the device clock's offset now: (offset, round trip), ns.
    pub(super) fn measure_offset(&mut self) -> Result<(i64, i64), HwError> {
        self.probe
            .measure(&self.clock, &self.dev.kernels.stamp, &self.gpu)
    }
}
