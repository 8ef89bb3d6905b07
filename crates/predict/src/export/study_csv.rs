//! A grid study's plain tables: the predicted facility waveform as CSV,
//! written as it is made ([`WaveformCsvWriter`]: `time_s`, then one MW
//! column per scenario, the same rows as the COMTRADE recording), and the
//! job's lifecycle events ([`write_events`]: `lifecycle_events.csv`).

use powerlab_core::units::ms_to_s;
use serde::Serialize;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// The waveform table's file name beside the COMTRADE pair, and the
/// lifecycle events' file name.
pub use powerlab_rundir::files::predict::{LIFECYCLE_EVENTS_CSV, WAVEFORM_CSV};
/// Decimals of each MW value: 1 W.
const MW_DECIMALS: usize = 6;
/// The most decimals of `time_s` (1 ns).
const MAX_TIME_DECIMALS: usize = 9;
/// The file's write buffer.
const BUFFER_BYTES: usize = 1 << 20;

/// The waveform as CSV, one row per [`WaveformCsvWriter::push`]: the
/// row's time after the waveform's t = 0 (`time_s`, as many decimals as
/// the sample period needs) and one column per channel, headed
/// `<name> (MW)`, to 1 W.
#[derive(Debug)]
pub struct WaveformCsvWriter {
    out: BufWriter<File>,
    width: usize,
    sample_period_ms: f64,
    time_decimals: usize,
    rows: u64,
    line: String,
}

impl WaveformCsvWriter {
    /// Creates (truncates) `path` and writes the header.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::InvalidInput`] for no channels or a sample period
    /// that is not positive and finite; otherwise the write's error.
    pub fn create(path: &Path, channels: &[&str], sample_period_ms: f64) -> io::Result<Self> {
        if channels.is_empty() {
            return Err(invalid("the waveform table needs one channel or more"));
        }
        if !(sample_period_ms.is_finite() && sample_period_ms > 0.0) {
            return Err(invalid("the sample period must be positive and finite"));
        }
        let mut out = BufWriter::with_capacity(BUFFER_BYTES, File::create(path)?);
        let mut header = String::from("time_s");
        for name in channels {
            header.push(',');
            header.push_str(&csv_field(&format!("{name} (MW)")));
        }
        header.push('\n');
        out.write_all(header.as_bytes())?;
        Ok(WaveformCsvWriter {
            out,
            width: channels.len(),
            sample_period_ms,
            time_decimals: time_decimals(ms_to_s(sample_period_ms)),
            rows: 0,
            line: String::with_capacity(64),
        })
    }

    /// Appends one row: `values_mw[i]` is channel `i`'s value, MW.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::InvalidInput`] for a row of another width;
    /// otherwise the write's error.
    pub fn push(&mut self, values_mw: &[f64]) -> io::Result<()> {
        if values_mw.len() != self.width {
            return Err(invalid("a row's width differs from the channel count"));
        }
        let t_s = ms_to_s(self.rows as f64 * self.sample_period_ms);
        self.line.clear();
        push_fixed(&mut self.line, t_s, self.time_decimals);
        for &v in values_mw {
            self.line.push(',');
            push_fixed(&mut self.line, v, MW_DECIMALS);
        }
        self.line.push('\n');
        self.out.write_all(self.line.as_bytes())?;
        self.rows += 1;
        Ok(())
    }

    /// Flushes the file; returns the rows written.
    ///
    /// # Errors
    ///
    /// The flush's error.
    pub fn finish(mut self) -> io::Result<u64> {
        self.out.flush()?;
        Ok(self.rows)
    }
}

/// One row of `lifecycle_events.csv`: a change of the job's state and the
/// facility power either side of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventRow {
    /// When it starts, s after the waveform's t = 0.
    pub time_s: f64,
    /// What happens (`start`, `checkpoint`, `failure`, `restart`, …).
    pub event: String,
    /// Facility power before it, MW.
    pub mw_before: f64,
    /// Facility power after it, MW.
    pub mw_after: f64,
    /// How long the change takes, ms.
    pub duration_ms: f64,
}

/// Writes `dir/lifecycle_events.csv`: a header and one line per row, in
/// the order given; returns its path.
///
/// # Errors
///
/// The error creating or writing the file.
pub fn write_events(dir: &Path, rows: &[EventRow]) -> io::Result<PathBuf> {
    let path = dir.join(LIFECYCLE_EVENTS_CSV);
    let mut w = csv::Writer::from_path(&path)?;
    if rows.is_empty() {
        w.write_record(["time_s", "event", "mw_before", "mw_after", "duration_ms"])?;
    }
    for r in rows {
        w.serialize(r)?;
    }
    w.flush()?;
    Ok(path)
}

/// The fewest decimals (up to 9) that print every multiple of `period_s`
/// exactly.
fn time_decimals(period_s: f64) -> usize {
    (0..MAX_TIME_DECIMALS)
        .find(|&d| {
            let scaled = period_s * 10f64.powi(d as i32);
            (scaled - scaled.round()).abs() < 1e-6
        })
        .unwrap_or(MAX_TIME_DECIMALS)
}

/// Appends `v` with `decimals` decimals (at most 9). Whole numbers of the
/// last decimal are printed as integers, which is several times faster
/// than formatting a float; a value too large for that, or not finite, is
/// formatted as a float.
fn push_fixed(line: &mut String, v: f64, decimals: usize) {
    let scale = 10i64.pow(decimals as u32);
    let scaled = (v * scale as f64).round();
    // Writing into a String cannot fail.
    if !scaled.is_finite() || scaled.abs() >= i64::MAX as f64 / 2.0 {
        let _ = write!(line, "{v:.decimals$}");
        return;
    }
    let n = scaled as i64;
    let sign = if n < 0 { "-" } else { "" };
    let (whole, frac) = (n.abs() / scale, n.abs() % scale);
    if decimals == 0 {
        let _ = write!(line, "{sign}{whole}");
    } else {
        let _ = write!(line, "{sign}{whole}.{frac:0decimals$}");
    }
}

/// `s` quoted when it holds a comma, a quote or a line end (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn invalid(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, why.to_string())
}

#[cfg(test)]
mod tests;
