//! The finish of a node run: a calibrated sensor model kept beside the raw data,
//! the collation (outside any async runtime: polars runs its own), the
//! summary printed, and the outcome mapped to an exit code.

use super::RunConfig;
use anyhow::Result;
use powerlab_rundir::{RunFile, RunStatus};
use powerlab_runner::RunResult;

/// Collates (outside any async runtime: polars runs its own) and maps the
/// outcome to an exit code.
pub fn finish(cfg: &RunConfig, outcome: Result<RunResult, i32>) -> Result<i32> {
    let result = match outcome {
        Ok(r) => r,
        Err(code) => return Ok(code),
    };
    let collated = if cfg.no_collate {
        None
    } else {
        // The run's own collation waits for a snapshot taken as it ended
        // (`collate --snapshot`), then replaces that snapshot's report.
        Some(powerlab_collate::collate_with(
            &result.run_dir,
            powerlab_collate::CollateOptions {
                wait_for_lock: Some(std::time::Duration::from_secs(600)),
                ..Default::default()
            },
        ))
    };
    if let Some(Ok(out)) = &collated {
        // A run that calibrated itself keeps its sensor model beside its raw data.
        if out.sensor.model.kind == powerlab_analysis::sensor::ModelKind::Calibrated {
            let to = RunFile::SensorModel.path_in(&result.run_dir);
            if let Err(e) = powerlab_rundir::write_json(&to, &out.sensor.model) {
                errln!("error: keeping the calibrated sensor model beside the raw data: {e}");
            }
            if !cfg.json {
                outln!("sensor model: {}", to.display());
                for g in &out.sensor.model.gpus {
                    for p in &g.paths {
                        let f = |v: Option<f64>| {
                            v.map(|v| format!("{v:.1}")).unwrap_or_else(|| "–".into())
                        };
                        outln!(
                            "  {} {:<11} update {:>7} ms  window {:>7} ms  latency {:>6} ms",
                            g.gpu,
                            p.instrument,
                            f(p.update_period_ms),
                            f(p.window_ms),
                            f(p.latency_ms)
                        );
                    }
                }
            }
        }
    }
    match &collated {
        Some(Ok(out)) if !cfg.json => crate::ui::print_summary(&out.rungs, &out.verdicts),
        Some(Err(e)) => errln!("error: collating {} failed: {e}", result.run_dir.display()),
        _ => {}
    }
    if !cfg.json {
        outln!("run directory: {}", result.run_dir.display());
    }
    let code = match &result.status {
        RunStatus::Complete => {
            if matches!(collated, Some(Err(_))) {
                crate::exit::ERROR
            } else {
                0
            }
        }
        RunStatus::Interrupted { .. } => crate::exit::interrupted(),
        RunStatus::Failed { .. } | RunStatus::Running => crate::exit::RUN_FAILED,
    };
    Ok(code)
}
