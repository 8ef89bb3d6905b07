//! What an NVML power path can be: the ranges of update period, averaging
//! window and latency a sensor model may state for each power path, from
//! what has been measured (H200: buffered samples every 20 ms averaging
//! 4–9 ms about 1–2 ms late; the instant field every 100 ms over 2–44 ms;
//! the average field every 100 ms over ~975 ms; latencies of the fields
//! up to ~17 ms) with room for other GPU models. A value outside is not a
//! power path's: a model stating one is refused, never used.

use powerlab_core::Instrument;
use powerlab_core::units::MILLION;

/// The ranges one power path's values must lie in, ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathBounds {
    /// The power path (`buffered_w`, `instant_w`, `average_w`).
    pub instrument: Instrument,
    /// Longest update period.
    pub max_update_ms: f64,
    /// Widest averaging window.
    pub max_window_ms: f64,
    /// Longest latency.
    pub max_latency_ms: f64,
}

/// Earliest latency (its 95 % half-width added), ms: a reading cannot
/// change before the power does; the calibration refuses a fit past the
/// same limit.
pub const MIN_LATENCY_MS: f64 = -0.5;

/// Shortest update period, ms: no NVML power path refreshes faster (a
/// period of 1e-300 ms passed, and every rung then blamed its raw file for
/// holding too few samples).
pub const MIN_UPDATE_MS: f64 = 1.0;

/// The bounds of each power path a model may state. Latencies: a wrong one
/// shifts every folded sample by the error, so the bound is tight, about
/// 10 × the buffered path's measured 1–2 ms and 3–6 × the fields' ~17 ms
/// (a buffered latency of 250 ms, inside the first bounds, read a
/// simulated 100 ms swing as 160 W against a true 1516 W, unmarked).
pub const BOUNDS: [PathBounds; 3] = [
    PathBounds {
        instrument: Instrument::BufferedW,
        max_update_ms: 200.0,
        max_window_ms: 200.0,
        max_latency_ms: 25.0,
    },
    PathBounds {
        instrument: Instrument::InstantW,
        max_update_ms: 1000.0,
        max_window_ms: 250.0,
        max_latency_ms: 60.0,
    },
    PathBounds {
        instrument: Instrument::AverageW,
        max_update_ms: 1000.0,
        max_window_ms: 2000.0,
        max_latency_ms: 100.0,
    },
];

/// One path's values as a model states them, ms.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stated {
    /// Update period.
    pub update_ms: Option<f64>,
    /// Averaging window.
    pub window_ms: Option<f64>,
    /// Latency.
    pub latency_ms: Option<f64>,
    /// The latency's 95 % half-width.
    pub latency_ci_ms: Option<f64>,
}

/// Whether `gpu`'s `instrument` path stating `v` could be a power path's.
/// Paths other than the three power paths (the energy counter) are not
/// bounded here.
///
/// # Errors
///
/// The first value out of its range, naming the GPU, the path, the field,
/// the range and what to do.
pub fn check(gpu: &str, instrument: Instrument, v: Stated) -> Result<(), String> {
    let Some(b) = BOUNDS.iter().find(|b| b.instrument == instrument) else {
        return Ok(());
    };
    let out = |field: &str, value: f64, range: String| {
        let value = if value == 0.0 || (1e-3..MILLION).contains(&value.abs()) {
            format!("{value}")
        } else {
            format!("{value:e}")
        };
        Err(format!(
            "{gpu} {instrument}: {field} = {value} is outside {range}, the range of an NVML power path (docs/commands.md, \"Sensor models\"; the H200's buffered samples come every 20 ms over 4–9 ms, 1–2 ms late)"
        ))
    };
    if let Some(u) = v
        .update_ms
        .filter(|u| !(*u >= MIN_UPDATE_MS && *u <= b.max_update_ms))
    {
        return out(
            "update_period_ms",
            u,
            format!("[{MIN_UPDATE_MS}, {}] ms", b.max_update_ms),
        );
    }
    if let Some(w) = v
        .window_ms
        .filter(|w| !(*w >= 0.0 && *w <= b.max_window_ms))
    {
        return out("window_ms", w, format!("[0, {}] ms", b.max_window_ms));
    }
    if let Some(l) = v.latency_ms {
        let ci = v.latency_ci_ms.unwrap_or(0.0);
        // A half-width beyond the bound itself says nothing of the latency
        // (−100 ± 200 ms passed the lower end and read a staggered spread
        // 6 × too high).
        if !(ci >= 0.0 && ci <= b.max_latency_ms) {
            return out(
                "latency_ms_ci95",
                ci,
                format!("[0, {}] ms", b.max_latency_ms),
            );
        }
        if !(l + ci >= MIN_LATENCY_MS && l <= b.max_latency_ms) {
            return out(
                "latency_ms",
                l,
                format!(
                    "[{MIN_LATENCY_MS}, {}] ms (its 95 % half-width, {ci} ms, added to the lower end)",
                    b.max_latency_ms
                ),
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Stated, check};
    use powerlab_core::Instrument;

    fn buffered(update: f64, window: f64, latency: f64) -> Result<(), String> {
        check(
            "gpu0",
            Instrument::BufferedW,
            Stated {
                update_ms: Some(update),
                window_ms: Some(window),
                latency_ms: Some(latency),
                latency_ci_ms: None,
            },
        )
    }

    #[test]
    fn measured_values_pass_and_impossible_ones_are_named() {
        // The H200 as calibrated (results/h200x2-2026-11-30).
        assert_eq!(buffered(19.99, 6.2, 0.77), Ok(()));
        let e = buffered(20.0, 6.0, 500.0).unwrap_err();
        assert!(
            e.contains("gpu0 buffered_w: latency_ms = 500") && e.contains("25]"),
            "{e}"
        );
        assert!(
            buffered(20.0, 500.0, 1.0)
                .unwrap_err()
                .contains("window_ms = 500")
        );
        assert!(
            buffered(20.0, 6.0, -3.0)
                .unwrap_err()
                .contains("latency_ms = -3")
        );
        assert!(
            buffered(f64::NAN, 6.0, 1.0)
                .unwrap_err()
                .contains("update_period_ms = NaN")
        );
        assert!(buffered(20.0, f64::NAN, 1.0).is_err());
        assert!(buffered(20.0, 6.0, f64::NAN).is_err());
        // The average field's window is a second: allowed there, not on the buffered path.
        let avg = Stated {
            update_ms: Some(100.0),
            window_ms: Some(975.0),
            latency_ms: Some(10.0),
            latency_ci_ms: None,
        };
        assert_eq!(check("gpu0", Instrument::AverageW, avg), Ok(()));
        assert!(check("gpu0", Instrument::BufferedW, avg).is_err());
        // A fit's negative latency within its uncertainty is the calibration's to accept.
        let noisy = Stated {
            latency_ms: Some(-3.2),
            latency_ci_ms: Some(16.8),
            ..Stated::default()
        };
        assert_eq!(check("gpu1", Instrument::InstantW, noisy), Ok(()));
        // The hostile review's models, inside the first bounds.
        assert!(
            buffered(20.0, 6.0, 250.0)
                .unwrap_err()
                .contains("latency_ms = 250")
        );
        let wide = Stated {
            latency_ms: Some(-100.0),
            latency_ci_ms: Some(200.0),
            ..Stated::default()
        };
        assert!(
            check("gpu1", Instrument::BufferedW, wide)
                .unwrap_err()
                .contains("latency_ms_ci95 = 200")
        );
        let e = buffered(1e-300, 6.0, 1.0).unwrap_err();
        assert!(e.contains("update_period_ms = 1e-300"), "{e}");
        assert!(buffered(20.0, 6.0, -1e300).unwrap_err().len() < 300);
    }
}
