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
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings::nvmlDevice_t;
use powerlab_core::hw::{CallCost, DeviceEvent, GpuIdentity, HwError, PowerSource};
use powerlab_core::units::NS_PER_S;
use powerlab_core::{EpochNs, Instrument, Sample};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// NVML field id of the 1 s average power (`NVML_FI_DEV_POWER_AVERAGE`).
pub const FIELD_POWER_AVERAGE: u32 = 185;
/// NVML field id of the instant power (`NVML_FI_DEV_POWER_INSTANT`).
pub const FIELD_POWER_INSTANT: u32 = 186;
/// Period of the reads that cost milliseconds each (energy counter,
/// violation counters); both are cumulative counters.
pub const SLOW_READ_NS: EpochNs = NS_PER_S;

/// NVML field id of the HBM temperature (`NVML_FI_DEV_MEMORY_TEMP`).
pub const FIELD_MEMORY_TEMP: u32 = 82;

/// A raw NVML device handle that may move to another thread with its source.
struct RawDevice(nvmlDevice_t);

// SAFETY: NVML device handles are opaque and valid on any thread for the
// library's lifetime; the source that holds one also holds that library
// (`NvmlSource::nvml`), so the handle never outlives it.
#[allow(unsafe_code)]
unsafe impl Send for RawDevice {}

/// Reads one GPU through NVML.
pub struct NvmlSource {
    nvml: Arc<Nvml>,
    id: GpuIdentity,
    /// The raw device handle, looked up once.
    handle: RawDevice,
    last_seen_us: Option<u64>,
    /// The value of that last buffered reading, W.
    last_seen_w: f64,
    xid: Option<crate::xid::XidListener>,
    costs: BTreeMap<&'static str, (u64, u64)>,
    last_energy_ns: Option<EpochNs>,
    last_violations_ns: Option<EpochNs>,
    /// Buffered reads that returned no new sample.
    pub empty_reads: u64,
    /// Buffered readings dropped as the previous one re-stamped.
    restamped: u64,
}

/// How far apart the driver may stamp one buffered sample on two reads,
/// µs. It handed a later read the same sample (same value) stamped 0.1 to
/// 0.7 ms later (H200, driver 580: 9 times in 342,000 readings of the
/// committed runs, and in an independent drain), while distinct samples
/// are at least 6.5 ms apart.
pub const RESTAMP_US: u64 = 2_000;

/// Whether a buffered reading is the last one seen again, stamped later.
pub fn restamped(last: Option<(u64, f64)>, ts_us: u64, value_w: f64) -> bool {
    last.is_some_and(|(l, w)| ts_us > l && ts_us - l <= RESTAMP_US && w == value_w)
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
    ///
    /// # Errors
    ///
    /// Returns [`HwError::DeviceFailed`] if NVML has no device handle for
    /// `id.nvml_index` (an index out of range, or a GPU that was lost).
    pub fn new(nvml: Arc<Nvml>, id: GpuIdentity) -> Result<Self, HwError> {
        let handle = match nvml.device_by_index(id.nvml_index) {
            // SAFETY: the raw handle is only used with this same `Nvml`, which the source keeps alive.
            #[allow(unsafe_code)]
            Ok(d) => RawDevice(unsafe { d.handle() }),
            Err(e) => {
                return Err(HwError::DeviceFailed {
                    gpu: id.uuid.clone(),
                    detail: format!("NVML device handle of index {}: {e}", id.nvml_index),
                });
            }
        };
        Ok(NvmlSource {
            nvml,
            id,
            handle,
            last_seen_us: None,
            last_seen_w: f64::NAN,
            xid: None,
            costs: BTreeMap::new(),
            last_energy_ns: None,
            last_violations_ns: None,
            empty_reads: 0,
            restamped: 0,
        })
    }

    /// Runs one timed NVML read against the cached device handle.
    fn timed<T>(
        &mut self,
        call: &'static str,
        f: impl FnOnce(&Device<'_>) -> Result<T, WrapErr>,
    ) -> Result<T, HwError> {
        let t0 = Instant::now();
        // SAFETY: `handle` came from this `Nvml` instance, which `self.nvml`
        // keeps alive; NVML device handles stay valid until shutdown.
        #[allow(unsafe_code)]
        let dev = unsafe { Device::new(self.handle.0, &self.nvml) };
        let r = f(&dev);
        let e = self.costs.entry(call).or_insert((0, 0));
        e.0 += 1;
        e.1 += t0.elapsed().as_nanos() as u64;
        r.map_err(|e| self.classify(call, e))
    }

    fn classify(&self, what: &str, e: WrapErr) -> HwError {
        let detail = format!("{what}: {e}");
        match e {
            WrapErr::GpuLost | WrapErr::Uninitialized | WrapErr::NotFound => {
                HwError::DeviceFailed {
                    gpu: self.id.uuid.clone(),
                    detail,
                }
            }
            _ => HwError::Transient {
                gpu: self.id.key.clone(),
                detail,
            },
        }
    }

    fn field(&mut self, call: &'static str, id: u32) -> Result<f64, HwError> {
        let vals = self.timed(call, |d| d.field_values_for(&[FieldId(id)]))?;
        match vals.into_iter().next() {
            Some(Ok(s)) => s
                .value
                .map(|v| value_f64(&v))
                .map_err(|e| self.classify(call, e)),
            Some(Err(e)) => Err(self.classify(call, e)),
            None => Err(HwError::Transient {
                gpu: self.id.key.clone(),
                detail: format!("{call}: no value"),
            }),
        }
    }
}

impl PowerSource for NvmlSource {
    fn identity(&self) -> &GpuIdentity {
        &self.id
    }

    fn drain_buffered(&mut self, _now_ns: EpochNs) -> Result<Vec<Sample>, HwError> {
        let last = self.last_seen_us;
        let mut out = Vec::new();
        // NotFound: no sample newer than the last seen (nothing new yet).
        let samples = match self.timed("nvmlDeviceGetSamples", |d| {
            match d.samples(Sampling::Power, last) {
                Err(WrapErr::NotFound) => Ok(None),
                other => other.map(Some),
            }
        })? {
            Some(s) => s,
            None => {
                self.empty_reads += 1;
                return Ok(out);
            }
        };
        for s in samples {
            if self.last_seen_us.is_some_and(|l| s.timestamp <= l) {
                continue;
            }
            // Power samples are in mW.
            let w = value_f64(&s.value) / 1000.0;
            let again = restamped(
                self.last_seen_us.map(|l| (l, self.last_seen_w)),
                s.timestamp,
                w,
            );
            self.last_seen_us = Some(s.timestamp);
            self.last_seen_w = w;
            if again {
                self.restamped += 1;
                continue;
            }
            out.push(Sample {
                ts_ns: s.timestamp as i64 * 1000,
                instrument: Instrument::BufferedW,
                value: w,
            });
        }
        Ok(out)
    }

    fn read_instant(&mut self, now_ns: EpochNs) -> Result<Sample, HwError> {
        let instant_mw = self.field("field 186 (instant power)", FIELD_POWER_INSTANT)?;
        Ok(Sample {
            ts_ns: now_ns,
            instrument: Instrument::InstantW,
            value: instant_mw / 1000.0,
        })
    }

    fn repeats_dropped(&self) -> u64 {
        self.restamped
    }

    fn call_costs(&self) -> Vec<CallCost> {
        self.costs
            .iter()
            .map(|(k, (n, ns))| CallCost {
                call: (*k).to_string(),
                count: *n,
                total_ns: *ns,
            })
            .collect()
    }

    fn read_fields(&mut self, now_ns: EpochNs) -> Result<Vec<Sample>, HwError> {
        let avg_mw = self.field("field 185 (average power)", FIELD_POWER_AVERAGE)?;
        let mut out = vec![Sample {
            ts_ns: now_ns,
            instrument: Instrument::AverageW,
            value: avg_mw / 1000.0,
        }];
        // The energy counter costs ~4 ms per read on H200 (measured with
        // `observe`): it is cumulative, so reading it once a second loses
        // nothing but the resolution of power derived from it.
        if self
            .last_energy_ns
            .is_none_or(|t| now_ns - t >= SLOW_READ_NS)
        {
            let energy_mj = self.timed("energy counter", |d| d.total_energy_consumption())? as f64;
            self.last_energy_ns = Some(now_ns);
            out.push(Sample {
                ts_ns: now_ns,
                instrument: Instrument::EnergyMj,
                value: energy_mj,
            });
        }
        Ok(out)
    }

    fn read_status(&mut self, now_ns: EpochNs) -> Result<Vec<Sample>, HwError> {
        let mut out = Vec::new();
        let mut push = |i: Instrument, v: f64| {
            out.push(Sample {
                ts_ns: now_ns,
                instrument: i,
                value: v,
            })
        };
        push(
            Instrument::SmClockMhz,
            f64::from(self.timed("SM clock", |d| d.clock_info(Clock::SM))?),
        );
        push(
            Instrument::MemClockMhz,
            f64::from(self.timed("memory clock", |d| d.clock_info(Clock::Memory))?),
        );
        push(
            Instrument::GpuTempC,
            f64::from(self.timed("GPU temperature", |d| d.temperature(TemperatureSensor::Gpu))?),
        );
        if let Ok(t) = self.field("field 82 (memory temperature)", FIELD_MEMORY_TEMP) {
            push(Instrument::MemTempC, t);
        }
        // Raw bits, tested later with `contains`, never by equality.
        let bits = self.timed("clock-event reasons", |d| {
            d.current_throttle_reasons().map(|r| r.bits())
        })?;
        push(Instrument::ClockEvents, bits as f64);
        push(
            Instrument::PowerLimitW,
            f64::from(self.timed("enforced limit", |d| d.enforced_power_limit())?) / 1000.0,
        );
        // The reasons' time counters: how long clocks were held down,
        // cumulative (~0.8 ms per read on H200: once a second).
        if self
            .last_violations_ns
            .is_none_or(|t| now_ns - t >= SLOW_READ_NS)
        {
            self.last_violations_ns = Some(now_ns);
            if let Ok(v) = self.timed("violation counter (power)", |d| {
                d.violation_status(PerformancePolicy::Power)
            }) {
                out.push(Sample {
                    ts_ns: now_ns,
                    instrument: Instrument::PowerCapTimeNs,
                    value: v.violation_time as f64,
                });
            }
            if let Ok(v) = self.timed("violation counter (thermal)", |d| {
                d.violation_status(PerformancePolicy::Thermal)
            }) {
                out.push(Sample {
                    ts_ns: now_ns,
                    instrument: Instrument::ThermalCapTimeNs,
                    value: v.violation_time as f64,
                });
            }
        }
        Ok(out)
    }

    fn drain_events(&mut self, now_ns: EpochNs) -> Vec<DeviceEvent> {
        let mut out = Vec::new();
        if self.xid.is_none() {
            self.xid = crate::xid::XidListener::new(&self.nvml, self.id.nvml_index);
        }
        let t0 = Instant::now();
        let polled = self.xid.as_ref().map(|l| l.poll()).unwrap_or_default();
        let e = self.costs.entry("event set (Xid)").or_insert((0, 0));
        e.0 += 1;
        e.1 += t0.elapsed().as_nanos() as u64;
        {
            for (code, data) in polled {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_stamped_again_is_told_from_the_next_one() {
        let last = Some((1_000_000, 80.538));
        // Seen in committed runs: the same value 182 µs later.
        assert!(restamped(last, 1_000_182, 80.538));
        assert!(restamped(last, 1_000_000 + RESTAMP_US, 80.538));
        // A distinct sample: later, or another value, or nothing before.
        assert!(!restamped(last, 1_000_000 + RESTAMP_US + 1, 80.538));
        assert!(!restamped(last, 1_000_182, 80.539));
        assert!(!restamped(last, 1_000_000, 80.538));
        assert!(!restamped(None, 1_000_182, 80.538));
    }
}
