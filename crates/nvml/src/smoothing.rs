//! Reading a GPU's power-smoothing state (Blackwell), read-only: its
//! enablement, active preset profile and that profile's floor and ramps,
//! through NVML field values. Nothing here sets a smoothing parameter.
//!
//! Field ids are the `NVML_FI_PWR_SMOOTHING_*` constants of nvml.h (CUDA
//! 12.9 / R575 on: 256 to 273) as nvml-wrapper-sys defines them;
//! nvml-wrapper renumbers them for drivers from 580.82 on (which moved them
//! to 251 to 268). The per-profile fields take the profile number as the
//! field value's `scopeId`, which nvml-wrapper's `field_values_for` always
//! leaves 0: those four are read with one raw `nvmlDeviceGetFieldValues`
//! call, renumbered the same way, and decoded by nvml-wrapper.
#![allow(unsafe_code)] // one raw NVML call (scoped field values) that nvml-wrapper does not wrap

use nvml_wrapper::enums::device::SampleValue;
use nvml_wrapper::error::NvmlError as WrapErr;
use nvml_wrapper::struct_wrappers::device::FieldValueSample;
use nvml_wrapper::structs::device::FieldId;
use nvml_wrapper::{Device, FieldIdScheme, Nvml};
use nvml_wrapper_sys::bindings::field_id::{
    NVML_FI_PWR_SMOOTHING_ACTIVE_PRESET_PROFILE, NVML_FI_PWR_SMOOTHING_APPLIED_TMP_FLOOR,
    NVML_FI_PWR_SMOOTHING_ENABLED, NVML_FI_PWR_SMOOTHING_PROFILE_PERCENT_TMP_FLOOR,
    NVML_FI_PWR_SMOOTHING_PROFILE_RAMP_DOWN_HYST_VAL, NVML_FI_PWR_SMOOTHING_PROFILE_RAMP_DOWN_RATE,
    NVML_FI_PWR_SMOOTHING_PROFILE_RAMP_UP_RATE,
};
use nvml_wrapper_sys::bindings::{nvmlFieldValue_t, nvmlReturn_enum_NVML_SUCCESS};
use powerlab_core::smoothing_state::{
    NVML_INVALID_ARGUMENT, NVML_NOT_SUPPORTED, PowerSmoothing, SmoothingProfile,
};

/// The per-profile fields, in the order of [`SmoothingProfile`]: floor
/// (% TMP), ramp up (mW/s), ramp down (mW/s), ramp-down hysteresis (ms).
const PROFILE_FIELDS: [u32; 4] = [
    NVML_FI_PWR_SMOOTHING_PROFILE_PERCENT_TMP_FLOOR,
    NVML_FI_PWR_SMOOTHING_PROFILE_RAMP_UP_RATE,
    NVML_FI_PWR_SMOOTHING_PROFILE_RAMP_DOWN_RATE,
    NVML_FI_PWR_SMOOTHING_PROFILE_RAMP_DOWN_HYST_VAL,
];

/// NVML's return code behind an nvml-wrapper error, where it names one.
fn nvml_code(e: &WrapErr) -> Option<u32> {
    Some(match e {
        WrapErr::Uninitialized => 1,
        WrapErr::InvalidArg => NVML_INVALID_ARGUMENT,
        WrapErr::NotSupported => NVML_NOT_SUPPORTED,
        WrapErr::NoPermission => 4,
        WrapErr::FunctionNotFound => 13,
        WrapErr::GpuLost => 15,
        _ => return None,
    })
}

/// The state a failed read of `what` means: not supported, a driver that
/// does not know the field, or unknown.
fn from_error(what: &str, e: &WrapErr) -> PowerSmoothing {
    match nvml_code(e) {
        Some(code @ NVML_NOT_SUPPORTED) => PowerSmoothing::NotSupported { code },
        Some(code @ (NVML_INVALID_ARGUMENT | 13)) => PowerSmoothing::DriverTooOld { code },
        _ => PowerSmoothing::Unknown {
            why: format!("{what}: {e}"),
        },
    }
}

fn as_f64(v: &SampleValue) -> f64 {
    match v {
        SampleValue::F64(x) => *x,
        SampleValue::U32(x) => f64::from(*x),
        SampleValue::U64(x) => *x as f64,
        SampleValue::I64(x) => *x as f64,
    }
}

/// One decoded field: its value, or the state its error means.
fn value(what: &str, s: Option<Result<FieldValueSample, WrapErr>>) -> Result<f64, PowerSmoothing> {
    match s {
        Some(Ok(s)) => s
            .value
            .map(|v| as_f64(&v))
            .map_err(|e| from_error(what, &e)),
        Some(Err(e)) => Err(from_error(what, &e)),
        None => Err(PowerSmoothing::Unknown {
            why: format!("{what}: NVML returned no value"),
        }),
    }
}

/// Reads GPU `dev`'s power smoothing; never fails, the state says what
/// could not be read.
pub fn read_power_smoothing(nvml: &Nvml, dev: &Device<'_>) -> PowerSmoothing {
    read(nvml, dev).unwrap_or_else(|s| s)
}

fn read(nvml: &Nvml, dev: &Device<'_>) -> Result<PowerSmoothing, PowerSmoothing> {
    let ids = [
        NVML_FI_PWR_SMOOTHING_ENABLED,
        NVML_FI_PWR_SMOOTHING_ACTIVE_PRESET_PROFILE,
        NVML_FI_PWR_SMOOTHING_APPLIED_TMP_FLOOR,
    ]
    .map(FieldId);
    let mut vals = dev
        .field_values_for(&ids)
        .map_err(|e| from_error("power-smoothing fields", &e))?
        .into_iter();
    let enabled = value("power smoothing enabled", vals.next())?;
    if enabled == 0.0 {
        return Ok(PowerSmoothing::Off);
    }
    let profile = value("power smoothing active profile", vals.next())? as u32;
    // The applied floor in mW, as NVML gives power; optional.
    let applied_floor_w = value("applied TMP floor", vals.next())
        .ok()
        .map(|mw| mw / 1000.0);
    let mut p = scoped(nvml, dev, profile)?.into_iter();
    let mut next = |what: &str| value(what, p.next());
    Ok(PowerSmoothing::On(SmoothingProfile {
        profile,
        floor_pct: next("profile floor (% TMP)")?,
        ramp_up_w_per_s: next("profile ramp-up rate")? / 1000.0,
        ramp_down_w_per_s: next("profile ramp-down rate")? / 1000.0,
        ramp_down_hysteresis_ms: next("profile ramp-down hysteresis")?,
        applied_floor_w,
    }))
}

/// nvml-wrapper's renumbering of the fields for drivers from 580.82 on.
fn driver_field_id(scheme: FieldIdScheme, id: u32) -> u32 {
    match (scheme, id) {
        (FieldIdScheme::V13Update1, 256..=273) => id - 5,
        _ => id,
    }
}

/// The per-profile fields of `profile` (scopeId), decoded by nvml-wrapper.
fn scoped(
    nvml: &Nvml,
    dev: &Device<'_>,
    profile: u32,
) -> Result<Vec<Result<FieldValueSample, WrapErr>>, PowerSmoothing> {
    let get =
        nvml.lib()
            .nvmlDeviceGetFieldValues
            .as_ref()
            .map_err(|e| PowerSmoothing::Unknown {
                why: format!("nvmlDeviceGetFieldValues is missing from the NVML library: {e}"),
            })?;
    let scheme = nvml.field_id_scheme();
    let mut raw: Vec<nvmlFieldValue_t> = PROFILE_FIELDS
        .iter()
        .map(|id| {
            // SAFETY: a plain C struct of integers and a union of numbers, for which all-zero bytes are valid.
            let mut v: nvmlFieldValue_t = unsafe { std::mem::zeroed() };
            v.fieldId = driver_field_id(scheme, *id);
            v.scopeId = profile;
            v
        })
        .collect();
    // SAFETY: the symbol exists (checked above), the handle belongs to this
    // `Nvml`, and `raw` holds exactly the count of field values passed.
    let rc = unsafe { get(dev.handle(), raw.len() as i32, raw.as_mut_ptr()) };
    if rc != nvmlReturn_enum_NVML_SUCCESS {
        return Err(from_error("profile fields", &WrapErr::from(rc)));
    }
    Ok(raw.into_iter().map(FieldValueSample::try_from).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renumbers_like_nvml_wrapper_and_maps_codes() {
        assert_eq!(driver_field_id(FieldIdScheme::V12, 256), 256);
        assert_eq!(driver_field_id(FieldIdScheme::V13Update1, 256), 251);
        assert_eq!(driver_field_id(FieldIdScheme::V13Update1, 268), 263);
        assert_eq!(driver_field_id(FieldIdScheme::V13Update1, 186), 186);
        assert_eq!(
            from_error("x", &WrapErr::NotSupported),
            PowerSmoothing::NotSupported { code: 3 }
        );
        assert_eq!(
            from_error("x", &WrapErr::InvalidArg),
            PowerSmoothing::DriverTooOld { code: 2 }
        );
        assert!(matches!(
            from_error("x", &WrapErr::Unknown),
            PowerSmoothing::Unknown { .. }
        ));
    }
}
