//! The NCCL sections of a node run's `report.md`: bandwidth per
//! collective and size, and the node's power while the fabric was busy.

use super::cells::{o, text};
use powerlab_analysis::nccl::{FabricPowerRow, NcclRow};
use powerlab_rundir::PhaseKind;
use powerlab_rundir::PlotFile;
use powerlab_samples::format::fmt_bytes;
use std::fmt::Write;

/// Appends "NCCL collectives" (only where the run has NCCL rows): time,
/// algbw and busbw per rung, collective and size, and the plot.
pub fn write_collectives(s: &mut String, nccl: &[NcclRow]) {
    if nccl.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## NCCL collectives\n");
    let _ = writeln!(
        s,
        "Time per operation on the slowest rank (CUDA events around the timed iterations); algbw = size / time; busbw = algbw × 2(n−1)/n for all_reduce, × (n−1)/n for all_gather and reduce_scatter, × 1 for broadcast (nccl-tests' formulas). f32 data, sum.\n"
    );
    let _ = writeln!(
        s,
        "| rung | collective | size | ranks | time µs | algbw GB/s | busbw GB/s |\n|---|---|---|---|---|---|---|"
    );
    for r in nccl {
        let short = if r.ranks_reporting < r.ranks {
            format!(
                " (only {} of {} ranks reported)",
                r.ranks_reporting, r.ranks
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.1} | {:.2} | {:.2}{short} |",
            text(&r.rung),
            r.collective,
            fmt_bytes(r.bytes),
            r.ranks,
            r.time_us,
            r.algbw_gbs,
            r.busbw_gbs
        );
    }
    if nccl.iter().all(|r| r.ranks < 2) {
        let _ = writeln!(
            s,
            "\nOne rank: these collectives moved no data over any fabric (a single GPU copies within its own memory), so no fabric power is reported."
        );
    }
    let _ = writeln!(
        s,
        "\n![NCCL bus bandwidth]({})",
        PlotFile::NcclBusbw.svg_link()
    );
}

/// Appends "Fabric power" (only where an NCCL rung has a row): the node's
/// power per rung next to idle and compute.
pub fn write_fabric_power(s: &mut String, fabric: &[FabricPowerRow]) {
    if !fabric.iter().any(|f| f.kind == PhaseKind::Nccl) {
        return;
    }
    let _ = writeln!(s, "\n## Fabric power (node, buffered samples)\n");
    let _ = writeln!(
        s,
        "| rung | kind | mean W | peak W | spread W | mean above idle (context held) W |\n|---|---|---|---|---|---|"
    );
    for f in fabric {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            text(&f.rung),
            f.kind,
            o(f.mean_w),
            o(f.peak_w),
            o(f.spread_w),
            o(f.above_idle_w)
        );
    }
}
