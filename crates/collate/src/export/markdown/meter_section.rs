//! The node power section of `report.md`: each source's behaviour (update
//! period, answer time, lag, failures), then per rung the chassis beside
//! the GPU sum over the same spans.

use super::cells::{o, text};
use powerlab_analysis::node_power::{NodePowerRung, SourceFacts};
use powerlab_rundir::PlotFile;
use std::fmt::Write;

/// Appends the section; nothing without a source.
pub fn write_section(s: &mut String, facts: &[SourceFacts], rows: &[NodePowerRung]) {
    if facts.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "\n## Node power (chassis and meters beside the GPU sum)\n"
    );
    let _ = writeln!(
        s,
        "Each reading is a slow average with its own latency: it stands for the span [answer − lag − update period, answer − lag], and the GPU sum is averaged over the same spans. A duty rung whose period is under four update periods gets no chassis swing.\n"
    );
    let _ = writeln!(
        s,
        "| source | kind | readings | failed | asked every | update period | answer p50 / p95 | lag behind GPU sum | note |\n|---|---|---|---|---|---|---|---|---|"
    );
    for f in facts {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {}{} | {:.0} ms | {} | {} / {} | {} | {} |",
            f.source,
            f.kind,
            f.readings,
            f.failed,
            if f.errors.is_empty() {
                String::new()
            } else {
                format!(" ({})", f.errors)
            },
            f.interval_ms,
            dash(f.update_ms.map(|v| format!("{v:.0} ms"))),
            dash(f.answer_ms_p50.map(|v| format!("{v:.0} ms"))),
            dash(f.answer_ms_p95.map(|v| format!("{v:.0} ms"))),
            dash(f.lag_ms.map(|v| format!("{v:.0} ms"))),
            f.note
        );
    }
    let _ = writeln!(
        s,
        "\n| rung | source | readings | coverage | chassis mean W | chassis peak W | chassis swing W | GPU sum W | non-GPU W | non-GPU share | verdict |\n|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.0} % | {} | {} | {} | {} | {} | {} | {} |",
            text(&r.rung),
            text(&r.source),
            r.readings,
            r.coverage * 100.0,
            o(r.chassis_mean_w),
            o(r.chassis_peak_w),
            o(r.chassis_swing_w),
            o(r.gpu_sum_w),
            o(r.non_gpu_w),
            dash(r.non_gpu_share.map(|v| format!("{:.1} %", v * 100.0))),
            r.verdict
        );
    }
    let _ = writeln!(
        s,
        "\n![node power vs GPU sum]({})",
        PlotFile::NodePower.svg_link()
    );
}

fn dash(v: Option<String>) -> String {
    v.unwrap_or_else(|| "—".into())
}
