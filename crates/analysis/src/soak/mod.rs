//! Soak analysis: whether the node held its power over a long constant
//! load, or drifted. For every soak rung, every GPU and the node (the sum
//! of the GPUs: GPU draw only): the means of the first and last minute
//! (the edge window, configurable), the drift as a least-squares slope
//! through 10 s means with its 95 % interval (widened for the residuals'
//! lag-1 autocorrelation), the time to thermal equilibrium (the GPU's
//! 10 s mean temperature within 1 °C of its final plateau from then on,
//! and the plateau holding to the end), the throttle
//! onset (the first clock-event reading with a slowdown bit other than
//! the software power cap), the share of the window under the power and
//! thermal caps from NVML's cumulative counters, and the SM clock and
//! temperature at the start and the end.

mod rows;
#[cfg(test)]
mod tests;
mod trend;
mod verdict;

pub use trend::drift;
pub use verdict::{
    Equilibrium, MOVED_SHARE, Moved, Movement, NotJudged, Reason, SoakVerdict, Unreached,
};

use powerlab_core::Instrument;
use powerlab_core::sample::ClockEventBits;
use powerlab_core::units::{NS_PER_S, ns_to_s};
use powerlab_rundir::PhaseKind;
use powerlab_samples::load::{Run, RungWindow};
use powerlab_samples::series::{SeriesSet, span};
use powerlab_samples::stats::mean;
use rows::{gpu_row, node_row};
use serde::Serialize;

/// Default length of the first and last window, s.
pub const EDGE_S_DEFAULT: f64 = 60.0;
/// The bins the drift is fitted through, s.
pub const BIN_S: f64 = 10.0;
/// Thermal equilibrium: within this many °C of the final plateau.
pub const EQUILIBRIUM_C: f64 = 1.0;
/// ... and the last window's two halves within this many °C of each other.
pub const LAST_WINDOW_C: f64 = 0.5;
/// The slowdown bits that count as throttling (everything but the
/// software power cap, which is the board at its limit, as expected).
pub const THROTTLE_BITS: [u64; 4] = [
    ClockEventBits::HW_SLOWDOWN,
    ClockEventBits::SW_THERMAL_SLOWDOWN,
    ClockEventBits::HW_THERMAL_SLOWDOWN,
    ClockEventBits::HW_POWER_BRAKE_SLOWDOWN,
];

/// The node row's GPU key.
pub const NODE: &str = "node";

/// One GPU (or the node) over one soak rung.
#[derive(Debug, Clone, Serialize)]
pub struct SoakRow {
    /// Rung id.
    pub rung_id: u32,
    /// Rung label.
    pub rung: String,
    /// GPU key, or `node` (the sum of the GPUs).
    pub gpu: String,
    /// Measured window: from its start to the last buffered sample in it
    /// (the node: its shortest GPU), s.
    pub window_s: f64,
    /// The window the plan gave the rung, s.
    pub planned_s: f64,
    /// Why the figures are from incomplete data (empty: they are not): a
    /// soak that ran short of its plan (a lost GPU, an interlock, a stop).
    pub incomplete: String,
    /// Length of the first and last window used, s.
    pub edge_s: f64,
    /// Mean over the first window, W.
    pub first_mean_w: Option<f64>,
    /// Mean over the last window, W.
    pub last_mean_w: Option<f64>,
    /// Last − first, W.
    pub change_w: Option<f64>,
    /// Least-squares slope through the 10 s means, W per 10 min.
    pub drift_w_per_10min: Option<f64>,
    /// 95 % interval of the slope, low end.
    pub drift_lo_w_per_10min: Option<f64>,
    /// 95 % interval of the slope, high end.
    pub drift_hi_w_per_10min: Option<f64>,
    /// 10 s means the slope was fitted through.
    pub drift_bins: usize,
    /// Time from the window's start until the GPU temperature stays within
    /// 1 °C of its final plateau, s (the node: its slowest GPU).
    pub equilibrium_s: Option<f64>,
    /// How the equilibrium was judged (`reached`, or why not).
    pub equilibrium: Equilibrium,
    /// Mean GPU temperature over the first window, °C.
    pub temp_start_c: Option<f64>,
    /// Mean GPU temperature over the last window, °C.
    pub temp_end_c: Option<f64>,
    /// Mean SM clock over the first window, MHz.
    pub sm_clock_start_mhz: Option<f64>,
    /// Mean SM clock over the last window, MHz.
    pub sm_clock_end_mhz: Option<f64>,
    /// Time from the window's start of the first throttle bit, s (the node:
    /// its earliest GPU).
    pub throttle_onset_s: Option<f64>,
    /// The throttle bits of that first reading, by name (the node: with
    /// the GPU that set them).
    pub throttle_bits: String,
    /// Share of the window under the power cap (cumulative counter).
    pub power_cap_share: Option<f64>,
    /// Share of the window under thermal caps (cumulative counter).
    pub thermal_cap_share: Option<f64>,
    /// Whether the power held or moved, judged on the figures above (not
    /// a column of `soak.csv`: the report writes it).
    #[serde(skip)]
    pub verdict: SoakVerdict,
}

/// One GPU's lines for the soak plot, against seconds since the soak's start.
#[derive(Debug, Clone, Default)]
pub struct SoakLines {
    /// GPU key.
    pub gpu: String,
    /// 1 s means of the buffered samples: (s, W).
    pub power_w: Vec<(f64, f64)>,
    /// GPU temperature readings: (s, °C).
    pub temp_c: Vec<(f64, f64)>,
    /// SM clock readings: (s, MHz).
    pub sm_clock_mhz: Vec<(f64, f64)>,
}

/// The soak analysis of a run.
#[derive(Debug, Clone, Default)]
pub struct Soak {
    /// Per soak rung: every GPU, then the node.
    pub rows: Vec<SoakRow>,
    /// The plot's lines of the first soak rung, and its label.
    pub plot: Option<(String, Vec<SoakLines>)>,
}

/// Analyses every soak rung of the run; `edge_s` is the first and last
/// window's length (shortened to a third of the window when the soak is
/// shorter than three of them).
pub fn analyse(run: &Run, series: &SeriesSet, edge_s: f64) -> Soak {
    let mut out = Soak::default();
    for r in run.rungs.iter().filter(|r| r.info.kind == PhaseKind::Soak) {
        let gpus: Vec<SoakRow> = run
            .series
            .iter()
            .map(|(node, gpu)| gpu_row(r, series, node, gpu, edge_s))
            .collect();
        let node = node_row(r, series, run, &gpus);
        if out.plot.is_none() {
            let lines = run
                .series
                .iter()
                .map(|(node, gpu)| plot_lines(r, series, node, gpu))
                .collect();
            out.plot = Some((r.info.label.clone(), lines));
        }
        out.rows.extend(gpus);
        out.rows.push(node);
    }
    out
}

/// One GPU's lines for the soak plot of the rung `r`.
fn plot_lines(r: &RungWindow, series: &SeriesSet, node: &str, gpu: &str) -> SoakLines {
    let (from, to) = (r.measure_from_ns, r.end_ns);
    let rel = |s: &[(i64, f64)]| s.iter().map(|p| (secs(p.0 - from), p.1)).collect();
    let power = span(series.get_at(node, gpu, Instrument::BufferedW), from, to);
    let mut power_w = Vec::new();
    let mut k = 0i64;
    while from + k * NS_PER_S < to {
        let (a, b) = (from + k * NS_PER_S, from + (k + 1) * NS_PER_S);
        if let Some(m) = mean(&values(span(power, a, b))) {
            power_w.push((secs(a - from) + 0.5, m));
        }
        k += 1;
    }
    SoakLines {
        gpu: gpu.to_string(),
        power_w,
        temp_c: rel(span(
            series.get_at(node, gpu, Instrument::GpuTempC),
            from,
            to,
        )),
        sm_clock_mhz: rel(span(
            series.get_at(node, gpu, Instrument::SmClockMhz),
            from,
            to,
        )),
    }
}

/// `ns` in seconds.
fn secs(ns: i64) -> f64 {
    ns_to_s(ns)
}

/// The values of `(t, value)` points.
fn values(s: &[(i64, f64)]) -> Vec<f64> {
    s.iter().map(|p| p.1).collect()
}
