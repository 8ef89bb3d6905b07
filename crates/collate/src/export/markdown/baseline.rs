//! The two idle baselines: the GPUs before this process created any CUDA
//! context (sampled only: their own idle, low clocks), and with the
//! context held (the state of every off-phase). "Above idle" figures use
//! the second; both are shown so that nobody mistakes one for the other.

use super::cells::o;
use crate::per_gpu::GpuRungRow;
use crate::summary::RungSummary;
use std::fmt::Write;

/// The two baselines' rungs: (no context, the first context-held idle).
fn pair(rungs: &[RungSummary]) -> Option<(&RungSummary, &RungSummary)> {
    let idle = |bare: bool| {
        rungs
            .iter()
            .find(|r| r.rung.kind == "idle" && r.rung.no_context == bare)
    };
    Some((idle(true)?, idle(false)?))
}

fn sm_mean(rows: &[GpuRungRow], rung_id: u32) -> Option<f64> {
    let v: Vec<f64> = rows
        .iter()
        .filter(|r| r.rung_id == rung_id)
        .filter_map(|r| r.sm_clock_mhz)
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The answer block's line (None without both baselines).
pub fn answer_line(rungs: &[RungSummary], per_gpu: &[GpuRungRow]) -> Option<String> {
    let (bare, held) = pair(rungs)?;
    let (b, h) = (bare.mean_w?, held.mean_w?);
    Some(format!(
        "- **Idle, two baselines:** {b:.0} W before any CUDA context (`{}`, SM clock {} MHz); {h:.0} W with the context held (`{}`, SM clock {} MHz): {:+.0} W for holding it. Every \"above idle\" figure uses the context-held one, the state of every off-phase.",
        bare.rung.label,
        o(sm_mean(per_gpu, bare.rung.id)),
        held.rung.label,
        o(sm_mean(per_gpu, held.rung.id)),
        h - b
    ))
}

/// Appends the section: node and every GPU, both baselines side by side.
pub fn write_section(s: &mut String, rungs: &[RungSummary], per_gpu: &[GpuRungRow]) {
    let Some((bare, held)) = pair(rungs) else {
        return;
    };
    let _ = writeln!(s, "\n## Idle baselines (GPU draw only)\n");
    let _ = writeln!(
        s,
        "`{}`: sampled before this process created any CUDA context (nothing loaded or initialised on the GPUs). `{}`: the context held, as in every off-phase of every rung; \"above idle\" figures use this one.\n",
        bare.rung.label, held.rung.label
    );
    let _ = writeln!(
        s,
        "| GPU | no context W | SM clock MHz | context held W | SM clock MHz | holding the context W |\n|---|---|---|---|---|---|"
    );
    let row = |id: u32, gpu: &str| per_gpu.iter().find(|r| r.rung_id == id && r.gpu == gpu);
    for b in per_gpu.iter().filter(|r| r.rung_id == bare.rung.id) {
        let h = row(held.rung.id, &b.gpu);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            b.gpu,
            o(b.mean_w),
            o(b.sm_clock_mhz),
            o(h.and_then(|h| h.mean_w)),
            o(h.and_then(|h| h.sm_clock_mhz)),
            b.mean_w
                .zip(h.and_then(|h| h.mean_w))
                .map_or("–".into(), |(b, h)| format!("{:+.1}", h - b)),
        );
    }
    let _ = writeln!(
        s,
        "| **node** | {} | {} | {} | {} | {} |",
        o(bare.mean_w),
        o(sm_mean(per_gpu, bare.rung.id)),
        o(held.mean_w),
        o(sm_mean(per_gpu, held.rung.id)),
        bare.mean_w
            .zip(held.mean_w)
            .map_or("–".into(), |(b, h)| format!("{:+.1}", h - b)),
    );
}
