//! Markdown reports: `report.md` of a node run ([`run`], with its title in
//! [`headline`], its rung tables in [`rungs`], its sensor section in
//! [`sensor`] and its NCCL sections in [`nccl`]) and of a rack run
//! ([`rack`]), the verdict plots above both answers ([`verdict`]), and the table cells they share ([`cells`]), and
//! `compare.md` ([`compare`]).

pub mod answer;
pub mod answer_grid;
pub mod baseline;
pub mod cells;
pub mod compare;
pub mod envelope;
pub mod grid;
pub mod headline;
pub mod lifecycle;
pub mod mitigation;
pub mod nccl;
pub mod node_power;
pub mod per_gpu;
pub mod rack;
pub mod run;
pub mod rungs;
pub mod sensor;
pub mod soak;
pub mod tables;
pub mod verdict;
pub mod workload;

use crate::report::{Report, Scope};
use powerlab_samples::error::CollateError;
use std::path::{Path, PathBuf};

/// `report.md` of a node or a rack.
pub struct Markdown;

impl super::Exporter for Markdown {
    fn export(&self, report: &Report, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
        let path = match &report.scope {
            Scope::Node(n) => {
                let tables = run::Tables {
                    rungs: &report.rungs,
                    repeats: &report.repeats,
                    compare: &report.compare,
                    envelope: &report.envelope,
                    grid: &report.grid,
                    mitigation: &n.mitigation,
                    nccl: &n.nccl,
                    fabric: &n.fabric,
                    sensor: &n.sensor,
                    raw_problems: &n.raw_problems,
                    raw_end_ns: n.raw_end_ns,
                    node_power: (&n.node_power.facts, &n.node_power.rungs),
                    per_gpu: &n.per_gpu,
                    soak: &n.soak.rows,
                    workload: &n.workload.rows,
                    lifecycle: (n.lifecycle_moments > 0)
                        .then_some((n.lifecycle.as_slice(), n.lifecycle_refused.as_slice())),
                };
                run::write_report(&report.run, &tables, n.raw_rows, dir)?
            }
            Scope::Rack(r) => {
                let reused = r
                    .node_reports
                    .iter()
                    .filter(|n| {
                        matches!(
                            n,
                            crate::rack::tables::NodeReport::Reused
                                | crate::rack::tables::NodeReport::ReusedRawArchived
                        )
                    })
                    .count();
                rack::write_rack_report(
                    &r.path,
                    &rack::RackTables {
                        nodes: &r.nodes,
                        hosts: &r.hosts,
                        starts: &r.starts,
                        reused,
                        recollated: r.node_reports.len() - reused,
                        node_power: &r.node_power,
                        envelope: &report.envelope,
                        grid: &report.grid,
                    },
                    &report.rungs,
                    &report.compare,
                    dir,
                )?
            }
        };
        Ok(vec![path])
    }
}
