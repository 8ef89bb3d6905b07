//! Markdown reports: `report.md` of a node run ([`run`], with its title in
//! [`headline`], its rung tables in [`rungs`], its sensor section in
//! [`sensor`] and its NCCL sections in [`nccl_sections`]) and of a rack run
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
pub mod meter_section;
pub mod mitigation;
pub mod nccl_sections;
pub mod per_gpu;
pub mod rack;
pub mod run;
pub mod rungs;
pub mod sensor;
pub mod soak;
pub mod tables;
pub mod verdict;
pub mod verdict_table;
pub mod workload;

use crate::report::{Report, Scope};
use powerlab_samples::error::CollateError;
use std::path::{Path, PathBuf};

/// `report.md` of a node or a rack.
pub struct Markdown;

impl super::Exporter for Markdown {
    fn export(&self, report: &Report, dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
        let path = match &report.scope {
            Scope::Node(n) => run::write_report(&run::NodeReport { report, node: n }, dir)?,
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
                        verdicts: &report.verdicts,
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
