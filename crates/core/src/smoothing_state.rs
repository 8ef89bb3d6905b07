//! NVIDIA power smoothing (Blackwell: B200, B300, GB200) as one GPU reports
//! it: whether the hardware holds a power floor and limits how fast the
//! board's draw may rise and fall. The harness only reads this state, it
//! never sets it; where smoothing is on, every swing measured is the one
//! the hardware let through, not the load's raw swing.

use serde::{Deserialize, Serialize};

/// NVML's return code for a field a GPU does not support
/// (`NVML_ERROR_NOT_SUPPORTED`).
pub const NVML_NOT_SUPPORTED: u32 = 3;
/// NVML's return code for a field id the driver does not know
/// (`NVML_ERROR_INVALID_ARGUMENT`: a driver older than the field).
pub const NVML_INVALID_ARGUMENT: u32 = 2;

/// The preset profile that power smoothing applies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmoothingProfile {
    /// Active preset profile number.
    pub profile: u32,
    /// The power floor, % of the total module power (TMP).
    pub floor_pct: f64,
    /// Fastest rise the hardware allows, W/s.
    pub ramp_up_w_per_s: f64,
    /// Fastest fall the hardware allows, W/s.
    pub ramp_down_w_per_s: f64,
    /// How long a fall waits before it ramps down, ms.
    pub ramp_down_hysteresis_ms: f64,
    /// The floor applied now, W (None where not readable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_floor_w: Option<f64>,
}

/// Power smoothing of one GPU, as NVML reports it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum PowerSmoothing {
    /// Not read: a run or capture written before this state was recorded,
    /// or a tool that does not read it.
    #[default]
    NotRecorded,
    /// The GPU has no power smoothing (H100, H200, A10G, …): NVML's return
    /// code for the enablement field.
    NotSupported {
        /// NVML return code (3: `NVML_ERROR_NOT_SUPPORTED`).
        code: u32,
    },
    /// The driver does not know the power-smoothing fields (older than
    /// the CUDA 12.9 / R575 drivers that introduced them).
    DriverTooOld {
        /// NVML return code (2: `NVML_ERROR_INVALID_ARGUMENT`).
        code: u32,
    },
    /// Supported, but a field could not be read.
    Unknown {
        /// What failed, in NVML's words.
        why: String,
    },
    /// Supported and off: the load's swing reaches the board unsmoothed.
    Off,
    /// On: the hardware holds the floor and limits the ramps of this profile.
    On(SmoothingProfile),
}

impl PowerSmoothing {
    /// Whether smoothing is on.
    pub fn is_on(&self) -> bool {
        matches!(self, PowerSmoothing::On(_))
    }

    /// The state in words, for reports: `not supported (NVML return 3:
    /// NVML_ERROR_NOT_SUPPORTED)` or `on, profile 1: floor 65 % TMP, ramp
    /// up 5000 W/s, down 2500 W/s, hysteresis 500 ms`.
    pub fn describe(&self) -> String {
        match self {
            PowerSmoothing::NotRecorded => "not recorded".into(),
            PowerSmoothing::NotSupported { code } => {
                format!(
                    "not supported (NVML return {code}: {})",
                    nvml_code_name(*code)
                )
            }
            PowerSmoothing::DriverTooOld { code } => format!(
                "unknown: the driver is too old to report it (NVML return {code}: {})",
                nvml_code_name(*code)
            ),
            PowerSmoothing::Unknown { why } => format!("unknown: {why}"),
            PowerSmoothing::Off => "off".into(),
            PowerSmoothing::On(p) => {
                let applied = p
                    .applied_floor_w
                    .map(|w| format!(" (applied floor {w:.0} W)"))
                    .unwrap_or_default();
                format!(
                    "on, profile {}: floor {} % TMP{applied}, ramp up {} W/s, down {} W/s, hysteresis {} ms",
                    p.profile,
                    num(p.floor_pct),
                    num(p.ramp_up_w_per_s),
                    num(p.ramp_down_w_per_s),
                    num(p.ramp_down_hysteresis_ms)
                )
            }
        }
    }
}

/// A number without a trailing `.0` where it is whole.
fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// The name of the NVML return codes a field read gives most often.
pub fn nvml_code_name(code: u32) -> &'static str {
    match code {
        0 => "NVML_SUCCESS",
        1 => "NVML_ERROR_UNINITIALIZED",
        NVML_INVALID_ARGUMENT => "NVML_ERROR_INVALID_ARGUMENT",
        NVML_NOT_SUPPORTED => "NVML_ERROR_NOT_SUPPORTED",
        4 => "NVML_ERROR_NO_PERMISSION",
        13 => "NVML_ERROR_FUNCTION_NOT_FOUND",
        15 => "NVML_ERROR_GPU_IS_LOST",
        _ => "another NVML error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_read_in_words_and_round_trip() {
        let on = PowerSmoothing::On(SmoothingProfile {
            profile: 1,
            floor_pct: 65.0,
            ramp_up_w_per_s: 5000.0,
            ramp_down_w_per_s: 2500.0,
            ramp_down_hysteresis_ms: 500.0,
            applied_floor_w: Some(780.0),
        });
        assert_eq!(
            on.describe(),
            "on, profile 1: floor 65 % TMP (applied floor 780 W), ramp up 5000 W/s, down 2500 W/s, hysteresis 500 ms"
        );
        let ns = PowerSmoothing::NotSupported { code: 3 };
        assert_eq!(
            ns.describe(),
            "not supported (NVML return 3: NVML_ERROR_NOT_SUPPORTED)"
        );
        for s in [on, ns, PowerSmoothing::Off, PowerSmoothing::NotRecorded] {
            let j = serde_json::to_string(&s).unwrap_or_default();
            let back: PowerSmoothing = serde_json::from_str(&j).unwrap_or_default();
            assert_eq!(back, s, "{j}");
        }
        let old: PowerSmoothing =
            serde_json::from_str(r#"{"state":"driver_too_old","code":2}"#).unwrap_or_default();
        assert!(old.describe().contains("driver is too old"));
    }
}
