//! `collate`: a node run directory, or a rack run directory (every node's
//! directory under `nodes/`, then the rack).

use crate::cli::CollateArgs;
use anyhow::Result;

pub fn collate(a: &CollateArgs) -> Result<i32> {
    if a.run_dir.file_name().is_some_and(|n| n == "nodes")
        && a.run_dir
            .parent()
            .is_some_and(powerlab_collate::rack::is_rack_dir)
    {
        anyhow::bail!(
            "{} is the nodes/ folder of a rack run: collate the rack directory above it (or one node directory inside it)",
            a.run_dir.display()
        );
    }
    if powerlab_collate::rack::is_rack_dir(&a.run_dir) {
        let out = powerlab_collate::rack::collate_rack(
            &a.run_dir,
            powerlab_collate::rack::RackOptions {
                force: a.force,
                jobs: usize::from(a.jobs),
            },
        )?;
        outln!(
            "collated a rack of {} nodes into {}",
            out.nodes.len(),
            out.report_dir.display()
        );
        for (n, rep) in out.nodes.iter().zip(&out.node_reports) {
            let how = match rep {
                powerlab_collate::rack::NodeReport::Reused => {
                    "report up to date, reused".to_string()
                }
                powerlab_collate::rack::NodeReport::ReusedRawArchived => {
                    "report reused as it was: its raw files are not here (archived?)".to_string()
                }
                powerlab_collate::rack::NodeReport::Recollated(why) => format!("collated ({why})"),
                powerlab_collate::rack::NodeReport::Failed(e) => {
                    format!("its own collation failed: {e}")
                }
            };
            outln!("  {:<24} {} GPUs  {}  — {how}", n.node, n.gpus, n.status);
        }
        for n in out.nodes.iter().skip(out.node_reports.len()) {
            outln!("  {:<24} {}", n.node, n.status);
        }
        crate::ui::print_summary(&out.rungs);
        if !out.gaps.is_empty() {
            errln!(
                "error: the rack is incomplete: {} node(s) without a report ({}); their power is a gap in every rack figure. Fix or restore them (see the node table in {}) and collate again",
                out.gaps.len(),
                out.gaps.join(", "),
                out.report_dir.join("report.md").display()
            );
            return Ok(crate::exit::ERROR);
        }
        return Ok(0);
    }
    let out = powerlab_collate::collate_with(
        &a.run_dir,
        powerlab_collate::CollateOptions {
            snapshot: a.snapshot,
        },
    )?;
    outln!(
        "collated {} raw rows into {}",
        out.raw_rows,
        out.report_dir.display()
    );
    crate::ui::print_summary(&out.rungs);
    Ok(0)
}
