//! The per-GPU table: every rung, every GPU — mean and peak power, % of
//! the enforced limit, mean SM clock, hottest GPU and HBM temperature, the
//! clock-event bits seen (by name) and the time under the power and
//! thermal caps from NVML's cumulative counters. A GPU whose mean differs
//! from the median of its peers by more than [`PEER_FLAG`] in a rung (all
//! GPUs run the same load shape in every rung, except in a ramp-up step,
//! where the GPUs that swing are compared only with each other and the idle
//! ones only with each other) is flagged, with what its
//! limiter bits say: one throttling GPU must not hide inside a node total.
//! The energy cross-check compares each GPU's energy counter over the
//! rung with the integral of its buffered samples over the same span: a
//! gap beyond [`ENERGY_FLAG`] means power the samples missed (spikes
//! between their windows) or a counter problem.

use powerlab_core::Instrument;
use powerlab_core::sample::ClockEventBits;
use powerlab_core::units::{mj_to_j, ns_f64_to_s, ns_to_s};
use powerlab_samples::load::Run;
use powerlab_samples::series::{SeriesSet, span};
use powerlab_samples::stats::mean;
use powerlab_samples::stats::{median, r3};
use serde::Serialize;

mod flag;
pub use flag::{ClockEvents, OtherLimit, PeerFlag};

/// A GPU is flagged when its mean is this far from its peers' median...
pub const PEER_FLAG: f64 = 0.03;
/// ... and by at least this much, W (idle GPUs differ by a few watts,
/// which is no limiter's doing: 119 and 124 W on the real 2 × H200).
pub const PEER_FLAG_MIN_W: f64 = 10.0;
/// An energy gap (counter vs buffered samples) beyond this is flagged.
pub const ENERGY_FLAG: f64 = 0.02;

/// One GPU in one rung (a row of `per_gpu.csv`, which `compare` reads back).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct GpuRungRow {
    /// Rung id.
    pub rung_id: u32,
    /// Rung label.
    pub rung: String,
    /// GPU key.
    pub gpu: String,
    /// Mean of the buffered samples in the window, W.
    pub mean_w: Option<f64>,
    /// Mean power from the energy counter over the same window, W: free of
    /// the buffered samples' aliasing on a duty rung whose period locks
    /// onto their grid; the peer comparison uses it where every GPU has it.
    pub counter_mean_w: Option<f64>,
    /// Largest buffered sample, W.
    pub peak_w: Option<f64>,
    /// Enforced power limit, W (median reading in the window, else the
    /// limit at open time).
    pub limit_w: Option<f64>,
    /// Mean as a share of the limit.
    pub mean_of_limit: Option<f64>,
    /// Mean SM clock, MHz.
    pub sm_clock_mhz: Option<f64>,
    /// Hottest GPU temperature, °C.
    pub gpu_temp_max_c: Option<f64>,
    /// Hottest HBM temperature, °C.
    pub mem_temp_max_c: Option<f64>,
    /// Clock-event bits seen in the window (written by name).
    pub events: ClockEvents,
    /// Time under the power cap (cumulative counter's delta), share of the window.
    pub power_cap_share: Option<f64>,
    /// Time under thermal caps, share of the window.
    pub thermal_cap_share: Option<f64>,
    /// (mean − peers' median) / peers' median.
    pub vs_peers: Option<f64>,
    /// Why this GPU is flagged (None: it is not). Written as words, empty
    /// where it is not flagged; a row read back from `per_gpu.csv` has none
    /// (its words are for reading, and `compare` reads the figures).
    #[serde(serialize_with = "flag::flag_words", skip_deserializing)]
    pub flag: Option<PeerFlag>,
    /// Energy from the counter between its first and last reading in the window, J.
    pub counter_j: Option<f64>,
    /// The buffered samples' integral over the same span, J.
    pub samples_j: Option<f64>,
    /// (counter − samples) / counter.
    pub energy_gap: Option<f64>,
    /// Set when the gap is beyond [`ENERGY_FLAG`].
    pub energy_flag: String,
}

/// Builds the table for every rung that started.
pub fn per_gpu(run: &Run, series: &SeriesSet) -> Vec<GpuRungRow> {
    let mut out = Vec::new();
    for r in &run.rungs {
        let (from, to) = (r.measure_from_ns, r.end_ns);
        let mut rows: Vec<GpuRungRow> = run
            .series
            .iter()
            .map(|(node, gpu)| {
                let get = |inst: Instrument| span(series.get_at(node, gpu, inst), from, to);
                let power: Vec<f64> = get(Instrument::BufferedW).iter().map(|p| p.1).collect();
                let mean_w = mean(&power);
                let limits: Vec<f64> = get(Instrument::PowerLimitW).iter().map(|p| p.1).collect();
                let limit_w = median(&limits).or_else(|| {
                    run.manifest
                        .backend
                        .gpus
                        .iter()
                        .find(|g| g.key == *gpu)
                        .map(|g| g.power_limit_w)
                        .filter(|l| *l > 0.0)
                });
                let bits = get(Instrument::ClockEvents)
                    .iter()
                    .fold(0u64, |acc, p| acc | p.1 as u64);
                let energy = energy_check(
                    get(Instrument::EnergyMj),
                    series.get_at(node, gpu, Instrument::BufferedW),
                    to - from,
                );
                GpuRungRow {
                    rung_id: r.info.id,
                    rung: r.info.label.clone(),
                    gpu: gpu.clone(),
                    mean_w: mean_w.map(r3),
                    counter_mean_w: energy.map(|e| r3(e.0 / e.3)),
                    peak_w: power.iter().copied().reduce(f64::max),
                    limit_w,
                    mean_of_limit: mean_w
                        .zip(limit_w)
                        .filter(|(_, l)| *l > 0.0)
                        .map(|(m, l)| r3(m / l)),
                    sm_clock_mhz: mean(&values(get(Instrument::SmClockMhz))).map(r3),
                    gpu_temp_max_c: values(get(Instrument::GpuTempC)).into_iter().reduce(f64::max),
                    mem_temp_max_c: values(get(Instrument::MemTempC)).into_iter().reduce(f64::max),
                    events: ClockEvents(ClockEventBits(bits)),
                    power_cap_share: cap_share(series, node, gpu, Instrument::PowerCapTimeNs, from, to),
                    thermal_cap_share: cap_share(series, node, gpu, Instrument::ThermalCapTimeNs, from, to),
                    vs_peers: None,
                    flag: None,
                    counter_j: energy.map(|e| r3(e.0)),
                    samples_j: energy.map(|e| r3(e.1)),
                    energy_gap: energy.map(|e| r3(e.2)),
                    energy_flag: match energy {
                        Some((c, b, g, _)) if g.abs() > ENERGY_FLAG => format!(
                            "{gpu}: the energy counter saw {c:.0} J, the buffered samples {b:.0} J ({:+.1} %): {}",
                            g * 100.0,
                            if g > 0.0 {
                                "power the samples missed (spikes between their windows) or a counter problem"
                            } else {
                                "the samples read more than the counter: their short windows keep landing on the same part of the load's cycle (a period locked to their grid) or a counter problem"
                            }
                        ),
                        _ => String::new(),
                    },
                }
            })
            .collect();
        match &r.info.swinging {
            // A ramp-up step: the GPUs that swung are compared with each
            // other and the idle ones with each other, never across.
            Some(swung) => {
                let (mut on, mut off): (Vec<_>, Vec<_>) = rows
                    .into_iter()
                    .enumerate()
                    .partition(|(_, row)| swung.contains(&row.gpu));
                for group in [&mut on, &mut off] {
                    let (idx, mut group_rows): (Vec<usize>, Vec<GpuRungRow>) =
                        std::mem::take(group).into_iter().unzip();
                    flag_outliers(&mut group_rows);
                    *group = idx.into_iter().zip(group_rows).collect();
                }
                let mut all: Vec<(usize, GpuRungRow)> = on.into_iter().chain(off).collect();
                all.sort_by_key(|(i, _)| *i);
                out.extend(all.into_iter().map(|(_, row)| row));
            }
            None => {
                flag_outliers(&mut rows);
                out.extend(rows);
            }
        }
    }
    out
}

/// The share of time a cumulative cap-time counter (ns) grew by over
/// `from..to`: from the last reading at or before `from` to the last one
/// inside the window, over the time between those two readings (not the
/// planned window: a rung cut short is judged on the time it ran).
pub(crate) fn cap_share(
    series: &SeriesSet,
    node: &str,
    gpu: &str,
    inst: Instrument,
    from: i64,
    to: i64,
) -> Option<f64> {
    let all = series.get_at(node, gpu, inst);
    let before = all[..all.partition_point(|p| p.0 <= from)].last()?;
    let last = span(all, from, to).last()?;
    let elapsed_ns = (last.0 - before.0).max(1) as f64;
    Some(r3(((last.1 - before.1) / elapsed_ns).clamp(0.0, 1.0)))
}

/// Each GPU's deviation from the median of its peers' values, relative
/// and in W (None where it or all of its peers have none).
fn deviations(values: &[Option<f64>]) -> Vec<Option<(f64, f64)>> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let peers: Vec<f64> = values
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != i)
                .filter_map(|(_, v)| *v)
                .collect();
            let med = median(&peers).filter(|m| *m > 0.0)?;
            v.map(|v| ((v - med) / med, v - med))
        })
        .collect()
}

/// Compares each GPU's mean with its peers' median; flags beyond
/// [`PEER_FLAG`]. Where every GPU has an energy-counter mean, a GPU is
/// flagged only when both its buffered-sample mean and its counter mean
/// leave the peers by more than the threshold, the same way: on a duty
/// rung the buffered means can alias (a period locked to their grid) and
/// the counter's span is not a whole number of cycles, and neither alone
/// may call a GPU slow.
fn flag_outliers(rows: &mut [GpuRungRow]) {
    let by_buffered = deviations(&rows.iter().map(|r| r.mean_w).collect::<Vec<_>>());
    let by_counter = if rows.iter().all(|r| r.counter_mean_w.is_some()) {
        deviations(&rows.iter().map(|r| r.counter_mean_w).collect::<Vec<_>>())
    } else {
        vec![None; rows.len()]
    };
    let n = rows.iter().filter(|r| r.mean_w.is_some()).count();
    let limits: Vec<Option<f64>> = rows.iter().map(|r| r.limit_w).collect();
    let limit_apart = deviations(&limits);
    let beyond = |(d, w): (f64, f64)| d.abs() > PEER_FLAG && w.abs() > PEER_FLAG_MIN_W;
    for (i, row) in rows.iter_mut().enumerate() {
        let Some((d, w)) = by_buffered[i] else {
            continue;
        };
        row.vs_peers = Some(r3(d));
        let counter = by_counter[i];
        let agrees = counter.is_none_or(|c| beyond(c) && c.0.signum() == d.signum());
        if !beyond((d, w)) || !agrees {
            continue;
        }
        // A GPU whose enforced limit is not its peers' differs by design.
        let other_limit = limit_apart[i]
            .filter(|(d, _)| d.abs() > PEER_FLAG)
            .zip(row.limit_w)
            .map(|((_, w), l)| OtherLimit {
                limit_w: l,
                peers_w: l - w,
            });
        row.flag = Some(PeerFlag {
            gpu: row.gpu.clone(),
            vs_peers: d,
            counter_vs_peers: counter.map(|c| c.0),
            of_two: n == 2,
            other_limit,
            limiters: row.events.limiters(),
            power_cap_share: row.power_cap_share,
            thermal_cap_share: row.thermal_cap_share,
        });
    }
}

/// (counter J, samples J, gap, span s) between the first and last energy
/// reading inside the window, when they span at least half of it. Each buffered
/// sample stands for the time since the one before it.
fn energy_check(
    energy_mj: &[(i64, f64)],
    buffered: &[(i64, f64)],
    window_ns: i64,
) -> Option<(f64, f64, f64, f64)> {
    let (a, b) = (energy_mj.first()?, energy_mj.last()?);
    if b.0 - a.0 < window_ns / 2 {
        return None;
    }
    let counter_j = mj_to_j(b.1 - a.1);
    let lo = buffered.partition_point(|p| p.0 <= a.0);
    let hi = buffered.partition_point(|p| p.0 <= b.0);
    if lo == 0 || hi <= lo {
        return None;
    }
    let mut samples_j = 0.0;
    let mut covered_ns = 0i64;
    for i in lo..hi {
        let dt = buffered[i].0 - buffered[i - 1].0.max(a.0);
        samples_j += ns_f64_to_s(buffered[i].1 * dt as f64);
        covered_ns += dt;
    }
    // The stretch after the last sample, at its value.
    let tail = b.0 - buffered[hi - 1].0;
    samples_j += ns_f64_to_s(buffered[hi - 1].1 * tail as f64);
    covered_ns += tail;
    // Samples missing for more than a tenth of the span: no comparison (the
    // coverage figures say so already).
    if covered_ns < (b.0 - a.0) || counter_j <= 0.0 {
        return None;
    }
    let largest_gap = buffered[lo..hi]
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .max()
        .unwrap_or(0);
    if largest_gap > (b.0 - a.0) / 10 {
        return None;
    }
    Some((
        counter_j,
        samples_j,
        (counter_j - samples_j) / counter_j,
        ns_to_s(b.0 - a.0),
    ))
}

fn values(s: &[(i64, f64)]) -> Vec<f64> {
    s.iter().map(|p| p.1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAP: u64 = ClockEventBits::SW_POWER_CAP;

    fn row(gpu: &str, mean: f64, events: u64) -> GpuRungRow {
        GpuRungRow {
            rung_id: 0,
            rung: "sustained".into(),
            gpu: gpu.into(),
            mean_w: Some(mean),
            counter_mean_w: None,
            peak_w: None,
            limit_w: Some(700.0),
            mean_of_limit: None,
            sm_clock_mhz: None,
            gpu_temp_max_c: None,
            mem_temp_max_c: None,
            events: ClockEvents(ClockEventBits(events)),
            power_cap_share: Some(0.8),
            thermal_cap_share: Some(0.0),
            vs_peers: None,
            flag: None,
            counter_j: None,
            samples_j: None,
            energy_gap: None,
            energy_flag: String::new(),
        }
    }

    #[test]
    fn the_energy_check_integrates_the_samples_over_the_counter_span() {
        let ms = 1_000_000i64;
        // 500 W sampled every 20 ms for 10 s; the counter agrees, then
        // reads 10 % more.
        let buffered: Vec<(i64, f64)> = (0..=500).map(|i| (i * 20 * ms, 500.0)).collect();
        let counter = |k: f64| vec![(100 * ms, 0.0), (9_100 * ms, 500.0 * 9.0 * 1000.0 * k)];
        let (c, b, g, span) = energy_check(&counter(1.0), &buffered, 10_000 * ms).unwrap();
        assert!((span - 9.0).abs() < 1e-9, "{span}");
        assert!(
            (c - 4500.0).abs() < 1e-9 && (b - 4500.0).abs() < 1e-6,
            "{c} {b}"
        );
        assert!(g.abs() < 1e-9);
        let (_, _, g, _) = energy_check(&counter(1.1), &buffered, 10_000 * ms).unwrap();
        assert!((g - 0.1 / 1.1).abs() < 1e-9, "{g}");
        // Counter readings spanning under half the window: nothing.
        assert!(energy_check(&counter(1.0), &buffered, 20_000 * ms).is_none());
        // A hole of 2 s in the samples: nothing to compare.
        let holed: Vec<(i64, f64)> = buffered
            .iter()
            .copied()
            .filter(|p| !(3_000 * ms..5_000 * ms).contains(&p.0))
            .collect();
        assert!(energy_check(&counter(1.0), &holed, 10_000 * ms).is_none());
    }

    #[test]
    fn a_gpu_with_another_limit_is_said_to_have_it() {
        let mut rows = vec![
            GpuRungRow {
                limit_w: Some(1200.0),
                ..row("gpu0", 960.0, 0)
            },
            row("gpu1", 693.0, CAP),
            row("gpu2", 693.0, CAP),
        ];
        flag_outliers(&mut rows);
        let f = rows[0].flag.as_ref().expect("flagged");
        assert_eq!(
            f.other_limit,
            Some(OtherLimit {
                limit_w: 1200.0,
                peers_w: 700.0
            })
        );
        assert!(f.limiters.is_empty());
        assert!(
            f.to_string().ends_with(
                "its enforced limit is 1200 W, its peers' 700 W: the limit, not a throttle; no limiter bit set"
            ),
            "{f}"
        );
    }

    #[test]
    fn a_gpu_is_flagged_only_where_its_energy_counter_agrees() {
        let with = |gpu: &str, buffered: f64, counter: f64| GpuRungRow {
            counter_mean_w: Some(counter),
            ..row(gpu, buffered, CAP)
        };
        // Buffered means aliased (+11 % on one GPU), the counter flat: no flag.
        let mut rows = vec![
            with("gpu0", 777.0, 700.0),
            with("gpu1", 700.0, 701.0),
            with("gpu2", 700.0, 699.0),
        ];
        flag_outliers(&mut rows);
        assert!(rows.iter().all(|r| r.flag.is_none()), "{rows:?}");
        assert_eq!(rows[0].vs_peers, Some(0.11));
        // Both say 10 % low: flagged, with the counter's figure.
        let mut rows = vec![
            with("gpu0", 630.0, 630.0),
            with("gpu1", 700.0, 701.0),
            with("gpu2", 700.0, 699.0),
        ];
        flag_outliers(&mut rows);
        let f = rows[0].flag.as_ref().expect("flagged");
        assert_eq!((f.vs_peers, f.counter_vs_peers), (-0.1, Some(-0.1)), "{f}");
        assert!(
            f.to_string()
                .contains("(buffered samples; energy counter -10.0 %)"),
            "{f}"
        );
        // The counter leaves the other way: no flag.
        let mut rows = vec![
            with("gpu0", 630.0, 770.0),
            with("gpu1", 700.0, 700.0),
            with("gpu2", 700.0, 700.0),
        ];
        flag_outliers(&mut rows);
        assert!(rows[0].flag.is_none(), "{:?}", rows[0].flag);
    }

    #[test]
    fn flags_the_gpu_that_leaves_its_peers_and_names_its_limiter() {
        let mut rows = vec![
            row("gpu0", 690.0, 0),
            row("gpu1", 688.0, 0),
            row("gpu2", 640.0, CAP | ClockEventBits::HW_THERMAL_SLOWDOWN),
            row("gpu3", 693.0, 0),
        ];
        flag_outliers(&mut rows);
        let flagged: Vec<&str> = rows
            .iter()
            .filter(|r| r.flag.is_some())
            .map(|r| r.gpu.as_str())
            .collect();
        assert_eq!(flagged, vec!["gpu2"]);
        let f = rows[2].flag.as_ref().expect("flagged");
        assert!(f.vs_peers < -0.07 && f.limiters.slowdown(), "{f}");
        assert!(
            f.to_string().contains("7.2 % below")
                && f.to_string().contains("under the power cap 80 %"),
            "{f}"
        );
        // gpu0 against the median of 688, 640 and 693 W.
        assert_eq!(rows[0].vs_peers, Some(0.003));
        // 2.9 % off: not flagged; 3.1 %: flagged.
        let mut rows = vec![row("a", 700.0, 0), row("b", 700.0, 0), row("c", 679.7, 0)];
        flag_outliers(&mut rows);
        assert!(rows.iter().all(|r| r.flag.is_none()));
        let mut rows = vec![row("a", 700.0, 0), row("b", 700.0, 0), row("c", 678.3, 0)];
        flag_outliers(&mut rows);
        let f = rows[2].flag.as_ref().expect("flagged");
        assert!(f.limiters.is_empty() && f.other_limit.is_none(), "{f}");
        // Idle GPUs 5 W apart (4 %): under the 10 W floor, not flagged.
        let mut rows = vec![row("a", 119.0, 0), row("b", 124.0, 0), row("c", 124.0, 0)];
        flag_outliers(&mut rows);
        assert!(rows.iter().all(|r| r.flag.is_none()), "{rows:?}");
        assert_eq!(rows[0].vs_peers, Some(-0.04));
    }
}
