//! A scrape: the live state in the Prometheus text exposition format
//! (version 0.0.4), encoded by `prometheus-client` from a snapshot taken
//! at the scrape. Names carry their base unit, counters end in `_total`,
//! string state is an `_info` metric, and GPU labels are spelled as
//! NVIDIA's dcgm-exporter spells them (`gpu`, `UUID`, `Hostname`,
//! `modelName`) so that dashboards join with `DCGM_FI_DEV_POWER_USAGE`.

use crate::state::{Live, POWER, Snapshot};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

/// One label set: (name, value) pairs.
type Labels = Vec<(&'static str, String)>;

/// Run-clock ns as Unix seconds.
fn seconds(ns: i64) -> f64 {
    powerlab_core::units::ns_to_s(ns)
}

/// Renders the live state as the text exposition format.
///
/// # Errors
/// Only when the encoder's formatter fails (it writes into a `String`).
pub fn render(live: &Live) -> Result<String, std::fmt::Error> {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Scrape(live.snapshot())));
    let mut out = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)?;
    Ok(out)
}

/// The `Content-Type` of what [`render`] writes.
pub(crate) const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// One scrape's snapshot, encoded on demand.
#[derive(Debug)]
struct Scrape(Snapshot);

/// Encodes one metric family: its name (a counter's without `_total`, an
/// info's without `_info`: the encoder adds them), help, type and samples.
fn family<V: Copy>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    ty: MetricType,
    samples: &[(Labels, V)],
    put: impl Fn(&mut prometheus_client::encoding::MetricEncoder, V) -> std::fmt::Result,
) -> std::fmt::Result {
    if samples.is_empty() {
        return Ok(());
    }
    let mut m = enc.encode_descriptor(name, help, None, ty)?;
    for (labels, v) in samples {
        let mut e = m.encode_family(labels)?;
        put(&mut e, *v)?;
    }
    Ok(())
}

fn gauges(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    samples: &[(Labels, f64)],
) -> std::fmt::Result {
    family(enc, name, help, MetricType::Gauge, samples, |e, v| {
        e.encode_gauge(&v)
    })
}

fn flags(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    samples: &[(Labels, bool)],
) -> std::fmt::Result {
    family(enc, name, help, MetricType::Gauge, samples, |e, v| {
        e.encode_gauge(&i64::from(v))
    })
}

fn counters(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    samples: &[(Labels, u64)],
) -> std::fmt::Result {
    family(enc, name, help, MetricType::Counter, samples, |e, v| {
        e.encode_counter::<prometheus_client::encoding::NoLabelSet, _, u64>(&v, None)
    })
}

fn info(enc: &mut DescriptorEncoder, name: &str, help: &str, labels: &Labels) -> std::fmt::Result {
    let mut m = enc.encode_descriptor(name, help, None, MetricType::Info)?;
    m.encode_info(labels)
}

/// Keeps the label set's type visible to the encoder.
fn labels(pairs: &[(&'static str, &str)]) -> Labels {
    pairs.iter().map(|(k, v)| (*k, v.to_string())).collect()
}

/// The readings of every GPU's instruments and its sampler's counts, one
/// series each, in the order of the snapshot's GPUs.
#[derive(Default)]
struct PerGpu {
    /// Each instrument's latest reading, W.
    power: Vec<(Labels, f64)>,
    /// When that reading was taken, Unix seconds.
    stamp: Vec<(Labels, f64)>,
    /// How old that reading is at the samplers' latest tick, s.
    age: Vec<(Labels, f64)>,
    /// Readings received, per instrument.
    samples: Vec<(Labels, u64)>,
    /// Spacings beyond the instrument's gap limit.
    gaps: Vec<(Labels, u64)>,
    /// The largest spacing, s.
    max_gap: Vec<(Labels, f64)>,
    /// Drains of the buffered readings.
    drains: Vec<(Labels, u64)>,
    /// Seconds since the sampler last delivered a reading.
    idle: Vec<(Labels, f64)>,
}

/// Every GPU's series, labelled (`host`: the node's hostname).
fn per_gpu(s: &Snapshot, host: &str) -> PerGpu {
    let mut out = PerGpu::default();
    for g in &s.gpus {
        let l = &g.labels;
        let id = labels(&[("gpu", &l.gpu), ("UUID", &l.uuid)]);
        out.drains.push((id.clone(), g.drains));
        out.idle.push((id.clone(), g.idle_s));
        for ((_, name), st) in POWER.iter().zip(&g.inst) {
            let full = labels(&[
                ("gpu", &l.gpu),
                ("UUID", &l.uuid),
                ("Hostname", host),
                ("modelName", &l.model),
                ("instrument", name),
            ]);
            let mut short = id.clone();
            short.push(("instrument", name.to_string()));
            if let Some((ts, w)) = st.latest {
                out.power.push((full.clone(), w));
                out.stamp.push((full, seconds(ts)));
                if let Some(now) = s.now_ns {
                    out.age.push((short.clone(), seconds((now - ts).max(0))));
                }
            }
            out.samples.push((short.clone(), st.count));
            out.gaps.push((short.clone(), st.gaps));
            out.max_gap.push((short, seconds(st.max_gap_ns)));
        }
    }
    out
}

/// The GPUs' latest readings: power, when, how old, and each sampler's
/// idle time.
fn readings(enc: &mut DescriptorEncoder, g: &PerGpu) -> std::fmt::Result {
    gauges(
        enc,
        "powerlab_gpu_power_watts",
        "The GPU's latest power reading of each instrument, W.",
        &g.power,
    )?;
    gauges(
        enc,
        "powerlab_gpu_power_reading_timestamp_seconds",
        "When that reading was taken: Unix seconds on the run's clock.",
        &g.stamp,
    )?;
    gauges(
        enc,
        "powerlab_gpu_power_reading_age_seconds",
        "How old the GPU's latest reading of each instrument is at the samplers' latest tick, s: a gap still open shows here before the next reading counts it.",
        &g.age,
    )?;
    gauges(
        enc,
        "powerlab_sampler_idle_seconds",
        "Wall-clock seconds since the GPU's sampler last delivered a reading of any instrument (since the run started, before the first): grows while a sampler is stuck or every read fails, and after the run ended.",
        &g.idle,
    )?;
    Ok(())
}

/// The node's GPUs and ranks and its summed power, when known.
fn node(enc: &mut DescriptorEncoder, s: &Snapshot, host: &str) -> std::fmt::Result {
    let node_labels = labels(&[("Hostname", host)]);
    if !s.gpus.is_empty() {
        gauges(
            enc,
            "powerlab_node_gpus",
            "The GPUs this endpoint's node power sums (this rank's, when several ranks share the node).",
            &[(node_labels.clone(), s.node_gpus as f64)],
        )?;
        gauges(
            enc,
            "powerlab_node_ranks",
            "The ranks that serve this node's power, each its own GPUs' share (1 unless a rack runs several on the node): the node's sum is complete when this many series are present.",
            &[(node_labels.clone(), s.node_ranks as f64)],
        )?;
    }
    if let Some((w, ts)) = s.node {
        gauges(
            enc,
            "powerlab_node_power_watts",
            "The node's power: the sum of every GPU's latest buffered reading at or before the stated instant, as the collator's node curve holds them, W.",
            &[(node_labels.clone(), w)],
        )?;
        gauges(
            enc,
            "powerlab_node_power_timestamp_seconds",
            "The instant the node power stands for (the earliest of the GPUs' latest buffered readings): Unix seconds on the run's clock.",
            &[(node_labels, seconds(ts))],
        )?;
    }
    Ok(())
}

/// The run's state: the current rung, progress, rungs completed,
/// interlocks, and whether it was asked to stop, started and finished.
fn run_state(enc: &mut DescriptorEncoder, s: &Snapshot) -> std::fmt::Result {
    if let Some(r) = &s.rung {
        info(
            enc,
            "powerlab_rung",
            "The rung whose window started last (absent before the first and after the run).",
            &labels(&[
                ("rung_id", &r.id.to_string()),
                ("label", &r.label),
                ("phase", &r.phase),
                ("kind", r.kind),
                ("mode", r.mode),
                ("repeat", &r.repeat.to_string()),
            ]),
        )?;
    }
    if let Some(p) = s.rung_progress {
        gauges(
            enc,
            "powerlab_rung_progress_ratio",
            "How far the current rung's window has run, 0 to 1 (the samplers' latest time).",
            &[(Labels::new(), p)],
        )?;
    }
    if let Some(p) = s.run_progress {
        gauges(
            enc,
            "powerlab_run_progress_ratio",
            "The campaign's nominal time done, 0 to 1.",
            &[(Labels::new(), p)],
        )?;
    }
    counters(
        enc,
        "powerlab_rungs_completed",
        "Rungs whose window ended.",
        &[(Labels::new(), s.rungs_completed)],
    )?;
    let tripped: Vec<(Labels, bool)> = s
        .interlocks
        .iter()
        .map(|(l, t)| (labels(&[("interlock", l)]), *t))
        .collect();
    flags(
        enc,
        "powerlab_interlock_tripped",
        "1 once the interlock (the campaign's limit of that name) tripped.",
        &tripped,
    )?;
    flags(
        enc,
        "powerlab_stop_requested",
        "1 once the run was asked to stop (a signal, fault, interlock or another node).",
        &[(Labels::new(), s.stop_requested)],
    )?;
    flags(
        enc,
        "powerlab_run_started",
        "1 once the run started (its run directory exists).",
        &[(Labels::new(), s.started)],
    )?;
    flags(
        enc,
        "powerlab_run_finished",
        "1 once the run ended: every sampler has drained and stopped, the counts are final.",
        &[(Labels::new(), s.finished)],
    )?;
    Ok(())
}

/// The samplers' counts: readings, gaps, the largest gap, drains.
fn sampler_counts(enc: &mut DescriptorEncoder, g: &PerGpu) -> std::fmt::Result {
    counters(
        enc,
        "powerlab_samples",
        "Readings received from the GPU, per instrument (the rows of its raw file).",
        &g.samples,
    )?;
    counters(
        enc,
        "powerlab_sample_gaps",
        "Spacings between consecutive readings beyond the instrument's gap limit (buffered 100 ms, instant 2x the poll period, average 2x the field period).",
        &g.gaps,
    )?;
    gauges(
        enc,
        "powerlab_sample_gap_max_seconds",
        "The largest spacing between consecutive readings, s.",
        &g.max_gap,
    )?;
    counters(
        enc,
        "powerlab_sampler_drains",
        "Drains of the driver's buffered readings by the GPU's sampler.",
        &g.drains,
    )
}

impl Collector for Scrape {
    fn encode(&self, mut enc: DescriptorEncoder) -> std::fmt::Result {
        let s = &self.0;
        let host = s.hostname.as_str();
        info(
            &mut enc,
            "powerlab_build",
            "The powerlab build serving these metrics.",
            &labels(&[("version", &s.version)]),
        )?;
        let g = per_gpu(s, host);
        readings(&mut enc, &g)?;
        node(&mut enc, s, host)?;
        run_state(&mut enc, s)?;
        sampler_counts(&mut enc, &g)
    }
}

/// Checked at compile time: the label sets are ones the encoder takes.
const _: fn(&Labels) -> &dyn EncodeLabelSet = |l| l;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::GapLimits;
    use powerlab_core::hw::GpuIdentity;
    use powerlab_core::{Instrument, Sample};

    #[test]
    fn a_scrape_names_every_family_with_dcgm_labels() {
        let live = Live::new("9.9.9");
        let g = GpuIdentity {
            key: "gpu0".into(),
            uuid: "GPU-abc".into(),
            name: "NVIDIA H200".into(),
            nvml_index: 3,
            power_limit_w: 700.0,
            power_smoothing: Default::default(),
        };
        let before = render(&live).unwrap_or_default();
        assert!(
            before.contains("powerlab_build_info{version=\"9.9.9\"} 1"),
            "{before}"
        );
        live.start_run("node-a", &[g], GapLimits::default(), || false);
        let s = |ts, instrument, value| Sample {
            ts_ns: ts,
            instrument,
            value,
        };
        live.record(
            0,
            1_750_000_000,
            true,
            &[
                s(1_500_000_000, Instrument::BufferedW, 612.5),
                s(1_750_000_000, Instrument::InstantW, 600.0),
            ],
        );
        let text = render(&live).unwrap_or_default();
        for line in [
            "# TYPE powerlab_gpu_power_watts gauge",
            "powerlab_gpu_power_watts{gpu=\"3\",UUID=\"GPU-abc\",Hostname=\"node-a\",modelName=\"NVIDIA H200\",instrument=\"buffered\"} 612.5",
            "powerlab_gpu_power_reading_timestamp_seconds{gpu=\"3\",UUID=\"GPU-abc\",Hostname=\"node-a\",modelName=\"NVIDIA H200\",instrument=\"instant\"} 1.75",
            "powerlab_node_power_watts{Hostname=\"node-a\"} 612.5",
            "powerlab_node_power_timestamp_seconds{Hostname=\"node-a\"} 1.5",
            "# TYPE powerlab_samples_total counter",
            "powerlab_samples_total{gpu=\"3\",UUID=\"GPU-abc\",instrument=\"average\"} 0",
            "powerlab_gpu_power_reading_age_seconds{gpu=\"3\",UUID=\"GPU-abc\",instrument=\"buffered\"} 0.25",
            "powerlab_node_gpus{Hostname=\"node-a\"} 1.0",
            "powerlab_node_ranks{Hostname=\"node-a\"} 1.0",
            "powerlab_sampler_drains_total{gpu=\"3\",UUID=\"GPU-abc\"} 1",
            "powerlab_interlock_tripped{interlock=\"max_node_power_w\"} 0",
            "powerlab_rungs_completed_total 0",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing `{line}` in\n{text}"
            );
        }
        assert!(!text.contains("powerlab_rung_info"), "{text}");
    }
}
