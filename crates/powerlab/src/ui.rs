//! What the user sees: a progress bar with ETA over the whole campaign, or
//! one JSON object per line with `--json`.

use indicatif::{ProgressBar, ProgressStyle};
use powerlab_collate::summary::RungSummary;
use powerlab_rundir::RunEvent;
use powerlab_runner::Observer;

/// Progress bar over nominal campaign time.
pub struct BarObserver {
    bar: ProgressBar,
}

impl BarObserver {
    pub fn new(total_ns: i64) -> Self {
        let bar = ProgressBar::new((total_ns / 1_000_000).max(1) as u64);
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {percent:>3}% ETA {eta_precise} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        BarObserver { bar }
    }
}

impl Observer for BarObserver {
    fn event(&mut self, e: &RunEvent) {
        match e {
            RunEvent::Fault { kind, detail, fatal, gpu, .. } => {
                self.bar.println(format!("{} {kind} on {}: {detail}", if *fatal { "FAULT" } else { "warning" }, gpu.as_deref().unwrap_or("node")))
            }
            RunEvent::Interlock { limit, reading, .. } => self.bar.println(format!("INTERLOCK {limit}: {reading}")),
            RunEvent::RunEnded { status, reason, .. } => {
                self.bar.finish_and_clear();
                if let Some(r) = reason {
                    eprintln!("run {status}: {r}");
                }
            }
            _ => {}
        }
    }

    fn progress(&mut self, done_ns: i64, _total_ns: i64, label: &str) {
        self.bar.set_position((done_ns / 1_000_000).max(0) as u64);
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
            println!("{s}");
        }
    }

    fn progress(&mut self, done_ns: i64, total_ns: i64, label: &str) {
        println!("{}", serde_json::json!({ "event": "progress", "done_ns": done_ns, "total_ns": total_ns, "rung": label }));
    }

    fn message(&mut self, text: &str) {
        println!("{}", serde_json::json!({ "event": "message", "text": text }));
    }
}

fn f(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.1}")).unwrap_or_else(|| "-".into())
}

/// Prints the per-rung node summary.
pub fn print_summary(rungs: &[RungSummary]) {
    println!("{:<44} {:>10} {:>9} {:>9} {:>9} {:>9} {:>10}  barrier", "rung", "instrument", "mean W", "peak W", "spread W", "swing W", "skew µs");
    for r in rungs {
        println!(
            "{:<44} {:>10} {:>9} {:>9} {:>9} {:>9} {:>10}  {}",
            r.label,
            r.instrument,
            f(r.mean_w),
            f(r.peak_w),
            f(r.spread_w),
            f(r.swing_w),
            f(r.start_skew_us),
            match r.barrier_ok { Some(true) => "ok", Some(false) => "MISSED", None => "-" }
        );
    }
}
