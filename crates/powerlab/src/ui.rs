//! What the user sees: a progress bar with ETA over the whole campaign, or
//! one JSON object per line with `--json`.

use indicatif::{ProgressBar, ProgressStyle};
use powerlab_analysis::summary::RungSummary;
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

fn f(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into())
}

/// Prints the per-rung node summary.
pub fn print_summary(rungs: &[RungSummary]) {
    outln!(
        "{:<44} {:>15} {:>9} {:>9} {:>9} {:>9} {:>10}  barrier",
        "rung",
        "method",
        "mean W",
        "peak W",
        "spread W",
        "swing W",
        "skew µs"
    );
    for r in rungs {
        outln!(
            "{:<44} {:>15} {:>9} {:>9} {:>9} {:>9} {:>10}  {}",
            r.rung.label,
            r.method,
            f(r.mean_w),
            f(r.peak_w),
            f(r.spread_w),
            f(r.swing_w),
            f(r.start_skew_us),
            match (r.barrier_ok, &r.edges_verdict) {
                (Some(false), _) => "MISSED",
                (_, Some(_)) => "EDGES",
                (Some(true), None) => "ok",
                (None, None) => "-",
            }
        );
        for v in r
            .incomplete
            .iter()
            .chain(&r.verdict)
            .chain(&r.edges_verdict)
        {
            outln!("{:<44} {v}", "");
        }
    }
    outln!(
        "GPU draw only (board power). Duty rungs: the node cycle composed from every GPU's folded cycle; the sample-and-hold figures NVML shows are in summary.csv (raw_*)."
    );
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
