//! `preflight` and `health-diff`.

use crate::cli::{HealthDiffArgs, PreflightArgs};
use anyhow::{Context, Result};
use powerlab_health::{HealthReport, probe::probe, report, run_checks};

/// Probes the node and judges it; read-only. `own` are GPU processes that
/// belong to this run (a rack's other ranks on this host, with who they
/// are): named in the evidence, not counted as foreign.
pub fn capture(phase: &str, needs_nccl: bool, own: &[(u32, String)]) -> HealthReport {
    let mut facts = probe();
    facts.set_aside_processes(own);
    run_checks(&facts, phase, needs_nccl)
}

/// The simulated node's preflight: the facts of a healthy H200 node of `n`
/// GPUs with the node faults applied (`--sim-fault node:cuda_init=802`,
/// `node:fabric=…`, `node:no_nccl`) and each GPU's power smoothing
/// (`gpuN:power_smoothing=on`; not supported by default), judged by the
/// same checks as a real node.
pub fn sim_capture(
    n: usize,
    faults: &powerlab_sim::FaultPlan,
    host: &str,
    needs_nccl: bool,
) -> HealthReport {
    let mut f = powerlab_health::NodeFacts::healthy_h200(n as u32);
    f.host = host.to_string();
    if let Some(code) = faults.cuda_init_error {
        f.cuda_init = Err((
            code,
            format!("simulated (--sim-fault node:cuda_init={code})"),
        ));
    }
    if let Some(state) = &faults.fabric_state {
        for g in &mut f.gpus {
            if let Some(fabric) = &mut g.fabric {
                fabric.state = state.clone();
            }
        }
    }
    for (i, g) in f.gpus.iter_mut().enumerate() {
        g.power_smoothing = faults.gpu(i).power_smoothing_state();
    }
    if faults.no_nccl {
        for l in f.libs.iter_mut().filter(|l| l.name == "libnccl") {
            l.found = None;
            l.error = Some("not installed on the simulated node (--sim-fault node:no_nccl)".into());
        }
    }
    run_checks(&f, "idle", needs_nccl)
}

pub fn preflight(a: &PreflightArgs) -> Result<i32> {
    let campaign = match &a.campaign {
        Some(f) => Some(powerlab_campaign::load_file(f).map_err(|e| anyhow::anyhow!("{e}"))?),
        None => None,
    };
    if let Some(c) = &campaign {
        let given = crate::consent::Given {
            allow_programs: a.allow_programs,
            secret_files: a.secret_file.clone(),
        };
        if let Err(e) =
            crate::consent::ask(&crate::consent::needed(c, false, true), &given, "preflight")
        {
            errln!("{e}");
            return Ok(2);
        }
    }
    let t0 = std::time::Instant::now();
    let needs_nccl = a.needs_nccl || campaign.as_ref().is_some_and(|c| c.needs_nccl());
    let r = capture(a.phase.as_str(), needs_nccl, &[]);
    let sources = campaign
        .as_ref()
        .map(|c| crate::node_power::check_all(&c.node_power))
        .unwrap_or_default();
    let elapsed = t0.elapsed();
    let (json, md) = report::write(&r, &a.out, &a.stem)
        .with_context(|| format!("writing the health report into {}", a.out.display()))?;
    let sources_failed = crate::node_power::failure(&sources);
    let code = if r.failed() || sources_failed.is_some() {
        crate::exit::PREFLIGHT
    } else {
        0
    };
    if a.json {
        let mut v = serde_json::to_value(&r)?;
        if let (Some(obj), true) = (v.as_object_mut(), campaign.is_some()) {
            obj.insert("node_power".into(), serde_json::to_value(&sources)?);
        }
        outln!("{}", serde_json::to_string(&v)?);
        return Ok(code);
    }
    outln!("{}", r.headline());
    for c in &r.checks {
        outln!(
            "  {:<20} {:<8} {}",
            c.id,
            format!("{:?}", c.status).to_lowercase(),
            c.evidence.first().cloned().unwrap_or_default()
        );
    }
    for l in crate::node_power::lines(&sources) {
        outln!("{l}");
    }
    if let Some(m) = sources_failed {
        outln!("{m}");
    }
    outln!(
        "preflight took {:.2} s; wrote {} and {}",
        elapsed.as_secs_f64(),
        json.display(),
        md.display()
    );
    Ok(code)
}

pub fn health_diff(a: &HealthDiffArgs) -> Result<i32> {
    // Each file must be a health capture (`powerlab preflight`, or the
    // health.json of a run directory): anything else is refused by name.
    let read = |p: &std::path::Path| -> Result<serde_json::Value> {
        let text =
            std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
        let value: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not valid JSON", p.display()))?;
        serde_json::from_value::<powerlab_health::HealthReport>(value.clone())
            .with_context(|| format!("{} is not a health capture written by `powerlab preflight` (or a run's health.json)", p.display()))?;
        Ok(value)
    };
    // diff's convention: 0 the same, 1 they differ, 2 trouble.
    let (x, y) = match (read(&a.a), read(&a.b)) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(e), _) | (_, Err(e)) => {
            errln!("error: {e:#}");
            return Ok(2);
        }
    };
    let lines = powerlab_health::diff::diff(&x, &y);
    let code = if lines.is_empty() {
        0
    } else {
        crate::exit::DIFFERENT
    };
    if a.json {
        let v = serde_json::json!({
            "a": a.a.display().to_string(),
            "b": a.b.display().to_string(),
            "differ": lines.len(),
            "lines": lines,
        });
        outln!("{v}");
        return Ok(code);
    }
    outln!(
        "{} -> {}: {} facts differ",
        a.a.display(),
        a.b.display(),
        lines.len()
    );
    for l in lines {
        outln!("  {l}");
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test that unwraps reports its failure by panicking

    /// Issue 33 item 4: the simulated node's preflight records power
    /// smoothing per GPU: not supported by default, on where a fault says.
    #[test]
    fn sim_preflight_records_power_smoothing() {
        let faults = powerlab_sim::FaultPlan::parse(&["gpu1:power_smoothing=on@1".into()]).unwrap();
        let r = super::sim_capture(2, &faults, "sim-node-0", false);
        assert!(!r.failed(), "{}", r.headline());
        let json = serde_json::to_value(&r).unwrap();
        let gpus = &json["facts"]["gpus"];
        assert_eq!(gpus[0]["power_smoothing"]["state"], "not_supported");
        assert_eq!(gpus[0]["power_smoothing"]["code"], 3);
        assert_eq!(gpus[1]["power_smoothing"]["state"], "on");
        assert_eq!(gpus[1]["power_smoothing"]["profile"], 1);
        let md = powerlab_health::report::markdown(&r);
        assert!(
            md.contains(
                "GPU 0: power smoothing not supported (NVML return 3: NVML_ERROR_NOT_SUPPORTED)"
            ),
            "{md}"
        );
        assert!(
            md.contains("GPU 1: power smoothing on, profile 1: floor 60 % TMP, ramp up 1000 W/s, down 500 W/s, hysteresis 1000 ms"),
            "{md}"
        );
    }
}
