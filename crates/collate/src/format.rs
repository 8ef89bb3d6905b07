//! How numbers are written for a person: a period in ms without trailing
//! zeros, a byte count in binary units. Shared by the report, the plots and
//! the verdicts' texts.

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
