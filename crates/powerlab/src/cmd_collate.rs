//! `collate`.

use crate::cli::CollateArgs;
use anyhow::Result;

pub fn collate(a: &CollateArgs) -> Result<i32> {
    let out = powerlab_collate::collate(&a.run_dir)?;
    println!("collated {} raw rows into {}", out.raw_rows, out.report_dir.display());
    crate::ui::print_summary(&out.rungs);
    Ok(0)
}
