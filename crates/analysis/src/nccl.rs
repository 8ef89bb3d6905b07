//! The NCCL tables: bandwidth and latency of every collective and size from
//! `collectives.csv` (nccl-tests arithmetic, slowest rank), and the fabric's
//! power next to idle and sustained compute from the rung summaries.

use crate::summary::RungSummary;
use powerlab_rundir::PhaseKind;
use powerlab_rundir::RunDir;
use powerlab_rundir::collectives::read_collectives;
use powerlab_samples::error::CollateError;
use powerlab_samples::load::Run;
use serde::Serialize;
use std::collections::BTreeMap;

/// One collective at one size in one rung, over all ranks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NcclRow {
    /// Rung id.
    pub rung_id: u32,
    /// Rung label.
    pub rung: String,
    /// The collective's name as `collectives.csv` records it (`all_reduce`,
    /// for example).
    pub collective: String,
    /// Message size (nccl-tests convention), bytes.
    pub bytes: u64,
    /// Ranks in the communicator.
    pub ranks: usize,
    /// Ranks that reported this row (fewer than `ranks`: a rank's file is missing).
    pub ranks_reporting: usize,
    /// Timed iterations.
    pub iterations: u32,
    /// Time per operation on the slowest rank, µs.
    pub time_us: f64,
    /// Time per operation on the fastest rank, µs.
    pub time_min_us: f64,
    /// Algorithm bandwidth from the slowest rank, GB/s.
    pub algbw_gbs: f64,
    /// Bus bandwidth from the slowest rank, GB/s.
    pub busbw_gbs: f64,
}

/// How many ranks the NCCL phase ran on: the most any row reports, or,
/// without rows, the run's GPU count.
pub fn nccl_ranks(rows: &[NcclRow], run: &Run) -> usize {
    rows.iter()
        .map(|r| r.ranks)
        .max()
        .unwrap_or(run.manifest.backend.gpus.len())
}

/// Reads `collectives.csv` into per-(rung, collective, size) rows.
///
/// # Errors
///
/// Returns [`CollateError::RunDir`] when `collectives.csv` exists but cannot
/// be opened or a row other than a torn last one does not parse. A run
/// without the file has no rows, which is not an error.
pub fn nccl_rows(dir: &RunDir, run: &Run) -> Result<Vec<NcclRow>, CollateError> {
    let raw = read_collectives(&dir.collectives())?;
    let labels: BTreeMap<u32, String> = run
        .rungs
        .iter()
        .map(|r| (r.info.id, r.info.label.clone()))
        .collect();
    let mut groups: BTreeMap<(u32, String, u64), Vec<powerlab_core::CollectiveTiming>> =
        BTreeMap::new();
    for row in &raw {
        if let Some(t) = row.timing() {
            groups
                .entry((row.rung_id, row.collective.clone(), row.bytes))
                .or_default()
                .push(t);
        }
    }
    let mut out = Vec::new();
    for ((rung_id, collective, bytes), ts) in groups {
        // nccl-tests reports the slowest rank: a collective is done when the last rank is.
        let Some(slow) = ts.iter().max_by(|a, b| a.time_us().total_cmp(&b.time_us())) else {
            continue;
        };
        let fast = ts.iter().map(|t| t.time_us()).fold(f64::INFINITY, f64::min);
        out.push(NcclRow {
            rung_id,
            rung: labels
                .get(&rung_id)
                .cloned()
                .unwrap_or_else(|| format!("rung {rung_id}")),
            collective,
            bytes,
            ranks: slow.ranks,
            ranks_reporting: ts.len(),
            iterations: slow.iterations,
            time_us: slow.time_us(),
            time_min_us: fast,
            algbw_gbs: slow.algbw_gbs(),
            busbw_gbs: slow.busbw_gbs(),
        });
    }
    // Report order: collective as listed in the campaign's canonical order, then size.
    let order = |c: &str| {
        powerlab_core::Collective::parse(c).map_or(usize::MAX, |c| {
            powerlab_core::Collective::ALL
                .iter()
                .position(|x| *x == c)
                .unwrap_or(usize::MAX)
        })
    };
    out.sort_by(|a, b| {
        (a.rung_id, order(&a.collective), a.bytes).cmp(&(b.rung_id, order(&b.collective), b.bytes))
    });
    Ok(out)
}

/// Power of the fabric next to idle and compute: one row per idle,
/// sustained and NCCL rung.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FabricPowerRow {
    /// Rung label.
    pub rung: String,
    /// The rung's kind: `idle`, `sustained` or `nccl`.
    pub kind: PhaseKind,
    /// Node mean, W.
    pub mean_w: Option<f64>,
    /// Node peak, W.
    pub peak_w: Option<f64>,
    /// Node spread (p99 − p1), W.
    pub spread_w: Option<f64>,
    /// Mean above the context-held idle rungs' mean (the state of every
    /// off-phase; the idle before any context is left out), W.
    pub above_idle_w: Option<f64>,
}

/// The fabric table from the rung summaries; none with fewer than two
/// `ranks`: one rank's collectives cross no fabric (a local copy), so its
/// "fabric power" would be a compute figure under the wrong name.
pub fn fabric_power(rungs: &[RungSummary], ranks: usize) -> Vec<FabricPowerRow> {
    if ranks < 2 {
        return Vec::new();
    }
    let idle: Vec<f64> = rungs
        .iter()
        .filter(|r| r.rung.kind == PhaseKind::Idle && !r.rung.no_context)
        .filter_map(|r| r.mean_w)
        .collect();
    let idle_mean = (!idle.is_empty()).then(|| idle.iter().sum::<f64>() / idle.len() as f64);
    rungs
        .iter()
        .filter(|r| {
            matches!(
                r.rung.kind,
                PhaseKind::Idle | PhaseKind::Sustained | PhaseKind::Nccl
            )
        })
        .filter(|r| !r.rung.no_context)
        .map(|r| FabricPowerRow {
            rung: r.rung.label.clone(),
            kind: r.rung.kind,
            mean_w: r.mean_w,
            peak_w: r.peak_w,
            spread_w: r.spread_w,
            above_idle_w: r.mean_w.zip(idle_mean).map(|(m, i)| m - i),
        })
        .collect()
}
