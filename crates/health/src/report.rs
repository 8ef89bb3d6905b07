//! `health.json` and `health-report.md`.

use crate::checks::{HealthReport, Status};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Writes `<dir>/<stem>.json` and `<dir>/<stem>-report.md`.
///
/// # Errors
///
/// Returns the I/O error if `dir` cannot be created or either file cannot
/// be written; a report that fails to serialize to JSON is also returned as
/// an I/O error (of kind `Other`). If the JSON was written but the markdown
/// fails, the JSON file is left in place.
pub fn write(report: &HealthReport, dir: &Path, stem: &str) -> std::io::Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(dir)?;
    let (json, md) = powerlab_rundir::files::health_files(dir, stem);
    std::fs::write(
        &json,
        serde_json::to_string_pretty(report).map_err(std::io::Error::other)? + "\n",
    )?;
    std::fs::write(&md, markdown(report))?;
    Ok((json, md))
}

/// The human report; its first line is the verdict.
pub fn markdown(r: &HealthReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# {}", r.headline());
    let _ = writeln!(
        s,
        "\nHost `{}`, captured {}. Checks run bottom-up; a check above a broken contract is marked skipped (its evidence is still shown).\n",
        r.host, r.phase
    );
    let _ = writeln!(
        s,
        "| check | contract | status | evidence | fix |\n|---|---|---|---|---|"
    );
    for c in &r.checks {
        let status = match c.status {
            Status::Pass => "pass",
            Status::Warn => "WARN",
            Status::Fail => "**FAIL**",
            Status::Skipped => "skipped",
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            c.id,
            c.contract,
            status,
            c.evidence.join("<br>"),
            c.fix
        );
    }
    s
}
