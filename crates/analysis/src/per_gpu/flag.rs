//! The per-GPU table's typed columns: the clock-event bits a GPU showed in
//! a rung ([`ClockEvents`]) and why it is flagged against its peers
//! ([`PeerFlag`]), each written as `report/per_gpu.csv` has always read.

use powerlab_core::sample::ClockEventBits;
use powerlab_samples::format::write_joined;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The clock-event bits seen in a window, written by their NVML names,
/// space-separated (`sw_power_cap hw_thermal_slowdown`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClockEvents(pub ClockEventBits);

impl ClockEvents {
    /// The names of the bits set, in NVML's order.
    pub fn names(self) -> Vec<&'static str> {
        self.0.names()
    }

    /// Whether no named bit is set.
    pub fn is_empty(self) -> bool {
        self.names().is_empty()
    }

    /// The limiter bits: every bit but `gpu_idle`.
    pub fn limiters(self) -> ClockEvents {
        ClockEvents(ClockEventBits(self.0.0 & !ClockEventBits::GPU_IDLE))
    }

    /// Whether a thermal or hardware slowdown bit is set (`sw_power_cap`
    /// under load is the board at its limit, as expected).
    pub fn slowdown(self) -> bool {
        self.0.any_hw_slowdown() || self.0.contains(ClockEventBits::SW_THERMAL_SLOWDOWN)
    }

    /// The bit NVML names `name`.
    fn bit(name: &str) -> Option<u64> {
        (0..u64::BITS)
            .map(|i| 1u64 << i)
            .find(|b| ClockEventBits(*b).names() == [name])
    }
}

impl fmt::Display for ClockEvents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_joined(f, self.names(), " ")
    }
}

impl Serialize for ClockEvents {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ClockEvents {
    /// The bits from their names, as [`ClockEvents`] writes them. A name
    /// this build does not know (a newer NVML bit, written by a newer
    /// powerlab) is passed over: the one reader, `powerlab compare`, reads
    /// the table's figures, and refusing the run for it would leave a run
    /// whose raw files are archived with no comparison at all.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let words = String::deserialize(d)?;
        let bits = words
            .split_whitespace()
            .filter_map(Self::bit)
            .fold(0u64, |a, b| a | b);
        Ok(ClockEvents(ClockEventBits(bits)))
    }
}

/// A GPU's enforced limit where it is not its peers'.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OtherLimit {
    /// The GPU's enforced limit, W.
    pub limit_w: f64,
    /// Its peers' median limit, W.
    pub peers_w: f64,
}

/// Why a GPU is flagged in a rung: how far it left its peers' median, and
/// what its limiters say.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerFlag {
    /// GPU key.
    pub gpu: String,
    /// (mean − peers' median) / peers' median, by the buffered samples.
    pub vs_peers: f64,
    /// The same by the energy counter, where every GPU has one.
    pub counter_vs_peers: Option<f64>,
    /// Whether the rung has only two GPUs (either may be the odd one).
    pub of_two: bool,
    /// Its enforced limit, where it is not its peers' (the limit, not a
    /// throttle).
    pub other_limit: Option<OtherLimit>,
    /// Its limiter bits.
    pub limiters: ClockEvents,
    /// Time under the power cap, share of the window.
    pub power_cap_share: Option<f64>,
    /// Time under thermal caps, share of the window.
    pub thermal_cap_share: Option<f64>,
}

impl PeerFlag {
    /// Why: its other limit, then its limiter bits and caps (or that none
    /// was set).
    fn why(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(l) = self.other_limit {
            write!(
                f,
                "its enforced limit is {:.0} W, its peers' {:.0} W: the limit, not a throttle; ",
                l.limit_w, l.peers_w
            )?;
        }
        if self.limiters.is_empty() {
            f.write_str("no limiter bit set")?;
            if self.other_limit.is_none() {
                f.write_str(": look at the load, not the GPU's limits")?;
            }
            return Ok(());
        }
        write!(f, "limiter bits: {}", self.limiters.names().join(", "))?;
        if let Some(s) = self.power_cap_share.filter(|s| *s > 0.0) {
            write!(f, "; under the power cap {:.0} % of the window", s * 100.0)?;
        }
        if let Some(s) = self.thermal_cap_share.filter(|s| *s > 0.0) {
            write!(f, "; under thermal caps {:.0} % of the window", s * 100.0)?;
        }
        Ok(())
    }
}

impl fmt::Display for PeerFlag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.vs_peers;
        write!(
            f,
            "{} {:.1} % {} its peers' median (buffered samples",
            self.gpu,
            d.abs() * 100.0,
            if d < 0.0 { "below" } else { "above" },
        )?;
        if let Some(c) = self.counter_vs_peers {
            write!(f, "; energy counter {:+.1} %", c * 100.0)?;
        }
        f.write_str(")")?;
        if self.of_two {
            f.write_str(" (2 GPUs: either may be the odd one)")?;
        }
        f.write_str("; ")?;
        self.why(f)
    }
}

/// `per_gpu.csv`'s `flag` column: the flag's words, empty where the GPU is
/// not flagged.
pub(super) fn flag_words<S: serde::Serializer>(
    flag: &Option<PeerFlag>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match flag {
        Some(f) => s.collect_str(f),
        None => s.serialize_str(""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flag() -> PeerFlag {
        PeerFlag {
            gpu: "gpu2".into(),
            vs_peers: -0.0723,
            counter_vs_peers: None,
            of_two: false,
            other_limit: None,
            limiters: ClockEvents(ClockEventBits(
                ClockEventBits::SW_POWER_CAP | ClockEventBits::HW_THERMAL_SLOWDOWN,
            )),
            power_cap_share: Some(0.8),
            thermal_cap_share: Some(0.0),
        }
    }

    #[test]
    fn a_flag_writes_the_words_the_column_always_held() {
        assert_eq!(
            flag().to_string(),
            "gpu2 7.2 % below its peers' median (buffered samples); limiter bits: sw_power_cap, hw_thermal_slowdown; under the power cap 80 % of the window"
        );
        let other = PeerFlag {
            vs_peers: 0.37,
            counter_vs_peers: Some(0.365),
            of_two: true,
            other_limit: Some(OtherLimit {
                limit_w: 1200.0,
                peers_w: 700.0,
            }),
            limiters: ClockEvents::default(),
            ..flag()
        };
        assert_eq!(
            other.to_string(),
            "gpu2 37.0 % above its peers' median (buffered samples; energy counter +36.5 %) (2 GPUs: either may be the odd one); its enforced limit is 1200 W, its peers' 700 W: the limit, not a throttle; no limiter bit set"
        );
        let plain = PeerFlag {
            limiters: ClockEvents::default(),
            ..flag()
        };
        assert!(
            plain
                .to_string()
                .ends_with("; no limiter bit set: look at the load, not the GPU's limits")
        );
    }

    #[test]
    fn clock_events_read_back_what_they_write() {
        let e = ClockEvents(ClockEventBits(
            ClockEventBits::GPU_IDLE
                | ClockEventBits::SW_POWER_CAP
                | ClockEventBits::SW_THERMAL_SLOWDOWN,
        ));
        assert_eq!(e.to_string(), "gpu_idle sw_power_cap sw_thermal_slowdown");
        assert_eq!(e.limiters().to_string(), "sw_power_cap sw_thermal_slowdown");
        assert!(e.slowdown());
        let back: ClockEvents =
            serde_json::from_value(serde_json::json!(e.to_string())).expect("reads back");
        assert_eq!(back, e);
        // A name this build does not know (a newer powerlab's) is passed
        // over; the names it knows still read.
        let newer: ClockEvents =
            serde_json::from_value(serde_json::json!("sw_power_cap clk_future_bit"))
                .expect("a newer name does not refuse the row");
        assert_eq!(
            newer,
            ClockEvents(ClockEventBits(ClockEventBits::SW_POWER_CAP))
        );
        let cap = ClockEvents(ClockEventBits(ClockEventBits::SW_POWER_CAP));
        assert!(!cap.slowdown());
        assert!(ClockEvents(ClockEventBits(ClockEventBits::HW_POWER_BRAKE_SLOWDOWN)).slowdown());
        assert!(ClockEvents::default().is_empty() && ClockEvents::default().to_string().is_empty());
    }
}
