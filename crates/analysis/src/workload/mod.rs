//! Workload rungs: the user's own job (a training command, or the simulated
//! job standing in for it on the simulated node). The harness does not know
//! when its iterations start, so they are found in each GPU's own buffered
//! samples, and the rung is then folded like a duty rung:
//!
//! 1. each sample placed at the centre of its averaging window (timestamp −
//!    lag − window/2, as [`crate::cycle`] places them), resampled onto an
//!    even grid over the rung's measured window ([`resample`]);
//! 2. the grid's autocorrelation: the strongest early peak between
//!    [`MIN_LAG_MS`] and [`MAX_LAG_MS`] of at least [`MIN_PEAK`] of lag 0,
//!    refined by a parabola through its three points ([`autocorr`]);
//! 3. refined on the edges the samples show: rising crossings of the
//!    mid-level (halfway between p10 and p90, re-armed only below a quarter
//!    of that range), numbered cycle by cycle and fitted with t0 + k·P by
//!    least squares ([`crossings`], [`fit`]). The period's 95 % interval is
//!    the fit's slope error, never tighter than the sample spacing over the
//!    fitted cycles; the jitter is the crossings' scatter about the fit;
//!    the on-fraction the share of each cycle above the mid-level;
//! 4. each crossing moved back by the level-crossing lag (how long the
//!    folded rise takes from a tenth of the range to the mid-level,
//!    [`lag`]) becomes a rising edge of the rung, and the rung, given the
//!    found period and on-fraction, is composed by [`crate::cycle::compose`]
//!    exactly as a duty rung: each cycle folded at its own rise (a real job
//!    jitters by 1–5 %), the sample window undone, the GPUs summed at their
//!    offsets, a bootstrap over whole cycles ([`rung`]).
//!
//! Where the autocorrelation's peak gives no steady crossings (a
//! back-to-back job's shallow steps beat with the 20 ms sampling: its peak
//! fell on two steps), the spectrum's line gives the guess instead
//! ([`spectral`]), refined on the crossings alike.
//!
//! A GPU whose draw is flat, shows no peak, too few
//! cycles or starts that stray from any steady period has no period
//! ([`NoPeriod`]): the rung keeps its sample-and-hold figures (mean, peak,
//! p90 − p10), and the report says why in words.

pub mod autocorr;
pub mod crossings;
pub mod detect;
pub mod fit;
pub mod lag;
pub mod resample;
pub mod rung;
pub mod spectral;
#[cfg(test)]
mod tests;

pub use detect::{GpuIteration, NoPeriod, find_iteration};
pub use rung::{FoundPeriod, WorkloadRung, analyse, analyse_rung};

/// The even grid the samples are read on, ms.
pub const GRID_MS: f64 = 1.0;

/// At most this many grid points (a longer window gets a coarser grid).
pub const MAX_GRID_POINTS: usize = 1 << 20;

/// The shortest period looked for, ms (a sample every 20 ms cannot show a
/// shorter one).
pub const MIN_LAG_MS: f64 = 20.0;

/// The longest period looked for, ms (and at most a third of the window).
pub const MAX_LAG_MS: f64 = 4000.0;

/// An autocorrelation peak must reach this share of lag 0.
pub const MIN_PEAK: f64 = 0.3;

/// The first peak at least this share of the highest one is the period
/// (its multiples are about as high; a bump inside an iteration is lower).
pub const EARLY_PEAK_SHARE: f64 = 0.8;

/// A period needs at least this many iterations' rising crossings.
pub const MIN_CYCLES: usize = 5;

/// A draw whose p90 − p10 is under this share of its mean is flat.
pub const FLAT_SHARE: f64 = 0.03;

/// Crossings further than this share of the period from the fit are not
/// iterations (a stray, a start-up step) and are left out of it.
pub const OUTLIER_SHARE: f64 = 0.25;

/// Starts that scatter by more than this share of the period about the
/// fit follow no steady period.
pub const MAX_JITTER_SHARE: f64 = 0.1;

/// At least this share of the window's iterations must show a crossing.
pub const MIN_CROSSING_SHARE: f64 = 0.5;

/// GPUs whose periods differ by more than this share run different jobs:
/// their node is not folded on one period.
pub const MAX_GPU_DISAGREEMENT: f64 = 0.02;
