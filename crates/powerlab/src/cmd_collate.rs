//! `collate`: a node run directory, or a rack run directory (every node's
//! directory under `nodes/`, then the rack).

use crate::cli::CollateArgs;
use anyhow::Result;

pub fn collate(a: &CollateArgs) -> Result<i32> {
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
                powerlab_collate::rack::NodeReport::Recollated(why) => format!("collated ({why})"),
                powerlab_collate::rack::NodeReport::Failed(e) => {
                    format!("its own collation failed: {e}")
                }
            };
            outln!("  {:<24} {} GPUs  {}  — {how}", n.node, n.gpus, n.status);
        }
        crate::ui::print_summary(&out.rungs);
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
