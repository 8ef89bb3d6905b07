//! The two idle baselines: the GPUs while this process held no CUDA
//! context (sampled only: their own idle, low clocks), and with the
//! context held (the state of every off-phase; the mean of every such idle
//! rung, as the "above idle" figures use it). Both are shown so that
//! nobody mistakes one for the other.

use super::cells::{code, o, text};
use powerlab_analysis::per_gpu::GpuRungRow;
use powerlab_analysis::summary::RungSummary;
use powerlab_rundir::PhaseKind;
use powerlab_samples::stats::mean;
use std::fmt::Write;

/// The two baselines' rungs: (no context, every context-held idle rung).
fn pair(rungs: &[RungSummary]) -> Option<(&RungSummary, Vec<&RungSummary>)> {
    let bare = rungs
        .iter()
        .find(|r| r.rung.kind == PhaseKind::Idle && r.rung.no_context)?;
    let held: Vec<&RungSummary> = rungs
        .iter()
        .filter(|r| r.rung.kind == PhaseKind::Idle && !r.rung.no_context)
        .collect();
    (!held.is_empty()).then_some((bare, held))
}

/// The mean of `f` over the rungs that have it.
fn mean_of(held: &[&RungSummary], f: impl Fn(&RungSummary) -> Option<f64>) -> Option<f64> {
    mean(&held.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
}

/// The GPUs' mean SM clock over these rungs.
fn sm_mean(rows: &[GpuRungRow], ids: &[u32]) -> Option<f64> {
    mean(
        &rows
            .iter()
            .filter(|r| ids.contains(&r.rung_id))
            .filter_map(|r| r.sm_clock_mhz)
            .collect::<Vec<_>>(),
    )
}

fn ids(held: &[&RungSummary]) -> Vec<u32> {
    held.iter().map(|r| r.rung.id).collect()
}

fn names(held: &[&RungSummary]) -> String {
    let v: Vec<String> = held
        .iter()
        .map(|r| format!("`{}`", code(&r.rung.label)))
        .collect();
    if v.len() > 3 {
        format!("{} idle rungs", v.len())
    } else {
        v.join(", ")
    }
}

/// The answer block's line (None without both baselines).
pub fn answer_line(rungs: &[RungSummary], per_gpu: &[GpuRungRow]) -> Option<String> {
    let (bare, held) = pair(rungs)?;
    let b = bare.mean_w?;
    let h = mean_of(&held, |r| r.mean_w)?;
    Some(format!(
        "- **Idle, two baselines:** {b:.0} W with no CUDA context of this process (`{}`, SM clock {} MHz); {h:.0} W with the context held ({}, SM clock {} MHz): {:+.0} W for holding it. Every \"above idle\" figure uses the context-held one, the state of every off-phase.",
        code(&bare.rung.label),
        o(sm_mean(per_gpu, &[bare.rung.id])),
        names(&held),
        o(sm_mean(per_gpu, &ids(&held))),
        h - b
    ))
}

/// Appends the section: node and every GPU, both baselines side by side.
pub fn write_section(s: &mut String, rungs: &[RungSummary], per_gpu: &[GpuRungRow]) {
    let Some((bare, held)) = pair(rungs) else {
        return;
    };
    let held_ids = ids(&held);
    let _ = writeln!(s, "\n## Idle baselines (GPU draw only)\n");
    let _ = writeln!(
        s,
        "`{}`: sampled while this process held no CUDA context (nothing loaded on the GPUs). Context held: {}, as in every off-phase of every rung (their mean); \"above idle\" figures use this one.\n",
        code(&bare.rung.label),
        names(&held)
    );
    let _ = writeln!(
        s,
        "| GPU | no context W | SM clock MHz | context held W | SM clock MHz | holding the context W |\n|---|---|---|---|---|---|"
    );
    for b in per_gpu.iter().filter(|r| r.rung_id == bare.rung.id) {
        let of_gpu: Vec<&GpuRungRow> = per_gpu
            .iter()
            .filter(|r| held_ids.contains(&r.rung_id) && r.gpu == b.gpu)
            .collect();
        let h = mean(&of_gpu.iter().filter_map(|r| r.mean_w).collect::<Vec<_>>());
        let h_sm = mean(
            &of_gpu
                .iter()
                .filter_map(|r| r.sm_clock_mhz)
                .collect::<Vec<_>>(),
        );
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            text(&b.gpu),
            o(b.mean_w),
            o(b.sm_clock_mhz),
            o(h),
            o(h_sm),
            b.mean_w
                .zip(h)
                .map_or("–".into(), |(b, h)| format!("{:+.1}", h - b)),
        );
    }
    let h = mean_of(&held, |r| r.mean_w);
    let _ = writeln!(
        s,
        "| **node** | {} | {} | {} | {} | {} |",
        o(bare.mean_w),
        o(sm_mean(per_gpu, &[bare.rung.id])),
        o(h),
        o(sm_mean(per_gpu, &held_ids)),
        bare.mean_w
            .zip(h)
            .map_or("–".into(), |(b, h)| format!("{:+.1}", h - b)),
    );
}
