//! The workload part of a `workload` phase: the user's command (program
//! and arguments, no shell), its environment and directory, how it is
//! stopped (`stop`) and how long it may take to, and the simulated
//! training job that stands in for it on the simulated node (`sim`).

use super::phase_ctx::PhaseCtx;
use super::raw::RawTrainingSim;
use super::table;
use crate::ctx::Ctx;
use crate::error::CampaignError;
use crate::model::WorkloadSpec;
use powerlab_core::job::WorkloadStop;
use powerlab_core::training::{CommKind, TrainingSpec};
use powerlab_core::units::NS_PER_MS;
use toml::Spanned;

/// Seconds from SIGTERM to SIGKILL when `stop_grace_s` is absent.
pub const DEFAULT_STOP_GRACE_S: f64 = 10.0;

/// Validates the workload keys.
pub(super) fn validate(ctx: &Ctx<'_>, pc: &PhaseCtx<'_>) -> Result<WorkloadSpec, CampaignError> {
    let p = pc.p;
    let Some(command) = &p.command else {
        return Err(ctx.err(
            pc.span.clone(),
            pc.f("command"),
            "a workload phase needs the command it runs",
            Some("command = [\"python\", \"train.py\", \"--steps\", \"1000\"]"),
        ));
    };
    let words = command.get_ref();
    if words.is_empty() || words[0].trim().is_empty() {
        return Err(ctx.err(
            command.span(),
            pc.f("command"),
            "the command's program is empty",
            Some("the program first, then its arguments, each a string"),
        ));
    }
    if let Some((key, _)) = p
        .env
        .as_ref()
        .and_then(|e| e.get_ref().iter().find(|(k, _)| bad_env_name(k)))
    {
        return Err(ctx.err(
            pc.span_of(&p.env),
            pc.f("env"),
            format!("`{key}` is not a variable name"),
            Some("letters, digits and _, not starting with a digit"),
        ));
    }
    gpu_set_kept(ctx, pc, p, words, command.span())?;
    nul_free(ctx, pc, p)?;
    let iteration_ms = match &p.iteration_ms {
        None => None,
        v => Some(pc.num(ctx, v, &table::ITERATION_MS, 0.0)?),
    };
    let stop_grace_s = pc.num(
        ctx,
        &p.stop_grace_s,
        &table::STOP_GRACE_S,
        DEFAULT_STOP_GRACE_S,
    )?;
    let stop = match &p.stop {
        None => WorkloadStop::default(),
        Some(s) => WorkloadStop::parse(s.get_ref()).ok_or_else(|| {
            ctx.err(
                s.span(),
                pc.f("stop"),
                format!("unknown stop `{}`", s.get_ref()),
                Some("sigterm (SIGTERM, then SIGKILL after stop_grace_s), sigkill (SIGKILL at the window's end: a crash), exit (the command exits on its own within stop_grace_s of the window's end)"),
            )
        })?,
    };
    let sim = match &p.sim {
        None => TrainingSpec::default(),
        Some(s) => sim_job(ctx, pc, s)?,
    };
    Ok(WorkloadSpec {
        command: words.clone(),
        iteration_ms,
        env: p
            .env
            .as_ref()
            .map(|e| e.get_ref().clone())
            .unwrap_or_default(),
        cwd: p.cwd.as_ref().map(|c| c.get_ref().clone()),
        stop_grace_s,
        stop,
        sim,
    })
}

/// The variables that choose which GPUs a CUDA (or ROCm) process sees.
pub const GPU_SET_VARS: [&str; 4] = [
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
];

/// The GPUs the job sees are the campaign's: no `env` key, and no word
/// of the command (`env CUDA_VISIBLE_DEVICES=…`, a shell's `export`),
/// names a variable that chooses them.
fn gpu_set_kept(
    ctx: &Ctx<'_>,
    pc: &PhaseCtx<'_>,
    p: &super::raw::RawPhase,
    words: &[String],
    span: std::ops::Range<usize>,
) -> Result<(), CampaignError> {
    if let Some(env) = &p.env
        && let Some(key) = GPU_SET_VARS
            .iter()
            .find(|k| env.get_ref().contains_key(**k))
    {
        return Err(ctx.err(
            env.span(),
            pc.f("env"),
            format!("the harness sets the GPUs the job sees (CUDA_VISIBLE_DEVICES, to the campaign's GPUs); `{key}` would change them: choose GPUs with the campaign's `gpus`"),
            None,
        ));
    }
    // `env CUDA_VISIBLE_DEVICES=0,1,… python …`, or a shell's `export`:
    // the same widening through the command line.
    if let Some((word, key)) = words.iter().find_map(|w| {
        GPU_SET_VARS
            .iter()
            .find(|k| w.contains(**k))
            .map(|k| (w, k))
    }) {
        return Err(ctx.err(
            span,
            pc.f("command"),
            format!(
                "the command names `{key}` (in {}): the job's GPUs are the campaign's, set by the harness; choose GPUs with the campaign's `gpus`",
                crate::reach::quoted(word)
            ),
            None,
        ));
    }
    Ok(())
}

/// A NUL byte cannot be passed to a program (its arguments, environment
/// and directory are C strings): refused here, not at the rung.
fn nul_free(
    ctx: &Ctx<'_>,
    pc: &PhaseCtx<'_>,
    p: &super::raw::RawPhase,
) -> Result<(), CampaignError> {
    let has_nul = |s: &str| s.contains('\0');
    let bad = |key: &str, span: std::ops::Range<usize>| {
        Err(ctx.err(
            span,
            pc.f(key),
            "holds a NUL byte, which no program can be given",
            Some("remove the \\u0000 escape"),
        ))
    };
    if let Some(c) = &p.command
        && c.get_ref().iter().any(|w| has_nul(w))
    {
        return bad("command", c.span());
    }
    if let Some(e) = &p.env
        && e.get_ref().iter().any(|(k, v)| has_nul(k) || has_nul(v))
    {
        return bad("env", e.span());
    }
    if let Some(c) = &p.cwd
        && has_nul(c.get_ref())
    {
        return bad("cwd", c.span());
    }
    Ok(())
}

fn bad_env_name(k: &str) -> bool {
    k.is_empty()
        || k.starts_with(|c: char| c.is_ascii_digit())
        || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The simulated job of `sim = { … }`, each key held to its range.
fn sim_job(
    ctx: &Ctx<'_>,
    pc: &PhaseCtx<'_>,
    s: &Spanned<RawTrainingSim>,
) -> Result<TrainingSpec, CampaignError> {
    let r = s.get_ref();
    let d = TrainingSpec::default();
    let f = |k: &str| pc.f(&format!("sim.{k}"));
    let num = |v: &Option<Spanned<f64>>, k: &str, lo: f64, hi: f64, default: f64| {
        ctx.ranged(v, &f(k), default, (lo, hi), false)
    };
    let iteration_ms = num(
        &r.iteration_ms,
        "iteration_ms",
        1.0,
        600_000.0,
        d.iteration_ns as f64 / NS_PER_MS as f64,
    )?;
    let comm = match &r.comm {
        None => CommKind::Idle,
        Some(c) => match c.get_ref().as_str() {
            "idle" => CommKind::Idle,
            "stream" => CommKind::Stream,
            other => {
                return Err(ctx.err(
                    c.span(),
                    f("comm"),
                    format!("unknown communication kind `{other}`"),
                    Some("idle, stream"),
                ));
            }
        },
    };
    // Streaming (all-reduce buckets, HBM copies) draws about half the
    // virus's level above idle; waiting draws idle.
    let comm_default = match comm {
        CommKind::Idle => 0.0,
        CommKind::Stream => 0.45,
    };
    let seed = match &r.seed {
        None => d.seed,
        Some(v) => u64::from(ctx.count(&Some(v.clone()), &f("seed"), 1, i64::from(u32::MAX))?),
    };
    Ok(TrainingSpec {
        iteration_ns: (iteration_ms * NS_PER_MS as f64).round() as i64,
        compute_fraction: num(
            &r.compute_fraction,
            "compute_fraction",
            0.05,
            1.0,
            d.compute_fraction,
        )?,
        compute_level: num(
            &r.compute_level,
            "compute_level",
            0.05,
            1.0,
            d.compute_level,
        )?,
        comm,
        comm_level: num(&r.comm_level, "comm_level", 0.0, 1.0, comm_default)?,
        jitter_pct: num(&r.jitter_pct, "jitter_pct", 0.0, 5.0, d.jitter_pct)?,
        optimizer_ms: num(
            &r.optimizer_ms,
            "optimizer_ms",
            0.0,
            10_000.0,
            d.optimizer_ms,
        )?,
        optimizer_level: num(
            &r.optimizer_level,
            "optimizer_level",
            0.0,
            1.0,
            d.optimizer_level,
        )?,
        seed,
    })
}
