//! `observe`: live per-GPU and node power, no load.

use crate::cli::ObserveArgs;
use anyhow::{anyhow, Result};
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
        println!("{}: {} {} (limit {:.0} W)", id.key, id.uuid, id.name, id.power_limit_w);
        sources.push(NvmlSource::new(nvml.clone(), id));
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
    let end = clock.now_ns() + (a.seconds * 1e9) as i64;
    let mut last_print = 0i64;
    let mut latest = vec![(f64::NAN, f64::NAN); sources.len()];
    while clock.now_ns() < end {
        let now = clock.now_ns();
        for (i, s) in sources.iter_mut().enumerate() {
            let mut samples = s.drain_power(now).map_err(|e| anyhow!("{e}"))?;
            samples.extend(s.read_fields(now).map_err(|e| anyhow!("{e}"))?);
            for x in &samples {
                match x.instrument {
                    Instrument::BufferedW => latest[i].0 = x.value,
                    Instrument::InstantW => latest[i].1 = x.value,
                    _ => {}
                }
                if let Some(f) = csv.as_mut() {
                    writeln!(f, "{},gpu{i},{},{}", x.ts_ns, x.instrument.as_str(), x.value)?;
                }
            }
        }
        if now - last_print >= (a.interval_ms * 1e6) as i64 {
            last_print = now;
            let per: Vec<String> = latest.iter().enumerate().map(|(i, (b, inst))| format!("gpu{i} {b:7.1} W (instant {inst:7.1})")).collect();
            let node: f64 = latest.iter().map(|l| l.0).sum();
            println!("{}  node {node:8.1} W", per.join("  "));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    if let Some(mut f) = csv {
        f.flush()?;
    }
    Ok(0)
}
