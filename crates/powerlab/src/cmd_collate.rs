//! `collate`: a node run directory, or a rack run directory (every node's
//! directory under `nodes/`, then the rack).

use crate::cli::CollateArgs;
use anyhow::Result;

pub fn collate(a: &CollateArgs) -> Result<i32> {
    if a.run_dir
        .file_name()
        .is_some_and(|n| n == powerlab_rundir::RunFile::Nodes.name())
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
        return collate_rack(a);
    }
    let out = powerlab_collate::collate_with(
        &a.run_dir,
        powerlab_collate::CollateOptions {
            snapshot: a.snapshot,
            soak_edge_s: Some(a.soak_edge_s),
            wait_for_lock: None,
        },
    )?;
    if a.json {
        let v = serde_json::json!({
            "report_dir": out.report_dir.display().to_string(),
            "raw_rows": out.raw_rows,
            "rungs": serde_json::to_value(&out.rungs)?,
        });
        outln!("{v}");
        return Ok(0);
    }
    outln!(
        "collated {} raw rows into {}",
        out.raw_rows,
        out.report_dir.display()
    );
    crate::ui::print_summary(&out.rungs, &out.verdicts);
    Ok(0)
}

/// Collates a rack run directory (every node's, then the rack) and prints
/// what it did: exit status 0 when every node has a report, else
/// [`crate::exit::ERROR`].
fn collate_rack(a: &CollateArgs) -> Result<i32> {
    let out = powerlab_collate::rack::collate_rack(
        &a.run_dir,
        powerlab_collate::rack::RackOptions {
            force: a.force,
            jobs: usize::from(a.jobs),
            collate_node: &collate_node_apart,
        },
    )?;
    if a.json {
        let nodes: Vec<serde_json::Value> = out
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| {
                serde_json::json!({
                    "node": n.node,
                    "gpus": n.gpus,
                    "status": n.status,
                    "report": out.node_reports.get(i).map(|r| format!("{r:?}")),
                })
            })
            .collect();
        let v = serde_json::json!({
            "report_dir": out.report_dir.display().to_string(),
            "complete": out.gaps.is_empty(),
            "gaps": out.gaps,
            "nodes": nodes,
            "rungs": serde_json::to_value(&out.rungs)?,
        });
        outln!("{v}");
        return Ok(if out.gaps.is_empty() {
            0
        } else {
            crate::exit::ERROR
        });
    }
    outln!(
        "collated a rack of {} nodes into {}",
        out.nodes.len(),
        out.report_dir.display()
    );
    for (n, rep) in out.nodes.iter().zip(&out.node_reports) {
        let how = match rep {
            powerlab_collate::rack::NodeReport::Reused => "report up to date, reused".to_string(),
            powerlab_collate::rack::NodeReport::ReusedRawArchived => {
                "report reused as it was: its raw files are not here (archived?)".to_string()
            }
            powerlab_collate::rack::NodeReport::Recollated(why) => format!("collated ({why})"),
            powerlab_collate::rack::NodeReport::Failed(e) => {
                format!("its own collation failed: {e}")
            }
        };
        outln!(
            "  {:<24} {}  {}  — {how}",
            n.node,
            powerlab_core::words::gpus(n.gpus),
            n.status
        );
    }
    for n in out.nodes.iter().skip(out.node_reports.len()) {
        outln!("  {:<24} {}", n.node, n.status);
    }
    crate::ui::print_summary(&out.rungs, &out.verdicts);
    if !out.gaps.is_empty() {
        errln!(
            "error: the rack is incomplete: {} node(s) without a report ({}); their power is a gap in every rack figure. Fix or restore them (see the node table in {}) and collate again",
            out.gaps.len(),
            out.gaps.join(", "),
            out.report_dir
                .join(powerlab_rundir::ReportFile::ReportMd.file_name())
                .display()
        );
        return Ok(crate::exit::ERROR);
    }
    Ok(0)
}

/// Collates one node of a rack in a child process (this binary, `collate
/// <node>`): the memory a node's collation leaves behind is returned to the
/// system when the child ends, so collating many nodes never adds up.
fn collate_node_apart(dir: &std::path::Path) -> std::result::Result<(), String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find this program to collate {}: {e}", dir.display()))?;
    let out = std::process::Command::new(exe)
        .arg("collate")
        .arg(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .output()
        .map_err(|e| format!("cannot start the collation of {}: {e}", dir.display()))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&out.stderr);
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no message")
        .trim_start_matches("error: ")
        .to_string();
    Err(match out.status.code() {
        Some(_) => last,
        None => format!("its collation was killed ({}): {last}", out.status),
    })
}
