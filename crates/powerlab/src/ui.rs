//! What the user sees: a progress bar with ETA over the whole campaign, or
//! one JSON object per line with `--json`.

use indicatif::{ProgressBar, ProgressStyle};
use powerlab_analysis::cycle::Bounds;
use powerlab_analysis::summary::{Figure, RungSummary};
use powerlab_collate::report::verdicts::SpecRow;
use powerlab_core::units::NS_PER_MS;
use powerlab_rundir::{PhaseKind, RunEvent};
use powerlab_runner::Observer;

/// Progress bar over nominal campaign time.
pub struct BarObserver {
    bar: ProgressBar,
}

impl BarObserver {
    pub fn new(total_ns: i64) -> Self {
        let bar = ProgressBar::new((total_ns / NS_PER_MS).max(1) as u64);
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {percent:>3}% ETA {eta_precise} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        BarObserver { bar }
    }
}

impl Observer for BarObserver {
    fn event(&mut self, e: &RunEvent) {
        match e {
            RunEvent::Fault {
                kind,
                detail,
                fatal,
                gpu,
                ..
            } => self.bar.println(format!(
                "{} {kind} on {}: {detail}",
                if *fatal { "FAULT" } else { "warning" },
                gpu.as_deref().unwrap_or("node")
            )),
            RunEvent::Interlock { limit, reading, .. } => {
                self.bar.println(format!("INTERLOCK {limit}: {reading}"))
            }
            RunEvent::RunEnded { status, reason, .. } => {
                self.bar.finish_and_clear();
                if let Some(r) = reason {
                    errln!("run {status}: {r}");
                }
            }
            _ => {}
        }
    }

    fn progress(&mut self, done_ns: i64, _total_ns: i64, label: &str) {
        self.bar.set_position((done_ns / NS_PER_MS).max(0) as u64);
        self.bar.set_message(label.to_string());
    }

    fn message(&mut self, text: &str) {
        self.bar.println(text);
    }
}

/// One JSON object per line on stdout.
pub struct JsonObserver;

impl Observer for JsonObserver {
    fn event(&mut self, e: &RunEvent) {
        if let Ok(s) = serde_json::to_string(e) {
            outln!("{s}");
        }
    }

    fn progress(&mut self, done_ns: i64, total_ns: i64, label: &str) {
        outln!(
            "{}",
            serde_json::json!({ "event": "progress", "done_ns": done_ns, "total_ns": total_ns, "rung": label })
        );
    }

    fn message(&mut self, text: &str) {
        outln!(
            "{}",
            serde_json::json!({ "event": "message", "text": text })
        );
    }
}

/// A power at its scale for a terminal cell: `5543 W`, `22.15 kW`,
/// `54.059 MW` (the unit moves at 10 000 of the smaller one).
fn scaled(w: f64) -> (f64, &'static str, usize) {
    use powerlab_core::units::{W_PER_KW, W_PER_MW};
    if w.abs() >= 10.0 * W_PER_MW {
        (W_PER_MW, "MW", 3)
    } else if w.abs() >= 10.0 * W_PER_KW {
        (W_PER_KW, "kW", 2)
    } else {
        (1.0, "W", 0)
    }
}

/// A figure's cell: the figure at its scale, ± half its 95 % interval
/// where it has one, `≤ hi` where the interval only bounds it.
fn cell(r: &RungSummary, figure: Figure, v: Option<f64>, b: Option<Bounds>) -> String {
    let Some(v) = v else {
        return "-".into();
    };
    if let Some(x) = r.resolution.as_ref().and_then(|u| u.bounded(figure))
        && x.at_most()
    {
        let (d, unit, n) = scaled(x.interval.hi);
        return format!("≤ {:.n$} {unit}", x.interval.hi / d);
    }
    let (d, unit, n) = scaled(v);
    // Too few cycles: the interval bounds nothing (the line below says so).
    let b = b.filter(|_| !r.resolution.as_ref().is_some_and(|u| u.unbounded()));
    match b {
        Some(b) => format!("{:.n$} ± {:.n$} {unit}", v / d, (b.hi - b.lo) / 2.0 / d),
        None => format!("{:.n$} {unit}", v / d),
    }
}

/// Prints the per-rung node summary, then the verdicts in one line.
pub fn print_summary(rungs: &[RungSummary], verdicts: &[SpecRow]) {
    outln!(
        "{:<44} {:>15} {:>17} {:>17} {:>17} {:>17} {:>8}  barrier",
        "rung",
        "method",
        "mean",
        "peak",
        "spread",
        "swing",
        "skew µs"
    );
    for r in rungs {
        outln!(
            "{:<44} {:>15} {:>17} {:>17} {:>17} {:>17} {:>8}  {}",
            r.rung.label,
            r.method,
            cell(r, Figure::Mean, r.mean_w, r.mean_ci95),
            cell(r, Figure::Peak, r.peak_w, r.peak_ci95),
            cell(r, Figure::Spread, r.spread_w, r.spread_ci95),
            cell(r, Figure::Swing, r.swing_w, r.swing_ci95),
            r.start_skew_us
                .map_or_else(|| "-".into(), |v| format!("{v:.1}")),
            match (r.barrier_ok, &r.edges_verdict) {
                (Some(false), _) => "MISSED",
                (_, Some(_)) => "EDGES",
                (Some(true), None) => "ok",
                (None, None) => "-",
            }
        );
        let unresolved = r
            .resolution
            .as_ref()
            .filter(|u| u.unbounded())
            .map(|u| format!("unresolved: {u}"));
        for v in r
            .incomplete
            .iter()
            .chain(&r.verdict)
            .chain(&r.edges_verdict)
            .chain(&unresolved)
        {
            outln!("{:<44} {v}", "");
        }
    }
    outln!(
        "GPU draw only (board power); ± half the 95 % interval. Duty rungs: the node cycle composed from every GPU's folded cycle; the sample-and-hold figures NVML shows are in summary.csv (raw_*)."
    );
    if !verdicts.is_empty() {
        outln!("verdict: {}", verdict_line(verdicts));
    }
}

/// The verdict table in one line: each item's verdict and, where judged,
/// its margin; `report/report.md` has the table.
fn verdict_line(rows: &[SpecRow]) -> String {
    use powerlab_analysis::grid::GridVerdict;
    use powerlab_collate::render::{Scale, Style, item, verdict_in};
    let judged: Vec<String> = rows
        .iter()
        .filter(|r| r.verdict != GridVerdict::NoLimit)
        .map(|r| {
            let margin = r.margin.map_or(String::new(), |m| {
                let at_most = if r.lower_bound { "at most " } else { "" };
                let by = format!("{at_most}{}", Scale::Node.write(r.quantity, m.abs()));
                if m < 0.0 {
                    format!(", {by} over the limit")
                } else {
                    format!(", {by} under it")
                }
            });
            format!("{}: {}{margin}", item(&r.item), verdict_in(r, Style::Plain))
        })
        .collect();
    let open: Vec<String> = rows
        .iter()
        .filter(|r| r.verdict == GridVerdict::NoLimit)
        .map(|r| item(&r.item))
        .collect();
    let mut line = if judged.is_empty() {
        "nothing judged (no [supply] or [grid] limit declared)".to_string()
    } else {
        judged.join("; ")
    };
    if !open.is_empty() && !judged.is_empty() {
        line.push_str(&format!("; no limit declared for {}", open.join(", ")));
    }
    line + " (the table: report/report.md)"
}

/// Wraps an observer and, on real hardware, captures health a second time
/// under load: a few seconds into the first sustained rung, written beside
/// the idle capture as `health-under-load.json` / `-report.md`.
pub struct UnderLoadHealth<'a> {
    pub inner: &'a mut dyn Observer,
    pub needs_nccl: bool,
    /// GPU processes of this rack's other ranks on the host (not foreign).
    pub siblings: Vec<(u32, String)>,
    pub run_dir: Option<std::path::PathBuf>,
    pub done: bool,
}

impl Observer for UnderLoadHealth<'_> {
    fn event(&mut self, e: &RunEvent) {
        if let (
            RunEvent::RungStarted {
                rung,
                measure_from_ns,
                end_ns,
                ..
            },
            false,
            Some(dir),
        ) = (e, self.done, &self.run_dir)
            && matches!(rung.kind, PhaseKind::Sustained | PhaseKind::Soak)
        {
            self.done = true;
            let at = measure_from_ns + ((end_ns - measure_from_ns) / 2).min(5_000_000_000);
            let (dir, needs, own) = (dir.clone(), self.needs_nccl, self.siblings.clone());
            std::thread::spawn(move || {
                let now = powerlab_core::RunClock::realtime().now_ns();
                if at > now {
                    std::thread::sleep(std::time::Duration::from_nanos((at - now) as u64));
                }
                let r = crate::cmd_preflight::capture("under_load", needs, &own);
                let stem = powerlab_rundir::RunFile::HealthUnderLoad
                    .health_stem()
                    .unwrap_or("health-under-load");
                let _ = powerlab_health::report::write(&r, &dir, stem);
            });
        }
        self.inner.event(e);
    }

    fn progress(&mut self, done_ns: i64, total_ns: i64, label: &str) {
        self.inner.progress(done_ns, total_ns, label);
    }

    fn message(&mut self, text: &str) {
        if let Some(d) = text.strip_prefix("run directory: ") {
            self.run_dir = Some(d.into());
        }
        self.inner.message(text);
    }
}

#[cfg(test)]
mod tests {
    use super::scaled;

    #[test]
    fn a_terminal_power_moves_its_unit_at_ten_thousand() {
        let w = |v: f64| {
            let (d, unit, n) = scaled(v);
            format!("{:.n$} {unit}", v / d)
        };
        assert_eq!(w(5543.4), "5543 W");
        assert_eq!(w(9_999.0), "9999 W");
        assert_eq!(w(22_150.0), "22.15 kW");
        assert_eq!(w(-22_150.0), "-22.15 kW");
        assert_eq!(w(9_999_000.0), "9999.00 kW");
        assert_eq!(w(54_059_000.0), "54.059 MW");
    }
}
