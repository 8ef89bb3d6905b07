//! How numbers are written for a person: a period in ms without trailing
//! zeros, a byte count in binary units. Shared by the report, the plots and
//! the verdicts' texts.

use powerlab_core::units::W_PER_MW;
use std::fmt;

/// A period in ms without trailing zeros (`100`, `100.3`).
pub fn fmt_ms(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Human size: 8 B, 64 KiB, 1 GiB.
pub fn fmt_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 && (v / 1024.0).fract() == 0.0 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v} {}", UNITS[u])
}

/// A power's scale for a person: MW (three decimals) from 1 MW, kW (one
/// decimal) from 1 kW, else W (one decimal); (divisor, unit, decimals).
fn power_scale(magnitude_w: f64) -> (f64, &'static str, usize) {
    if magnitude_w >= W_PER_MW {
        (W_PER_MW, "MW", 3)
    } else if magnitude_w >= 1e3 {
        (1e3, "kW", 1)
    } else {
        (1.0, "W", 1)
    }
}

/// A power in W written at its scale: `84.123 MW`, `512.3 kW`, `750.0 W`.
pub fn fmt_power(w: f64) -> String {
    fmt_power_pm(w, None)
}

/// A power and its ± written at the value's scale: `84.123 ± 0.456 MW`.
pub fn fmt_power_pm(w: f64, pm: Option<f64>) -> String {
    let (d, unit, n) = power_scale(w.abs());
    match pm {
        Some(p) => format!("{:.n$} ± {:.n$} {unit}", w / d, p / d),
        None => format!("{:.n$} {unit}", w / d),
    }
}

/// A signed power change and its ±: `+1.250 ± 0.100 MW`, `−300.0 kW`.
pub fn fmt_power_signed(w: f64, pm: Option<f64>) -> String {
    let (d, unit, n) = power_scale(w.abs().max(pm.unwrap_or(0.0)));
    match pm {
        Some(p) => format!("{:+.n$} ± {:.n$} {unit}", w / d, p / d),
        None => format!("{:+.n$} {unit}", w / d),
    }
}

/// Writes `items`, each as its `Display` writes it, with `sep` between
/// them (a verdict's notes, a list of GPUs or bit names).
///
/// # Errors
///
/// What the formatter returns.
pub fn write_joined<T: fmt::Display>(
    f: &mut fmt::Formatter<'_>,
    items: impl IntoIterator<Item = T>,
    sep: &str,
) -> fmt::Result {
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            f.write_str(sep)?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}
