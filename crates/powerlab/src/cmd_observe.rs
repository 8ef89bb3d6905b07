//! `observe`: live per-GPU and node power, no load.

use crate::cli::ObserveArgs;
use anyhow::{Result, anyhow};
use powerlab_core::hw::{GpuIdentity, PowerSource};
use powerlab_core::{Instrument, RunClock};
use powerlab_nvml::NvmlSource;
use std::io::Write;
use std::sync::Arc;

pub fn observe(a: &ObserveArgs) -> Result<i32> {
    let nvml = Arc::new(powerlab_nvml::init_nvml().map_err(|e| anyhow!("{e}"))?);
    let n = nvml.device_count()?;
    let mut sources = Vec::new();
    for i in 0..n {
        let d = nvml.device_by_index(i)?;
        let id = GpuIdentity {
            key: format!("gpu{i}"),
            uuid: d.uuid()?,
            name: d.name()?,
            nvml_index: i,
            power_limit_w: f64::from(d.enforced_power_limit()?) / 1000.0,
        };
        outln!(
            "{}: {} {} (limit {:.0} W)",
            id.key,
            id.uuid,
            id.name,
            id.power_limit_w
        );
        sources.push(NvmlSource::new(nvml.clone(), id).map_err(|e| anyhow!("{e}"))?);
    }
    let mut csv = match &a.csv {
        Some(p) => {
            let mut f = std::io::BufWriter::new(std::fs::File::create(p)?);
            writeln!(f, "ts_ns,gpu,instrument,value")?;
            Some(f)
        }
        None => None,
    };
    let clock = RunClock::realtime();
    let cpu0 = process_cpu_s();
    let start = clock.now_ns();
    let end = start + (a.seconds * 1e9) as i64;
    let mut last_print = 0i64;
    let d = powerlab_campaign::Sampling::default();
    let ms = |v: f64| (v * 1e6) as i64;
    let (buffer_ns, fields_ns, status_ns) = (
        ms(d.buffer_interval_ms),
        ms(d.field_interval_ms),
        ms(d.status_interval_ms),
    );
    let (mut last_buffer, mut last_fields, mut last_status) =
        (i64::MIN / 2, i64::MIN / 2, i64::MIN / 2);
    let mut latest = vec![(f64::NAN, f64::NAN); sources.len()];
    while clock.now_ns() < end {
        let now = clock.now_ns();
        // The runner's sampler cadence: instant field every poll, buffer,
        // 1 s average and energy every 100 ms, status every 200 ms.
        let (do_buffer, do_fields, do_status) = (
            now - last_buffer >= buffer_ns,
            now - last_fields >= fields_ns,
            now - last_status >= status_ns,
        );
        for (i, s) in sources.iter_mut().enumerate() {
            let mut samples = vec![s.read_instant(now).map_err(|e| anyhow!("{e}"))?];
            if do_buffer {
                samples.extend(s.drain_buffered(now).map_err(|e| anyhow!("{e}"))?);
            }
            if do_fields {
                samples.extend(s.read_fields(now).map_err(|e| anyhow!("{e}"))?);
            }
            if do_status {
                samples.extend(s.read_status(now).map_err(|e| anyhow!("{e}"))?);
                for e in s.drain_events(now) {
                    outln!("EVENT {} on {}: {}", e.kind, e.gpu, e.detail);
                }
            }
            for x in &samples {
                match x.instrument {
                    Instrument::BufferedW => latest[i].0 = x.value,
                    Instrument::InstantW => latest[i].1 = x.value,
                    _ => {}
                }
                if let Some(f) = csv.as_mut() {
                    writeln!(
                        f,
                        "{},gpu{i},{},{}",
                        x.ts_ns,
                        x.instrument.as_str(),
                        x.value
                    )?;
                }
            }
        }
        if do_buffer {
            last_buffer = now;
        }
        if do_fields {
            last_fields = now;
        }
        if do_status {
            last_status = now;
        }
        if now - last_print >= (a.interval_ms * 1e6) as i64 {
            last_print = now;
            let per: Vec<String> = latest
                .iter()
                .enumerate()
                .map(|(i, (b, inst))| format!("gpu{i} {b:7.1} W (instant {inst:7.1})"))
                .collect();
            let node: f64 = latest.iter().map(|l| l.0).sum();
            outln!("{}  node {node:8.1} W", per.join("  "));
        }
        let poll = std::time::Duration::from_nanos(ms(d.poll_interval_ms) as u64);
        std::thread::sleep(poll.saturating_sub(std::time::Duration::from_nanos(
            (clock.now_ns() - now).max(0) as u64,
        )));
    }
    if let Some(mut f) = csv {
        f.flush()?;
    }
    if let (Some(c0), Some(c1)) = (cpu0, process_cpu_s()) {
        let wall = (clock.now_ns() - start) as f64 / 1e9;
        let per_gpu = 100.0 * (c1 - c0) / wall / sources.len().max(1) as f64;
        outln!(
            "sampler CPU: {:.2} s over {wall:.1} s for {} GPU(s) = {per_gpu:.2}% of one core per GPU",
            c1 - c0,
            sources.len()
        );
        print_call_costs(&sources, wall);
    }
    Ok(0)
}

/// Where the sampler's time goes: calls per second and µs per call, per GPU.
fn print_call_costs(sources: &[NvmlSource], wall_s: f64) {
    let mut total: std::collections::BTreeMap<String, (u64, u64)> =
        std::collections::BTreeMap::new();
    for s in sources {
        for c in s.call_costs() {
            let e = total.entry(c.call).or_default();
            e.0 += c.count;
            e.1 += c.total_ns;
        }
    }
    let n = sources.len().max(1) as f64;
    outln!("NVML read costs (per GPU):");
    for (call, (count, ns)) in &total {
        let per_call_us = if *count > 0 {
            *ns as f64 / *count as f64 / 1e3
        } else {
            0.0
        };
        outln!(
            "  {call:<32} {:8.1} calls/s  {per_call_us:8.1} µs/call  {:6.2}% of a core",
            *count as f64 / wall_s / n,
            100.0 * *ns as f64 / 1e9 / wall_s / n
        );
    }
}

/// User + system CPU seconds of this process (from /proc/self/stat).
fn process_cpu_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the command name: state is field 3; utime 14 and stime 15 (1-based) → indices 11, 12 here.
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}
