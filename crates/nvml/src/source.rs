//! The NVML power source of one GPU.
//!
//! Buffered samples come from `nvmlDeviceGetSamples(NVML_TOTAL_POWER_SAMPLES)`
//! with the timestamp of the last sample seen, so every reading in the
//! driver's ring buffer is taken exactly once with its own timestamp (CPU
//! realtime, µs). The instant (186) and average (185) fields are polled;
//! their `timestamp` is the read time, not the sensor's update time.

use nvml_wrapper::enum_wrappers::device::{Clock, PerformancePolicy, Sampling, TemperatureSensor};
use nvml_wrapper::enums::device::SampleValue;
use nvml_wrapper::error::NvmlError as WrapErr;
use nvml_wrapper::structs::device::FieldId;
use nvml_wrapper::Nvml;
use powerlab_core::hw::{DeviceEvent, GpuIdentity, HwError, PowerSource};
use powerlab_core::{EpochNs, Instrument, Sample};
use std::sync::Arc;

/// `NVML_FI_DEV_POWER_AVERAGE`.
pub const FIELD_POWER_AVERAGE: u32 = 185;
/// `NVML_FI_DEV_POWER_INSTANT`.
pub const FIELD_POWER_INSTANT: u32 = 186;
/// `NVML_FI_DEV_MEMORY_TEMP`.
pub const FIELD_MEMORY_TEMP: u32 = 82;

/// Reads one GPU through NVML.
pub struct NvmlSource {
    nvml: Arc<Nvml>,
    id: GpuIdentity,
    last_seen_us: Option<u64>,
    xid: Option<crate::xid::XidListener>,
    /// Buffered reads that returned no new sample.
    pub empty_reads: u64,
}

fn value_f64(v: &SampleValue) -> f64 {
    match v {
        SampleValue::F64(x) => *x,
        SampleValue::U32(x) => f64::from(*x),
        SampleValue::U64(x) => *x as f64,
        SampleValue::I64(x) => *x as f64,
    }
}

impl NvmlSource {
    /// A source for the GPU with this identity (NVML index inside).
    pub fn new(nvml: Arc<Nvml>, id: GpuIdentity) -> Self {
        NvmlSource { nvml, id, last_seen_us: None, xid: None, empty_reads: 0 }
    }

    fn classify(&self, what: &str, e: WrapErr) -> HwError {
        let detail = format!("{what}: {e}");
        match e {
            WrapErr::GpuLost | WrapErr::Uninitialized | WrapErr::NotFound => HwError::DeviceFailed { gpu: self.id.uuid.clone(), detail },
            _ => HwError::Transient { gpu: self.id.key.clone(), detail },
        }
    }

    fn field(&self, dev: &nvml_wrapper::Device<'_>, id: u32) -> Result<f64, HwError> {
        let vals = dev.field_values_for(&[FieldId(id)]).map_err(|e| self.classify(&format!("field {id}"), e))?;
        match vals.into_iter().next() {
            Some(Ok(s)) => s.value.map(|v| value_f64(&v)).map_err(|e| self.classify(&format!("field {id} value"), e)),
            Some(Err(e)) => Err(self.classify(&format!("field {id}"), e)),
            None => Err(HwError::Transient { gpu: self.id.key.clone(), detail: format!("field {id}: no value") }),
        }
    }
}

impl PowerSource for NvmlSource {
    fn identity(&self) -> &GpuIdentity {
        &self.id
    }

    fn drain_power(&mut self, now_ns: EpochNs) -> Result<Vec<Sample>, HwError> {
        let nvml = self.nvml.clone();
        let dev = nvml.device_by_index(self.id.nvml_index).map_err(|e| self.classify("device handle", e))?;
        let mut out = Vec::new();
        match dev.samples(Sampling::Power, self.last_seen_us) {
            Ok(samples) => {
                for s in samples {
                    if self.last_seen_us.is_some_and(|l| s.timestamp <= l) {
                        continue;
                    }
                    self.last_seen_us = Some(s.timestamp);
                    // Power samples are in mW.
                    out.push(Sample { ts_ns: s.timestamp as i64 * 1000, instrument: Instrument::BufferedW, value: value_f64(&s.value) / 1000.0 });
                }
            }
            // NotFound: no sample newer than the last seen (nothing new yet).
            Err(WrapErr::NotFound) => self.empty_reads += 1,
            Err(e) => return Err(self.classify("nvmlDeviceGetSamples", e)),
        }
        let instant_mw = self.field(&dev, FIELD_POWER_INSTANT)?;
        out.push(Sample { ts_ns: now_ns, instrument: Instrument::InstantW, value: instant_mw / 1000.0 });
        Ok(out)
    }

    fn read_fields(&mut self, now_ns: EpochNs) -> Result<Vec<Sample>, HwError> {
        let nvml = self.nvml.clone();
        let dev = nvml.device_by_index(self.id.nvml_index).map_err(|e| self.classify("device handle", e))?;
        let avg_mw = self.field(&dev, FIELD_POWER_AVERAGE)?;
        let energy_mj = dev.total_energy_consumption().map_err(|e| self.classify("energy", e))?;
        Ok(vec![
            Sample { ts_ns: now_ns, instrument: Instrument::AverageW, value: avg_mw / 1000.0 },
            Sample { ts_ns: now_ns, instrument: Instrument::EnergyMj, value: energy_mj as f64 },
        ])
    }

    fn read_status(&mut self, now_ns: EpochNs) -> Result<Vec<Sample>, HwError> {
        let nvml = self.nvml.clone();
        let dev = nvml.device_by_index(self.id.nvml_index).map_err(|e| self.classify("device handle", e))?;
        let mut out = Vec::new();
        let mut push = |i: Instrument, v: f64| out.push(Sample { ts_ns: now_ns, instrument: i, value: v });
        push(Instrument::SmClockMhz, f64::from(dev.clock_info(Clock::SM).map_err(|e| self.classify("SM clock", e))?));
        push(Instrument::MemClockMhz, f64::from(dev.clock_info(Clock::Memory).map_err(|e| self.classify("memory clock", e))?));
        push(Instrument::GpuTempC, f64::from(dev.temperature(TemperatureSensor::Gpu).map_err(|e| self.classify("temperature", e))?));
        if let Ok(t) = self.field(&dev, FIELD_MEMORY_TEMP) {
            push(Instrument::MemTempC, t);
        }
        // Raw bits, tested later with `contains`, never by equality.
        let bits = dev.current_throttle_reasons().map(|r| r.bits()).map_err(|e| self.classify("clock-event reasons", e))?;
        push(Instrument::ClockEvents, bits as f64);
        push(Instrument::PowerLimitW, f64::from(dev.enforced_power_limit().map_err(|e| self.classify("enforced limit", e))?) / 1000.0);
        // The reasons' time counters: how long clocks were held down, cumulative.
        if let Ok(v) = dev.violation_status(PerformancePolicy::Power) {
            push(Instrument::PowerCapTimeNs, v.violation_time as f64);
        }
        if let Ok(v) = dev.violation_status(PerformancePolicy::Thermal) {
            push(Instrument::ThermalCapTimeNs, v.violation_time as f64);
        }
        Ok(out)
    }

    fn drain_events(&mut self, now_ns: EpochNs) -> Vec<DeviceEvent> {
        let mut out = Vec::new();
        if self.xid.is_none() {
            self.xid = crate::xid::XidListener::new(&self.nvml, self.id.nvml_index);
        }
        if let Some(l) = &self.xid {
            for (code, data) in l.poll(&self.nvml) {
                out.push(DeviceEvent {
                    ts_ns: now_ns,
                    gpu: self.id.key.clone(),
                    kind: "xid".into(),
                    detail: format!("Xid {data} (event type 0x{code:x}) on {}", self.id.uuid),
                    fatal: true,
                });
            }
        }
        out
    }
}
