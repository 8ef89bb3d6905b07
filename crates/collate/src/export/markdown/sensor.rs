//! The report's section on the instruments: the sensor model the run was
//! judged by, and the NVML-visible against the reconstructed swing of each
//! duty period.

use super::cells::{o, pm, text};
use powerlab_analysis::sensor::verdict::{PeriodVerdict, SensorReport};
use powerlab_rundir::PlotFile;
use powerlab_samples::format::fmt_ms;
use std::fmt::Write;

/// Appends "What the instruments can see": the sensor model per GPU and
/// path, the swing per duty period, and where the per-path rows are.
pub fn write_sensor_section(s: &mut String, sr: &SensorReport) {
    let _ = writeln!(s, "\n## What the instruments can see\n");
    let _ = writeln!(s, "Sensor model: {}.\n", sr.model.source);
    let _ = writeln!(
        s,
        "| GPU | path | update ms | window ms | latency ms | fit rms | read every ms | refused |\n|---|---|---|---|---|---|---|---|"
    );
    for g in &sr.model.gpus {
        for p in &g.paths {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                text(&g.gpu),
                p.instrument,
                o(p.update_period_ms),
                pm(p.window_ms, p.window_ms_ci95),
                pm(p.latency_ms, p.latency_ms_ci95),
                p.fit_rms
                    .map(|v| format!("{v:.3}"))
                    .unwrap_or_else(|| "–".into()),
                o(p.read_period_ms),
                p.refused.as_deref().unwrap_or("")
            );
        }
    }
    if !sr.answers.is_empty() {
        let _ = writeln!(s, "\n### Swing per duty period (node, in phase)\n");
        let _ = writeln!(
            s,
            "NVML-visible = p90 − p10 of the node's buffered curve. Reconstructed = the samples of every cycle folded on the recorded rising edges; the folded cycle's fundamental as a square-wave height, divided by the path's window gain sinc(W/P), summed over GPUs. A period whose window gain is below 0.3 on every path cannot be reconstructed.\n"
        );
        let _ = writeln!(
            s,
            "| rung | period ms | NVML-visible swing W | reconstructed swing W | by | verdict |\n|---|---|---|---|---|---|"
        );
        for a in &sr.answers {
            let vis = if matches!(a.verdict, PeriodVerdict::Aliased) && a.visible_swing_w.is_none()
            {
                "aliased".to_string()
            } else {
                o(a.visible_swing_w)
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} |",
                text(&a.rung),
                fmt_ms(a.period_ms),
                vis,
                o(a.reconstructed_swing_w),
                a.reconstructed_by,
                a.verdict
            );
        }
    }
    if sr.answers.len() >= 2 {
        let _ = writeln!(
            s,
            "\n![swing vs period]({})",
            PlotFile::SwingVsPeriod.svg_link()
        );
    }
    if !sr.rows.is_empty() {
        let _ = writeln!(
            s,
            "\nPer GPU and path (verdict of the raw readings, folded and reconstructed swing, rise/fall/overshoot/ramp of the folded cycle): `sensor_rungs.csv`; node-curve spectra (dominant frequency, share of variance in 0.1–2 Hz and 2–20 Hz): `spectrum.csv`."
        );
    }
}
