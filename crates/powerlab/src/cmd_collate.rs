//! `collate`: a node run directory, or a rack run directory (every node's
//! directory under `nodes/`, then the rack).

use crate::cli::CollateArgs;
use anyhow::Result;

pub fn collate(a: &CollateArgs) -> Result<i32> {
    if powerlab_collate::rack::is_rack_dir(&a.run_dir) {
        let out = powerlab_collate::rack::collate_rack(&a.run_dir, true)?;
        outln!(
            "collated a rack of {} nodes into {}",
            out.nodes.len(),
            out.report_dir.display()
        );
        for n in &out.nodes {
            let extra = n
                .collate_error
                .as_ref()
                .map(|e| format!(" — its own collation failed: {e}"))
                .unwrap_or_default();
            outln!("  {:<24} {} GPUs  {}{extra}", n.node, n.gpus, n.status);
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
