//! The disk a run of a plan needs: every file a run directory holds, each
//! estimated from the plan and the campaign's sampling (the pre-run free
//! space check and `powerlab plan` both state it).

use crate::model::Campaign;
use crate::plan::Plan;
use powerlab_core::units::{bytes_to_mb, ns_to_ms, ns_to_s};
use serde::{Deserialize, Serialize};

/// Bytes of one raw row (`ts_ns,node,gpu,instrument,value`), with room
/// for a long host name.
const RAW_ROW_BYTES: f64 = 72.0;
/// Bytes of one `edges.csv` row (`rung_id,gpu,index,kind,intended_ns,achieved_ns`).
const EDGE_ROW_BYTES: f64 = 64.0;
/// Bytes of one node power row.
const NODE_POWER_ROW_BYTES: f64 = 80.0;
/// Buffered power samples a GPU keeps per second (an H200's 20 ms period;
/// the fastest of the supported GPUs).
const BUFFERED_PER_S: f64 = 50.0;
/// Raw instruments read at the campaign's status interval (clocks,
/// temperatures, clock-event reasons, enforced limit).
const STATUS_INSTRUMENTS: f64 = 8.0;
/// Raw instruments read at the field interval (1 s average, energy counter).
const FIELD_INSTRUMENTS: f64 = 2.0;
/// Room kept beyond the estimate: the estimate times this, plus a fixed
/// 16 MiB.
const MARGIN: f64 = 1.5;
const FIXED_BYTES: f64 = 16.0 * 1024.0 * 1024.0;

/// The estimated size of each file of a run directory, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DiskEstimate {
    /// `raw/<gpu>.csv` with their indexes.
    pub raw_bytes: u64,
    /// `edges.csv` (every intended edge of every GPU) and `collectives.csv`.
    pub edges_bytes: u64,
    /// `events.jsonl`, the manifest and the health files.
    pub events_bytes: u64,
    /// `node_power.csv` (the campaign's `[[node_power]]` meters).
    pub node_power_bytes: u64,
    /// `report/` as the run's own collation writes it (the Parquet copy of
    /// the raw files, the node curve, tables and plots).
    pub report_bytes: u64,
    /// What the run needs free: the sum with a margin.
    pub needed_bytes: u64,
}

/// The disk a run of `plan` needs, file by file.
pub fn estimate(campaign: &Campaign, plan: &Plan) -> DiskEstimate {
    let s = &campaign.sampling;
    let secs = ns_to_s(plan.total_ns());
    let gpus = plan.gpu_count as f64;
    let per_s = |interval_ms: f64| 1000.0 / interval_ms.max(1.0);
    let rows_per_gpu_s = BUFFERED_PER_S
        + per_s(s.poll_interval_ms)
        + FIELD_INSTRUMENTS * per_s(s.field_interval_ms)
        + STATUS_INSTRUMENTS * per_s(s.status_interval_ms);
    let raw = secs * gpus * rows_per_gpu_s * RAW_ROW_BYTES;
    // Every edge of every GPU: a rise and a fall per period of a duty
    // rung, and the start edges of every rung.
    let edges_per_gpu: f64 = plan
        .rungs
        .iter()
        .map(|r| {
            let cycles = r
                .period_ms
                .filter(|p| p.ms() > 0.0)
                .map_or(0.0, |p| ns_to_ms(r.duration_ns) / p.ms());
            2.0 * cycles.ceil() + 4.0
        })
        .sum();
    let edges = edges_per_gpu * gpus * EDGE_ROW_BYTES;
    // Four events a rung, each listing every GPU; the monitor's notes; the
    // manifest (which holds the plan, rung by rung) twice over.
    let events = plan.rungs.len() as f64 * 4.0 * (600.0 + 160.0 * gpus)
        + secs * 200.0
        + 2.0 * plan.rungs.len() as f64 * (900.0 + 24.0 * gpus)
        + 256.0 * 1024.0;
    let node_power: f64 = campaign
        .node_power
        .iter()
        .map(|m| secs * per_s(m.interval_ms) * NODE_POWER_ROW_BYTES)
        .sum();
    let curve_rows = secs * per_s(s.grid_ms);
    let report =
        raw * 0.8 + curve_rows * (40.0 + 12.0 * gpus) + plan.rungs.len() as f64 * 64.0 * 1024.0;
    let total = raw + edges + events + node_power + report;
    DiskEstimate {
        raw_bytes: raw as u64,
        edges_bytes: edges as u64,
        events_bytes: events as u64,
        node_power_bytes: node_power as u64,
        report_bytes: report as u64,
        needed_bytes: (total * MARGIN + FIXED_BYTES) as u64,
    }
}

impl DiskEstimate {
    /// One line: the total and each part, in MB.
    pub fn describe(&self) -> String {
        let mb = |b: u64| {
            let m = bytes_to_mb(b);
            if m < 10.0 {
                format!("{m:.1}")
            } else {
                format!("{m:.0}")
            }
        };
        format!(
            "about {} MB (raw samples {} MB, edges {} MB, events {} MB, node power {} MB, report {} MB, with a margin)",
            mb(self.needed_bytes),
            mb(self.raw_bytes),
            mb(self.edges_bytes),
            mb(self.events_bytes),
            mb(self.node_power_bytes),
            mb(self.report_bytes)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_of(body: &str) -> (Campaign, Plan) {
        let c = crate::parse_str("t.toml", &format!("[campaign]\nname = \"t\"\n{body}")).unwrap();
        let p = crate::plan::expand(&c, 2, None).unwrap();
        (c, p)
    }

    /// At a 1 ms duty period the edge log outweighs the raw samples (the
    /// disk that filled in issue 31): the estimate must count it.
    #[test]
    fn the_estimate_counts_the_edges_of_fast_duty_rungs() {
        let (c, p) =
            plan_of("[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiod_ms = 1\nduration_s = 600\n");
        let e = estimate(&c, &p);
        // 600 s at 1 ms: 1.2 million edges per GPU.
        assert!(e.edges_bytes > 2 * 1_200_000 * 60, "{e:?}");
        assert!(e.edges_bytes > e.raw_bytes, "{e:?}");
        let sum =
            e.raw_bytes + e.edges_bytes + e.events_bytes + e.node_power_bytes + e.report_bytes;
        assert!(e.needed_bytes > sum, "{e:?}");
        assert!(e.describe().contains("edges"), "{}", e.describe());
    }
}
