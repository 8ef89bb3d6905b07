//! The GPUs' settled on and off levels of a composed cycle, and the duty
//! rungs whose on-phases drew less than the run's sustained level.

use super::{NoCycle, NodeCycle, fold};
use powerlab_core::Instrument;
use powerlab_rundir::PhaseKind;
use powerlab_samples::load::{Run, RungWindow};
use powerlab_samples::series::SeriesSet;

/// Mean of a GPU's cycle (bin centres, phase 0 at its rise) over the
/// second half of its on-phase, short of the fall: [duty/2, 0.95 duty).
pub(super) fn on_level(values: &[f64], duty: f64) -> f64 {
    mean_over(values, duty / 2.0, 0.95 * duty)
}

/// The same over the second half of its off-phase, short of the rise.
pub(super) fn off_level(values: &[f64], duty: f64) -> f64 {
    mean_over(values, (1.0 + duty) / 2.0, 1.0 - 0.05 * (1.0 - duty))
}

/// Mean of a GPU's cycle over phases [a, b), read at 256 steps a cycle.
fn mean_over(values: &[f64], a: f64, b: f64) -> f64 {
    let n = 256.0;
    let (a, b) = ((a * n) as usize, (b * n) as usize);
    let vals: Vec<f64> = (a..b.max(a + 1))
        .map(|j| fold::at_phase(values, j as f64 / n))
        .collect();
    vals.iter().sum::<f64>() / vals.len() as f64
}

/// On-phases this long (ms) settle onto what the board holds under load.
const SETTLED_ON_MS: f64 = 200.0;

/// Duty rungs whose GPUs drew less through a settled on-phase than the
/// run's last sustained (or soak) rung before them held, by more than 5 %:
/// the load did not keep the GPU busy (a host that could not feed it).
/// Returns the verdict per rung.
pub fn short_on_phases(
    run: &Run,
    series: &SeriesSet,
    cycles: &std::collections::HashMap<u32, Result<NodeCycle, NoCycle>>,
) -> std::collections::HashMap<u32, String> {
    let mut out = std::collections::HashMap::new();
    let sustained: Vec<&RungWindow> = run
        .rungs
        .iter()
        .filter(|r| r.info.kind == PhaseKind::Sustained || r.info.kind == PhaseKind::Soak)
        .collect();
    // A workload rung's iteration is the user's job, not a load the
    // harness fed: its draw is what it is.
    for r in run.rungs.iter().filter(|r| r.info.kind == PhaseKind::Duty) {
        let Some(Ok(c)) = cycles.get(&r.info.id) else {
            continue;
        };
        if c.period_ms * r.info.duty < SETTLED_ON_MS {
            continue;
        }
        let Some(s) = sustained.iter().rev().find(|s| s.epoch_ns < r.epoch_ns) else {
            continue;
        };
        let mut short = Vec::new();
        for (gpu, on) in &c.gpu_on_w {
            let v = series.get(gpu, Instrument::BufferedW);
            let lo = v.partition_point(|x| x.0 < s.measure_from_ns);
            let hi = v.partition_point(|x| x.0 < s.end_ns);
            if hi <= lo {
                continue;
            }
            let held = v[lo..hi].iter().map(|x| x.1).sum::<f64>() / (hi - lo) as f64;
            if *on < 0.95 * held {
                short.push(format!("{gpu} {on:.0} W vs {held:.0} W sustained"));
            }
        }
        if !short.is_empty() {
            out.insert(
                r.info.id,
                format!(
                    "on-phase draw short of the sustained level: {}",
                    short.join(", ")
                ),
            );
        }
    }
    out
}
