//! The instruments of one simulated GPU, as NVML shows them: buffered
//! samples, the instant field, the average field and energy counter, the
//! status reads, and the faults that make reads fail.

use super::SimDevice;
use powerlab_core::sample::ClockEventBits;
use powerlab_core::units::{j_to_mj, ms_to_ns_trunc};
use powerlab_core::{EpochNs, HwError, Instrument, Sample};

impl SimDevice {
    /// Takes the samples of the instruments' clocks that fired up to now:
    /// each buffered sample (0 W on a `lost` GPU), visible after the
    /// buffer's latency, the oldest dropped when the ring is full; each
    /// field read (instant, average, energy), visible after its latency.
    pub(super) fn sample_instruments(&mut self, lost: bool) {
        while self.buffered_clock.peek() <= self.t_ns {
            let ts = self.buffered_clock.peek();
            self.buffered_clock.advance();
            let lag = ms_to_ns_trunc(self.profile.buffered_lag_ms);
            let value = if lost {
                0.0
            } else {
                self.window_mean(ts - lag, self.profile.buffered_window_ms)
                    + self.profile.noise_w * self.gauss()
            };
            let visible = ts + ms_to_ns_trunc(self.profile.buffered_latency_ms);
            if self.buffered.len() >= self.profile.buffered_capacity {
                self.buffered.pop_front();
                self.buffered_lost += 1;
            }
            self.buffered.push_back((
                visible,
                Sample {
                    ts_ns: ts,
                    instrument: Instrument::BufferedW,
                    value,
                },
            ));
        }
        while self.field_clock.peek() <= self.t_ns {
            let ts = self.field_clock.peek();
            self.field_clock.advance();
            let instant = self.window_mean(ts, self.profile.instant_window_ms)
                + self.profile.noise_w * self.gauss();
            let average = self.window_mean(ts, self.profile.average_window_ms)
                + 0.3 * self.profile.noise_w * self.gauss();
            let energy_mj = self.energy_base_mj + j_to_mj(self.hist_at(ts));
            let visible = ts + ms_to_ns_trunc(self.profile.field_latency_ms);
            self.fields_pending
                .push_back((visible, [instant, average, energy_mj.floor()]));
        }
    }

    /// Fails a read of a lost GPU, and every `nvml_error_every`-th read
    /// when that fault is injected; counts the read.
    fn read_guard(&mut self, now: EpochNs) -> Result<(), HwError> {
        if self.lost(now) {
            return Err(HwError::DeviceFailed {
                gpu: format!("gpu{}", self.index),
                detail: "NVML_ERROR_GPU_IS_LOST: the GPU has fallen off the bus (simulated)".into(),
            });
        }
        self.reads += 1;
        let every = self.faults.nvml_error_every;
        if every > 0 && self.reads.is_multiple_of(u64::from(every)) {
            return Err(HwError::Transient {
                gpu: format!("gpu{}", self.index),
                detail: "NVML_ERROR_TIMEOUT (simulated)".into(),
            });
        }
        Ok(())
    }

    /// Makes the field values published by `now` current.
    fn update_fields(&mut self, now: EpochNs) {
        while let Some((visible, v)) = self.fields_pending.front() {
            if *visible > now {
                break;
            }
            self.fields_now = *v;
            self.fields_pending.pop_front();
        }
    }

    /// Buffered samples readable by `now`.
    ///
    /// # Errors
    ///
    /// Returns [`HwError::DeviceFailed`] if the simulated GPU has been lost
    /// by `now` (an injected lost-GPU fault), and [`HwError::Transient`] on
    /// every `nvml_error_every`-th read when that fault is injected.
    pub fn drain_buffered(&mut self, now: EpochNs) -> Result<Vec<Sample>, HwError> {
        self.advance_to(now);
        self.read_guard(now)?;
        let mut out = Vec::new();
        while let Some((visible, s)) = self.buffered.front() {
            if *visible > now {
                break;
            }
            out.push(*s);
            self.buffered.pop_front();
        }
        Ok(out)
    }

    /// One read of the instant field.
    ///
    /// # Errors
    ///
    /// Returns [`HwError::DeviceFailed`] if the simulated GPU has been lost
    /// by `now` (an injected lost-GPU fault), and [`HwError::Transient`] on
    /// every `nvml_error_every`-th read when that fault is injected.
    pub fn read_instant(&mut self, now: EpochNs) -> Result<Sample, HwError> {
        self.advance_to(now);
        self.read_guard(now)?;
        self.update_fields(now);
        Ok(Sample {
            ts_ns: now,
            instrument: Instrument::InstantW,
            value: self.fields_now[0],
        })
    }

    /// One read of the average field and the energy counter.
    ///
    /// # Errors
    ///
    /// Returns [`HwError::DeviceFailed`] if the simulated GPU has been lost
    /// by `now` (an injected lost-GPU fault), and [`HwError::Transient`] on
    /// every `nvml_error_every`-th read when that fault is injected.
    pub fn read_fields(&mut self, now: EpochNs) -> Result<Vec<Sample>, HwError> {
        self.advance_to(now);
        self.read_guard(now)?;
        self.update_fields(now);
        Ok(vec![
            Sample {
                ts_ns: now,
                instrument: Instrument::AverageW,
                value: self.fields_now[1],
            },
            Sample {
                ts_ns: now,
                instrument: Instrument::EnergyMj,
                value: self.fields_now[2],
            },
        ])
    }

    /// One read of clocks, temperatures, clock-event reasons and limit.
    ///
    /// # Errors
    ///
    /// Returns [`HwError::DeviceFailed`] if the simulated GPU has been lost
    /// by `now` (an injected lost-GPU fault), and [`HwError::Transient`] on
    /// every `nvml_error_every`-th read when that fault is injected.
    pub fn read_status(&mut self, now: EpochNs) -> Result<Vec<Sample>, HwError> {
        self.advance_to(now);
        self.read_guard(now)?;
        let p = &self.profile;
        let loaded = self.power_w > p.idle_w + 0.1 * (p.power_limit_w - p.idle_w);
        let mut bits = 0u64;
        let cap = self.controller.cap();
        let throttled = self.thermal_factor < 0.99;
        let sm = if loaded {
            p.sm_clock_max_mhz * (cap * self.thermal_factor).powf(0.6)
        } else if self.has_context(now) {
            p.sm_clock_idle_mhz
        } else {
            p.sm_clock_bare_mhz
        };
        if !loaded {
            bits |= ClockEventBits::GPU_IDLE;
        }
        if cap < 0.97 {
            bits |= ClockEventBits::SW_POWER_CAP;
        }
        if loaded && throttled {
            bits |= ClockEventBits::SW_THERMAL_SLOWDOWN;
        }
        if self.brake(now) {
            bits |= ClockEventBits::HW_SLOWDOWN | ClockEventBits::HW_POWER_BRAKE_SLOWDOWN;
        }
        Ok(vec![
            Sample {
                ts_ns: now,
                instrument: Instrument::SmClockMhz,
                value: sm.round(),
            },
            Sample {
                ts_ns: now,
                instrument: Instrument::MemClockMhz,
                value: p.mem_clock_mhz,
            },
            Sample {
                ts_ns: now,
                instrument: Instrument::GpuTempC,
                value: self.temp_c.round(),
            },
            Sample {
                ts_ns: now,
                instrument: Instrument::MemTempC,
                value: (self.temp_c + 6.0).round(),
            },
            Sample {
                ts_ns: now,
                instrument: Instrument::ClockEvents,
                value: bits as f64,
            },
            Sample {
                ts_ns: now,
                instrument: Instrument::PowerLimitW,
                value: p.power_limit_w,
            },
            Sample {
                ts_ns: now,
                instrument: Instrument::PowerCapTimeNs,
                value: self.power_cap_ns as f64,
            },
            Sample {
                ts_ns: now,
                instrument: Instrument::ThermalCapTimeNs,
                value: self.thermal_cap_ns as f64,
            },
        ])
    }

    /// An Xid event, once, if one is injected and due.
    pub fn take_xid(&mut self, now: EpochNs) -> Option<(EpochNs, u32)> {
        let (at, code) = self.faults.xid_at_ns?;
        let at = self.run_start_ns + at;
        if self.xid_reported || now < at {
            return None;
        }
        self.xid_reported = true;
        Some((at, code))
    }
}
