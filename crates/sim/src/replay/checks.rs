//! What a recording must be before it is replayed, beyond its format:
//! watts a GPU can draw ([`units`]), one value per buffered timestamp
//! ([`Recent`]), only the GPUs that took part in the job
//! ([`left_out`]), and the job's own stretch where the recording goes on
//! after it (or starts before it) at idle ([`job_stretch`]). Each was a
//! plausible wrong figure before: a recording in mW predicted 479.7 MW for
//! 1,000 GPUs (480 kW true); 30 s of a job then 60 s of idle, "mean
//! 60 kW, swing 0 W" (480 kW, 550 kW); two samples of one stamp, the last
//! one kept (958 kW against 480 kW); a GPU idle throughout, averaged in
//! (269.5 kW against 480 kW).

use super::{RecordedGpu, Row, Span, refused};
use powerlab_core::hw::{HwError, MAX_GPU_LIMIT_W};
use powerlab_core::units::NS_PER_S;
use powerlab_core::{EpochNs, Instrument};
use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;

/// The highest power reading a GPU gives, W: transients reach ~1.4 × a
/// board's limit, so three times the highest limit of any GPU.
pub const MAX_READING_W: f64 = 3.0 * MAX_GPU_LIMIT_W;

/// The lowest, W (a little below zero for a sensor's offset).
pub const MIN_READING_W: f64 = -5.0;

/// A GPU whose highest samples (its 95th percentile) stay under this
/// share of the busiest GPU's did not take part in the job.
pub const TOOK_PART_SHARE: f64 = 0.5;

/// The node's level must change by at least this much per GPU between
/// its 1 s means for a recording to hold a job and an idle stretch, W.
pub const STEP_W_PER_GPU: f64 = 100.0;

/// The shortest idle stretch before or after the job that is cut off, s
/// (shorter ones are the job's own pauses).
pub const MIN_IDLE_S: i64 = 3;

/// The shortest job stretch a recording may be cut to, s.
pub const MIN_JOB_S: i64 = 5;

/// A power reading must be watts a GPU can draw, and a limit one a GPU
/// has: anything else is a file in another unit (NVML's is mW).
pub(super) fn units(path: &Path, line: u64, row: &Row) -> Result<(), HwError> {
    let power = matches!(
        row.instrument,
        Instrument::BufferedW | Instrument::InstantW | Instrument::AverageW
    );
    if power && !(MIN_READING_W..=MAX_READING_W).contains(&row.value) {
        return Err(refused(
            path,
            Some(line),
            format!(
                "{}'s {} is {} W, outside what a GPU draws ({MIN_READING_W} to {MAX_READING_W:.0} W): the recording's power is not in watts (NVML's own unit is mW: divide by 1000), or the file is damaged",
                row.gpu,
                row.instrument.as_str(),
                row.value
            ),
        ));
    }
    if row.instrument == Instrument::PowerLimitW && row.value > MAX_GPU_LIMIT_W {
        return Err(refused(
            path,
            Some(line),
            format!(
                "{}'s power_limit_w is {} W, above any GPU's ({MAX_GPU_LIMIT_W:.0} W): the recording is not in watts (NVML's own unit is mW: divide by 1000)",
                row.gpu, row.value
            ),
        ));
    }
    Ok(())
}

/// A GPU's latest buffered samples (those within the tolerance of its
/// latest stamp), each with its line: a stamp seen twice with two values
/// is refused.
#[derive(Default)]
pub(super) struct Recent(VecDeque<(EpochNs, f64, u64)>);

impl Recent {
    /// Adds `row` (a buffered sample on `line`); refused where a sample of
    /// the same stamp with another value came before.
    pub(super) fn add(&mut self, path: &Path, line: u64, row: &Row) -> Result<(), HwError> {
        let latest = self.0.iter().map(|s| s.0).max().unwrap_or(row.ts_ns);
        let keep_from = latest.max(row.ts_ns) - 2 * super::BACKWARDS_TOLERANCE_NS;
        while self.0.front().is_some_and(|s| s.0 < keep_from) {
            self.0.pop_front();
        }
        if let Some(&(_, v, at)) = self
            .0
            .iter()
            .find(|s| s.0 == row.ts_ns && s.1.to_bits() != row.value.to_bits())
        {
            return Err(refused(
                path,
                Some(line),
                format!(
                    "{}'s buffered sample stamped {} reads {} W, where line {at} gave the same stamp {v} W: one sample cannot have two values; the file was pieced together from two recordings, or edited (keep one of the two lines)",
                    row.gpu, row.ts_ns, row.value
                ),
            ));
        }
        self.0.push_back((row.ts_ns, row.value, line));
        Ok(())
    }
}

/// The 95th percentile of a GPU's buffered samples, W.
fn p95_w(g: &RecordedGpu) -> f64 {
    let mut v: Vec<f64> = g.buffered.iter().map(|s| s.value).collect();
    v.sort_unstable_by(f64::total_cmp);
    v.get(((v.len() as f64 - 1.0) * 0.95).round() as usize)
        .copied()
        .unwrap_or(0.0)
}

/// The GPUs that did not take part in the job (their 95th percentile under
/// [`TOOK_PART_SHARE`] of the busiest GPU's), each with the words that
/// say so. Averaged in, an idle GPU took a real job's 480 kW to 269.5 kW.
pub(super) fn left_out(gpus: &[Arc<RecordedGpu>]) -> Vec<(String, String)> {
    let p95: Vec<f64> = gpus.iter().map(|g| p95_w(g)).collect();
    let Some((busiest, &most)) = p95.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)) else {
        return Vec::new();
    };
    gpus.iter()
        .zip(&p95)
        .filter(|(_, p)| **p < TOOK_PART_SHARE * most)
        .map(|(g, p)| {
            (
                g.key.clone(),
                format!(
                    "{} took no part in the job (95 % of its samples under {p:.0} W, against {most:.0} W on {}): it is left out of the recording's figures",
                    g.key, gpus[busiest].key
                ),
            )
        })
        .collect()
}

/// Each whole second of `span`: the node's mean power (the sum of every
/// GPU's mean of its buffered samples in it; None where a GPU has none).
fn second_means(gpus: &[Arc<RecordedGpu>], span: Span) -> Vec<Option<f64>> {
    let n = (span.len_ns() / NS_PER_S).max(0) as usize;
    let mut sums = vec![Some(0.0); n];
    for g in gpus {
        let mut acc = vec![(0.0, 0usize); n];
        for s in &g.buffered {
            let k = (s.ts_ns - span.start_ns).div_euclid(NS_PER_S);
            if let Some(a) = usize::try_from(k).ok().and_then(|k| acc.get_mut(k)) {
                a.0 += s.value;
                a.1 += 1;
            }
        }
        for (sum, (s, c)) in sums.iter_mut().zip(acc) {
            *sum = sum.zip((c > 0).then(|| s / c as f64)).map(|(a, b)| a + b);
        }
    }
    sums
}

/// The job's stretch of a recording whose node level steps between the
/// job and idle: None where it does not (no step of [`STEP_W_PER_GPU`]
/// per GPU between its 1 s means, or no idle stretch of [`MIN_IDLE_S`]
/// before or after the job); else the seconds above the level halfway
/// between the lowest and highest 1 s means, less a second at each end
/// (the edge), with the words that say where the job ran.
///
/// # Errors
///
/// The words for a recording whose job ran in more than one stretch, or
/// for less than [`MIN_JOB_S`]: where it ran, and what to do.
pub(super) fn job_stretch(
    gpus: &[Arc<RecordedGpu>],
    span: Span,
) -> Result<Option<(Span, String)>, String> {
    let means = second_means(gpus, span);
    let known: Vec<f64> = means.iter().flatten().copied().collect();
    let lo = known.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = known.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if known.is_empty() || hi - lo < STEP_W_PER_GPU * gpus.len() as f64 {
        return Ok(None);
    }
    let mid = 0.5 * (lo + hi);
    let on: Vec<bool> = means.iter().map(|m| m.is_some_and(|m| m >= mid)).collect();
    // Runs of seconds above the level: [first, last + 1).
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for (k, &up) in on.iter().enumerate() {
        match runs.last_mut() {
            Some(r) if up && r.1 == k => r.1 = k + 1,
            _ if up => runs.push((k, k + 1)),
            _ => {}
        }
    }
    // Pauses of the job shorter than MIN_IDLE_S join its runs.
    let mut joined: Vec<(usize, usize)> = Vec::new();
    for r in runs {
        match joined.last_mut() {
            Some(j) if (r.0 - j.1) < MIN_IDLE_S as usize => j.1 = r.1,
            _ => joined.push(r),
        }
    }
    let at = |k: usize| k as f64;
    let words: Vec<String> = joined
        .iter()
        .map(|r| format!("{:.0}–{:.0} s", at(r.0), at(r.1)))
        .collect();
    let [(a, b)] = joined.as_slice() else {
        return Err(format!(
            "its GPUs ran the job in {} stretches ({} after its start, idle between them): a recording is of one job's steady stretch; record one, or cut the file to one stretch",
            joined.len(),
            words.join(", ")
        ));
    };
    let idle_before = *a as i64;
    let idle_after = means.len() as i64 - *b as i64;
    if idle_before < MIN_IDLE_S && idle_after < MIN_IDLE_S {
        return Ok(None);
    }
    let (from, to) = (
        span.start_ns + (*a as i64 + 1) * NS_PER_S,
        span.start_ns + (*b as i64 - 1) * NS_PER_S,
    );
    if to - from < MIN_JOB_S * NS_PER_S {
        return Err(format!(
            "its GPUs ran the job for {} s only ({} after its start) and idled the rest: record at least {MIN_JOB_S} s of the job",
            b - a,
            words[0]
        ));
    }
    Ok(Some((
        Span {
            start_ns: from,
            end_ns: to.min(span.end_ns),
        },
        format!(
            "the GPUs ran the job {} after the recording's start (at {hi:.0} W against {lo:.0} W idle) and idled {idle_before} s before and {idle_after} s after it: only the job's stretch, {:.1} s, is used",
            words[0],
            (to - from) as f64 / NS_PER_S as f64
        ),
    )))
}
