//! `observe`: live per-GPU and node power, no load. Reads the GPUs asked
//! for (by NVML index or UUID) at the runner's sampler cadence, prints a
//! line (or a JSON object) per interval, and writes every reading in the
//! raw files' schema; Ctrl-C or SIGTERM ends it with the file flushed.

use crate::cli::ObserveArgs;
use anyhow::{Context, Result, anyhow};
use powerlab_core::hw::{GpuIdentity, PowerSource};
use powerlab_core::units::{
    Watts, ms_to_ns_trunc, ns_f64_to_s, ns_f64_to_us, ns_to_s, secs_to_ns_trunc,
};
use powerlab_core::{Instrument, RunClock, Sample};
use powerlab_nvml::NvmlSource;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::Arc;

/// Which of `n` GPUs `wanted` names (NVML index or UUID; all when empty),
/// in NVML order. `uuid_of(i)` is GPU i's UUID.
///
/// # Errors
///
/// A name that is neither an index below `n` nor the UUID of a GPU.
fn select_gpus(
    wanted: &[String],
    n: u32,
    uuid_of: &dyn Fn(u32) -> Option<String>,
) -> Result<Vec<u32>> {
    if wanted.is_empty() {
        return Ok((0..n).collect());
    }
    let mut picked = Vec::new();
    for w in wanted {
        let w = w.trim();
        let i = match w.parse::<u32>() {
            Ok(i) if i < n => i,
            Ok(i) => anyhow::bail!("--gpus {w}: this machine has GPUs 0 to {} ({n} in all), no GPU {i}", n.saturating_sub(1)),
            Err(_) => (0..n)
                .find(|&i| uuid_of(i).is_some_and(|u| u.eq_ignore_ascii_case(w)))
                .ok_or_else(|| anyhow!("--gpus {w}: no GPU on this machine has that UUID (`nvidia-smi -L` lists them)"))?,
        };
        if !picked.contains(&i) {
            picked.push(i);
        }
    }
    picked.sort_unstable();
    Ok(picked)
}

pub fn observe(a: &ObserveArgs) -> Result<i32> {
    let mut sources = open_sources(a)?;
    let node = powerlab_cuda::node::hostname();
    let mut csv = open_csv(a)?;
    let clock = RunClock::realtime();
    let cpu0 = process_cpu_s();
    let start = clock.now_ns();
    // With --count the printed lines end it, not the time.
    let end = match a.count {
        Some(_) => i64::MAX,
        None => start + secs_to_ns_trunc(a.seconds),
    };
    let mut printed = 0u64;
    crate::node::signals::watch_in_background("observe-signals");
    let mut last_print = 0i64;
    let d = powerlab_campaign::Sampling::default();
    let mut cadence = Cadence::new(&d);
    let mut latest = vec![(f64::NAN, f64::NAN); sources.len()];
    while clock.now_ns() < end
        && a.count.is_none_or(|c| printed < c)
        && crate::exit::STOP_SIGNAL.load(std::sync::atomic::Ordering::Relaxed) == 0
    {
        let now = clock.now_ns();
        let due = cadence.due(now);
        for (i, s) in sources.iter_mut().enumerate() {
            let samples = read_gpu(s, now, due, a.json)?;
            record(
                &samples,
                &mut latest[i],
                csv.as_mut(),
                &node,
                &s.identity().key,
            )?;
        }
        cadence.ran(now, due);
        if now - last_print >= ms_to_ns_trunc(a.interval_ms) {
            last_print = now;
            printed += 1;
            print_line(&sources, &latest, &node, now, a.json);
        }
        let poll = std::time::Duration::from_nanos(ms_to_ns_trunc(d.poll_interval_ms) as u64);
        std::thread::sleep(poll.saturating_sub(std::time::Duration::from_nanos(
            (clock.now_ns() - now).max(0) as u64,
        )));
    }
    finish(a, csv, &sources, (&clock, start), cpu0)
}

/// Opens an NVML source on each GPU asked for; without `--json`, prints a
/// line naming each.
///
/// # Errors
///
/// NVML does not load, a GPU named is not there, or a GPU's identity
/// cannot be read.
fn open_sources(a: &ObserveArgs) -> Result<Vec<NvmlSource>> {
    // observe has no simulated node: NVML's own advice (`--backend sim`)
    // is for run and calibrate, and observe refuses it.
    let nvml = Arc::new(powerlab_nvml::init_nvml().map_err(|e| match e {
        powerlab_nvml::NvmlError::Unavailable { detail } => anyhow!(
            "NVML could not be initialised ({detail}): observe reads real GPUs only (it has no simulated node); run it on a GPU node with the NVIDIA driver (libnvidia-ml.so.1) installed"
        ),
    })?);
    let n = nvml.device_count()?;
    let uuid_of = |i: u32| nvml.device_by_index(i).ok().and_then(|d| d.uuid().ok());
    let picked = select_gpus(&a.gpus, n, &uuid_of)?;
    let mut sources = Vec::new();
    for i in picked {
        let d = nvml.device_by_index(i)?;
        let id = GpuIdentity {
            key: format!("gpu{i}"),
            uuid: d.uuid()?,
            name: d.name()?,
            nvml_index: i,
            power_limit_w: Watts::from_mw(d.enforced_power_limit()?).0,
            power_smoothing: powerlab_nvml::read_power_smoothing(&nvml, &d),
        };
        if !a.json {
            outln!(
                "{}: {} {} (limit {:.0} W)",
                id.key,
                id.uuid,
                id.name,
                id.power_limit_w
            );
        }
        sources.push(NvmlSource::new(nvml.clone(), id).map_err(|e| anyhow!("{e}"))?);
    }
    Ok(sources)
}

/// The `--csv` file, its header written.
///
/// # Errors
///
/// The file cannot be created or written.
fn open_csv(a: &ObserveArgs) -> Result<Option<BufWriter<File>>> {
    let Some(p) = &a.csv else {
        return Ok(None);
    };
    let mut f =
        BufWriter::new(File::create(p).with_context(|| format!("creating {}", p.display()))?);
    writeln!(f, "{}", powerlab_rundir::raw::RAW_HEADER)?;
    Ok(Some(f))
}

/// Which reads are due in one poll (the instant field always is).
#[derive(Clone, Copy)]
struct Due {
    buffer: bool,
    fields: bool,
    status: bool,
}

/// The runner's sampler cadence: instant field every poll, buffer, 1 s
/// average and energy every 100 ms, status every 200 ms.
struct Cadence {
    buffer_ns: i64,
    fields_ns: i64,
    status_ns: i64,
    last_buffer: i64,
    last_fields: i64,
    last_status: i64,
}

impl Cadence {
    fn new(d: &powerlab_campaign::Sampling) -> Self {
        Cadence {
            buffer_ns: ms_to_ns_trunc(d.buffer_interval_ms),
            fields_ns: ms_to_ns_trunc(d.field_interval_ms),
            status_ns: ms_to_ns_trunc(d.status_interval_ms),
            last_buffer: i64::MIN / 2,
            last_fields: i64::MIN / 2,
            last_status: i64::MIN / 2,
        }
    }

    fn due(&self, now: i64) -> Due {
        Due {
            buffer: now - self.last_buffer >= self.buffer_ns,
            fields: now - self.last_fields >= self.fields_ns,
            status: now - self.last_status >= self.status_ns,
        }
    }

    /// The reads `due` named ran at `now`.
    fn ran(&mut self, now: i64, due: Due) {
        if due.buffer {
            self.last_buffer = now;
        }
        if due.fields {
            self.last_fields = now;
        }
        if due.status {
            self.last_status = now;
        }
    }
}

/// One GPU's reads in one poll; device events are printed as they come.
///
/// # Errors
///
/// A read fails.
fn read_gpu(s: &mut NvmlSource, now: i64, due: Due, json: bool) -> Result<Vec<Sample>> {
    let mut samples = vec![s.read_instant(now).map_err(|e| anyhow!("{e}"))?];
    if due.buffer {
        samples.extend(s.drain_buffered(now).map_err(|e| anyhow!("{e}"))?);
    }
    if due.fields {
        samples.extend(s.read_fields(now).map_err(|e| anyhow!("{e}"))?);
    }
    if due.status {
        samples.extend(s.read_status(now).map_err(|e| anyhow!("{e}"))?);
        for e in s.drain_events(now) {
            if json {
                outln!(
                    "{}",
                    serde_json::json!({ "ts_ns": now, "event": e.kind, "gpu": e.gpu, "detail": e.detail })
                );
            } else {
                outln!("EVENT {} on {}: {}", e.kind, e.gpu, e.detail);
            }
        }
    }
    Ok(samples)
}

/// Keeps a GPU's latest (buffered, instant) power and appends every
/// reading to the CSV, in the raw files' schema.
///
/// # Errors
///
/// The CSV cannot be written.
fn record(
    samples: &[Sample],
    latest: &mut (f64, f64),
    mut csv: Option<&mut BufWriter<File>>,
    node: &str,
    key: &str,
) -> Result<()> {
    for x in samples {
        match x.instrument {
            Instrument::BufferedW => latest.0 = x.value,
            Instrument::InstantW => latest.1 = x.value,
            _ => {}
        }
        if let Some(f) = csv.as_mut() {
            writeln!(
                f,
                "{},{node},{key},{},{}",
                x.ts_ns,
                x.instrument.as_str(),
                x.value
            )?;
        }
    }
    Ok(())
}

/// One line (or JSON object) of per-GPU and node power.
fn print_line(sources: &[NvmlSource], latest: &[(f64, f64)], node: &str, now: i64, json: bool) {
    let node_w: f64 = latest.iter().map(|l| l.0).sum();
    if json {
        let gpus: Vec<serde_json::Value> = sources
            .iter()
            .zip(latest)
            .map(|(s, (b, inst))| {
                serde_json::json!({
                    "gpu": s.identity().key,
                    "uuid": s.identity().uuid,
                    "buffered_w": finite(*b),
                    "instant_w": finite(*inst),
                })
            })
            .collect();
        outln!(
            "{}",
            serde_json::json!({ "ts_ns": now, "node": node, "gpus": gpus, "node_buffered_w": finite(node_w) })
        );
    } else {
        let per: Vec<String> = sources
            .iter()
            .zip(latest)
            .map(|(s, (b, inst))| format!("{} {b:7.1} W (instant {inst:7.1})", s.identity().key))
            .collect();
        outln!("{}  node {node_w:8.1} W", per.join("  "));
    }
}

/// Flushes the CSV and, without `--json`, prints the sampler's CPU cost
/// since `start` and how it ended. Returns the exit code: 0, or the interrupted code
/// when a signal stopped it.
///
/// # Errors
///
/// The CSV cannot be flushed.
fn finish(
    a: &ObserveArgs,
    csv: Option<BufWriter<File>>,
    sources: &[NvmlSource],
    (clock, start): (&RunClock, i64),
    cpu0: Option<f64>,
) -> Result<i32> {
    if let Some(mut f) = csv {
        f.flush()?;
    }
    let signo = crate::exit::STOP_SIGNAL.load(std::sync::atomic::Ordering::Relaxed);
    let code = if signo == 0 {
        0
    } else {
        crate::exit::interrupted()
    };
    if a.json {
        return Ok(code);
    }
    if let (Some(c0), Some(c1)) = (cpu0, process_cpu_s()) {
        let wall = ns_to_s(clock.now_ns() - start);
        let per_gpu = 100.0 * (c1 - c0) / wall / sources.len().max(1) as f64;
        outln!(
            "sampler CPU: {:.2} s over {wall:.1} s for {} GPU(s) = {per_gpu:.2}% of one core per GPU",
            c1 - c0,
            sources.len()
        );
        print_call_costs(sources, wall);
    }
    if signo != 0 {
        outln!("stopped by signal {signo}; every reading taken is in the CSV");
    }
    Ok(code)
}

/// A reading as JSON: `null` until the instrument has answered.
fn finite(v: f64) -> serde_json::Value {
    if v.is_finite() {
        serde_json::json!(v)
    } else {
        serde_json::Value::Null
    }
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
            ns_f64_to_us(*ns as f64 / *count as f64)
        } else {
            0.0
        };
        outln!(
            "  {call:<32} {:8.1} calls/s  {per_call_us:8.1} µs/call  {:6.2}% of a core",
            *count as f64 / wall_s / n,
            ns_f64_to_s(100.0 * *ns as f64) / wall_s / n
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

#[cfg(test)]
mod tests {
    use super::select_gpus;

    fn uuid(i: u32) -> Option<String> {
        Some(format!("GPU-{i:04}"))
    }

    #[test]
    fn gpus_are_picked_by_index_or_uuid_in_nvml_order() {
        let all = select_gpus(&[], 4, &uuid).unwrap();
        assert_eq!(all, vec![0, 1, 2, 3]);
        let some = select_gpus(
            &["GPU-0003".into(), "1".into(), "gpu-0003".into()],
            4,
            &uuid,
        )
        .unwrap();
        assert_eq!(some, vec![1, 3]);
    }

    #[test]
    fn a_gpu_that_is_not_there_is_refused_by_name() {
        let e = select_gpus(&["4".into()], 4, &uuid)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no GPU 4") && e.contains("0 to 3"), "{e}");
        let e = select_gpus(&["GPU-9999".into()], 4, &uuid)
            .unwrap_err()
            .to_string();
        assert!(e.contains("GPU-9999") && e.contains("UUID"), "{e}");
    }
}
