//! Raw instrument samples: what a power source yields, one reading each,
//! with the timestamp of the reading and the instrument that produced it.

use crate::units::EpochNs;
use serde::{Deserialize, Serialize};

/// The instrument (NVML path) a sample came from. The names are the values
/// of the `instrument` column of the raw CSV files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Instrument {
    /// Driver-buffered power samples (`nvmlDeviceGetSamples`, ~20 ms), watts.
    BufferedW,
    /// Field 186 `NVML_FI_DEV_POWER_INSTANT`, polled; watts.
    InstantW,
    /// Field 185 `NVML_FI_DEV_POWER_AVERAGE` (1 s average), polled; watts.
    /// Kept only as a labelled comparison, never summed into node curves.
    AverageW,
    /// Total energy counter, millijoules since driver load.
    EnergyMj,
    /// SM clock, MHz.
    SmClockMhz,
    /// Memory clock, MHz.
    MemClockMhz,
    /// GPU temperature, °C.
    GpuTempC,
    /// HBM temperature, °C.
    MemTempC,
    /// Clock-event-reason bitmask (raw bits, as NVML reports them).
    ClockEvents,
    /// Enforced power limit, watts.
    PowerLimitW,
    /// Cumulative time clocks were held down by the power cap, ns
    /// (`nvmlDeviceGetViolationStatus(NVML_PERF_POLICY_POWER)`).
    PowerCapTimeNs,
    /// Cumulative time clocks were held down for thermal reasons, ns.
    ThermalCapTimeNs,
}

impl Instrument {
    /// All instruments, in column order.
    pub const ALL: [Instrument; 12] = [
        Instrument::BufferedW,
        Instrument::InstantW,
        Instrument::AverageW,
        Instrument::EnergyMj,
        Instrument::SmClockMhz,
        Instrument::MemClockMhz,
        Instrument::GpuTempC,
        Instrument::MemTempC,
        Instrument::ClockEvents,
        Instrument::PowerLimitW,
        Instrument::PowerCapTimeNs,
        Instrument::ThermalCapTimeNs,
    ];

    /// Name as written in raw CSV files.
    pub fn as_str(self) -> &'static str {
        match self {
            Instrument::BufferedW => "buffered_w",
            Instrument::InstantW => "instant_w",
            Instrument::AverageW => "average_w",
            Instrument::EnergyMj => "energy_mj",
            Instrument::SmClockMhz => "sm_clock_mhz",
            Instrument::MemClockMhz => "mem_clock_mhz",
            Instrument::GpuTempC => "gpu_temp_c",
            Instrument::MemTempC => "mem_temp_c",
            Instrument::ClockEvents => "clock_events",
            Instrument::PowerLimitW => "power_limit_w",
            Instrument::PowerCapTimeNs => "power_cap_time_ns",
            Instrument::ThermalCapTimeNs => "thermal_cap_time_ns",
        }
    }

    /// Parses a raw CSV instrument name.
    pub fn parse(name: &str) -> Option<Instrument> {
        Instrument::ALL.iter().copied().find(|i| i.as_str() == name)
    }

    /// Whether this instrument measures power in watts.
    pub fn is_power(self) -> bool {
        matches!(
            self,
            Instrument::BufferedW | Instrument::InstantW | Instrument::AverageW
        )
    }
}

impl std::fmt::Display for Instrument {
    /// The raw CSV name (`buffered_w`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// One reading.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// When the reading applies, Unix-epoch ns on the run clock. For buffered
    /// samples this is the driver's own timestamp; for polled fields it is
    /// the read time.
    pub ts_ns: EpochNs,
    /// Which instrument.
    pub instrument: Instrument,
    /// The value, in the instrument's unit.
    pub value: f64,
}

/// Clock-event-reason bits (NVML `nvmlClocksEventReasons`), tested with
/// [`ClockEventBits::contains`], never by equality.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClockEventBits(pub u64);

impl ClockEventBits {
    /// GPU idle.
    pub const GPU_IDLE: u64 = 0x1;
    /// Application clocks setting.
    pub const APPLICATIONS_CLOCKS_SETTING: u64 = 0x2;
    /// SW power cap: the board is at its power limit (expected under load).
    pub const SW_POWER_CAP: u64 = 0x4;
    /// HW slowdown (thermal or power brake).
    pub const HW_SLOWDOWN: u64 = 0x8;
    /// Sync boost.
    pub const SYNC_BOOST: u64 = 0x10;
    /// SW thermal slowdown.
    pub const SW_THERMAL_SLOWDOWN: u64 = 0x20;
    /// HW thermal slowdown: facility problem.
    pub const HW_THERMAL_SLOWDOWN: u64 = 0x40;
    /// HW power brake slowdown: external signal, PSU or rack.
    pub const HW_POWER_BRAKE_SLOWDOWN: u64 = 0x80;
    /// Display clock setting.
    pub const DISPLAY_CLOCK_SETTING: u64 = 0x100;

    /// Whether every bit of `mask` is set.
    pub fn contains(self, mask: u64) -> bool {
        self.0 & mask == mask
    }

    /// Whether any hardware slowdown (the facility kind) is asserted.
    pub fn any_hw_slowdown(self) -> bool {
        self.contains(Self::HW_SLOWDOWN)
            || self.contains(Self::HW_THERMAL_SLOWDOWN)
            || self.contains(Self::HW_POWER_BRAKE_SLOWDOWN)
    }

    /// Names of the set bits, for reports.
    pub fn names(self) -> Vec<&'static str> {
        let table = [
            (Self::GPU_IDLE, "gpu_idle"),
            (
                Self::APPLICATIONS_CLOCKS_SETTING,
                "applications_clocks_setting",
            ),
            (Self::SW_POWER_CAP, "sw_power_cap"),
            (Self::HW_SLOWDOWN, "hw_slowdown"),
            (Self::SYNC_BOOST, "sync_boost"),
            (Self::SW_THERMAL_SLOWDOWN, "sw_thermal_slowdown"),
            (Self::HW_THERMAL_SLOWDOWN, "hw_thermal_slowdown"),
            (Self::HW_POWER_BRAKE_SLOWDOWN, "hw_power_brake_slowdown"),
            (Self::DISPLAY_CLOCK_SETTING, "display_clock_setting"),
        ];
        table
            .iter()
            .filter(|(bit, _)| self.contains(*bit))
            .map(|(_, n)| *n)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instrument_names_round_trip() {
        for i in Instrument::ALL {
            assert_eq!(Instrument::parse(i.as_str()), Some(i));
        }
        assert_eq!(Instrument::parse("bogus"), None);
    }

    #[test]
    fn combined_clock_events_are_all_seen() {
        let bits =
            ClockEventBits(ClockEventBits::SW_POWER_CAP | ClockEventBits::HW_THERMAL_SLOWDOWN);
        assert!(bits.contains(ClockEventBits::SW_POWER_CAP));
        assert!(bits.any_hw_slowdown());
        assert_eq!(bits.names(), vec!["sw_power_cap", "hw_thermal_slowdown"]);
        assert!(!ClockEventBits(ClockEventBits::SW_POWER_CAP).any_hw_slowdown());
    }
}
