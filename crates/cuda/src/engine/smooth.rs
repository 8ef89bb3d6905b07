//! Power smoothing on the device: the level load and the steps of a
//! smoothed wave or a calibration staircase, each held until a deadline
//! on the device clock, as edges are.
//!
//! The level load is `burn_until` (HBM streaming and register mma.sync)
//! on a share of [`LEVEL_BLOCKS_PER_SM`] blocks per SM: level 1 is all of
//! them, level 0 is idle (`spin_until`, which draws nothing). On an H200
//! (`scripts/device/level_probe.py`, 1.5 s per step, buffered samples):
//! idle 122 W, 66 blocks 206 W, 132 blocks 300 W, 264 blocks 463 W, 528
//! blocks 554 W, 1056 blocks (8 per SM, a full SM) 673 W, against 683 W
//! for an fp16 GEMM; 1584 blocks fell back to 621 W (a second wave). What a level draws is
//! measured per GPU before the rung (the runner's calibration staircase);
//! the levels a rung runs come from that, in
//! [`powerlab_core::smoothing::DeviceSmoothing`].
//!
//! A smoothed wave keeps the work's edges: the rise is still held until
//! its deadline (by the level load of the off-phase's last step instead
//! of a spin), and the fall is still `burn_until` on every block. After a
//! rise the ramp-up's steps run before the work; after a fall the hold,
//! the ramp down and the floor are queued with the fall itself, so a host
//! late in the off-phase moves none of them.

use super::Engine;
use powerlab_core::hw::{GpuSchedule, HwError};
use powerlab_core::shape::{LoadKind, LoadShape};
use powerlab_core::smoothing::Draw;

/// Blocks per SM of the level load at level 1: a full SM (8 × 256
/// threads); four, as the fall's `burn_until` runs, reached only 79 % of
/// an H200's limit, too little for a 90 % floor.
pub(super) const LEVEL_BLOCKS_PER_SM: u32 = 8;

impl Engine {
    /// The level load's blocks at `level` (at least one above 0).
    fn blocks_for(&self, level: f64) -> u32 {
        let all = self.dev.sms * LEVEL_BLOCKS_PER_SM;
        ((level.clamp(0.0, 1.0) * f64::from(all)).round() as u32).clamp(1, all)
    }

    /// The slot the steps that are not edges write into (never read).
    pub(super) fn scratch_slot(edges: usize) -> usize {
        edges + 1
    }

    /// Queues the level load at `level` until `deadline_run_ns`, recording
    /// the moment it let go in `slot` (idle: a spin).
    pub(super) fn launch_level(
        &mut self,
        deadline_run_ns: i64,
        slot: usize,
        level: f64,
    ) -> Result<(), HwError> {
        if level <= 0.0 {
            return self.launch_spin(deadline_run_ns, slot);
        }
        let blocks = self.blocks_for(level);
        self.launch_burn_blocks(deadline_run_ns, slot, blocks)
    }

    /// Queues `steps` ((level, end offset after `from_ns`)) one after the
    /// other, writing into `scratch`.
    pub(super) fn queue_levels(
        &mut self,
        from_ns: i64,
        steps: &[(f64, i64)],
        scratch: usize,
    ) -> Result<(), HwError> {
        for &(level, end) in steps {
            self.launch_level(from_ns + end, scratch, level)?;
        }
        Ok(())
    }

    /// Runs a calibration staircase: each step held until its deadline
    /// (the work filled up to it), the last to the window's end.
    pub(super) fn run_staircase(&mut self, s: &GpuSchedule) -> Result<(), HwError> {
        let LoadShape::Staircase { steps, step_ns } = &s.shape else {
            return Ok(());
        };
        let scratch = Self::scratch_slot(1);
        if let Some(warm) = self.warm {
            self.fill_until(s.start_ns, false, warm)?;
        }
        self.warm = None;
        self.launch_spin(s.start_ns, 0)?;
        for (j, draw) in steps.iter().enumerate() {
            let end = if j + 1 == steps.len() {
                s.end_ns
            } else {
                (s.start_ns + (j as i64 + 1) * step_ns).min(s.end_ns)
            };
            match draw {
                Draw::Work => self.fill_until(end, false, LoadKind::Virus)?,
                Draw::Level(l) => {
                    // The host keeps pace: a level is queued once the one
                    // before it is about to end.
                    self.wait_to_arm(end - step_ns - super::pacing::ARM_AHEAD_NS)?;
                    self.launch_level(end, scratch, *l)?;
                }
            }
        }
        self.launch_stamp(1)
    }
}
