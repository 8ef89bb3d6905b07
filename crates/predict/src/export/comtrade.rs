//! The predicted facility waveform as a COMTRADE recording (IEEE C37.111),
//! written as it is made: one analog channel per scenario, in MW, one row
//! per sample, for a utility's tools (protection and power-quality viewers,
//! grid simulators that play a recording back).
//!
//! # Revision and data format: 2013, `FLOAT32`
//!
//! The waveform is streamed: a day at 10 ms is 8.64 M rows and is never
//! held. The integer formats (`ASCII` and `BINARY` of 1999, `BINARY32`)
//! store `(value − b) / a` and need each channel's range before the first
//! row to choose `a` and `b` without clipping or losing resolution; a
//! stream learns its range only at its end. A declared range would clip a
//! scenario that leaves it, and a second pass would re-read ~170 MB. The
//! 2013 revision's `FLOAT32` stores each value as an IEEE 754 single with
//! `a = 1`, `b = 0`: 24 bits of mantissa, a relative error under 6e-8 (a
//! few watts at 150 MW), so a third-party reader gets every mean and peak
//! far inside 0.1 %, whatever the range. The `.dat` is written first and
//! the `.cfg` at [`ComtradeWriter::finish`], with the sample count and each
//! channel's minimum and maximum seen. A tool that reads 1999 only needs a
//! conversion; the plain CSV of the same rows (`study_csv`) is the
//! fallback.
//!
//! # Time base
//!
//! One declared clock: the waveform's t = 0 is the study's start time (the
//! `.cfg`'s first-sample and trigger timestamps, UTC, microseconds), or
//! [`STUDY_EPOCH_NS`] when the study names none. One sample rate
//! (`nrates = 1`); each row's 4-byte timestamp is its index (0-based) and
//! `timemult` is the sample period in microseconds, so a day at 10 ms
//! (8.64e10 µs, beyond a `u32` of microseconds) still fits.
//!
//! # Beside the pair
//!
//! [`COMTRADE_JSON`]: the sample count, the rate and each channel's mean,
//! peak and minimum from running sums of the values pushed (f64), for a
//! check of what a reader gets back against what was written.

use powerlab_core::units::{EpochNs, NS_PER_S, NS_PER_US, ms_to_ns_f64, ms_to_s, ns_f64_to_us};
use serde::Serialize;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// The sidecar's file name: the figures the writer states (see the module
/// doc).
pub use powerlab_rundir::files::predict::COMTRADE_JSON;
/// The stem a prediction's recording is written under (`.cfg`, `.dat`).
pub const COMTRADE_STEM: &str = "facility_mw";
/// The COMTRADE revision written in the `.cfg`.
pub const REVISION: &str = "2013";
/// The `.dat` format written.
pub const DATA_FORMAT: &str = "FLOAT32";
/// Every channel's unit.
pub const UNIT: &str = "MW";
/// The start time used when a study names none: 2000-01-01T00:00:00Z.
pub const STUDY_EPOCH_NS: EpochNs = 946_684_800 * NS_PER_S;
/// The recording device named in the `.cfg`.
const REC_DEV_ID: &str = "gpu-power-lab predict";
/// The longest station, channel or circuit name the 2013 revision allows.
const NAME_CHARS: usize = 64;
/// The `.dat`'s write buffer.
const BUFFER_BYTES: usize = 1 << 20;

/// One channel's running figures.
#[derive(Debug, Clone)]
struct Running {
    name: String,
    sum_mw: f64,
    min_mw: f64,
    max_mw: f64,
}

/// One channel's figures in [`COMTRADE_JSON`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChannelFigures {
    /// The channel's name as the `.cfg` gives it.
    pub name: String,
    /// Mean of the values pushed, MW.
    pub mean_mw: f64,
    /// Highest value pushed, MW.
    pub peak_mw: f64,
    /// Lowest value pushed, MW.
    pub min_mw: f64,
}

/// What [`ComtradeWriter::finish`] wrote: the files and the sidecar's
/// figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComtradeSummary {
    /// The `.cfg`'s file name.
    pub cfg: String,
    /// The `.dat`'s file name.
    pub dat: String,
    /// [`REVISION`].
    pub revision: &'static str,
    /// [`DATA_FORMAT`].
    pub format: &'static str,
    /// [`UNIT`].
    pub unit: &'static str,
    /// Rows written.
    pub samples: u64,
    /// Samples per second, Hz.
    pub rate_hz: f64,
    /// The sample period, ms.
    pub sample_period_ms: f64,
    /// The first sample's time, Unix-epoch ns (the waveform's t = 0).
    pub start_epoch_ns: EpochNs,
    /// The same, RFC 3339 UTC.
    pub start_utc: String,
    /// The last sample's time after the first, s.
    pub last_time_s: f64,
    /// One per channel, in the `.cfg`'s order.
    pub channels: Vec<ChannelFigures>,
}

/// A COMTRADE recording written one row at a time (see the module doc).
#[derive(Debug)]
pub struct ComtradeWriter {
    dat: BufWriter<File>,
    dir: PathBuf,
    stem: String,
    station: String,
    channels: Vec<Running>,
    sample_period_ms: f64,
    start_epoch_ns: EpochNs,
    samples: u32,
    row: Vec<u8>,
}

impl ComtradeWriter {
    /// Starts `dir/stem.dat` (truncated) for one analog channel per name
    /// in `channels`; removes an older `stem.cfg` and [`COMTRADE_JSON`] so
    /// that an unfinished `.dat` is never paired with them. Names lose
    /// commas and control characters and are cut to 64 characters.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::InvalidInput`] for no channels or a sample period
    /// that is not positive and finite; otherwise the error creating the
    /// file or removing an old one.
    pub fn create(
        dir: &Path,
        stem: &str,
        station: &str,
        channels: &[&str],
        sample_period_ms: f64,
        start_epoch_ns: EpochNs,
    ) -> io::Result<Self> {
        if channels.is_empty() {
            return Err(invalid("a COMTRADE recording needs one channel or more"));
        }
        if !(sample_period_ms.is_finite() && sample_period_ms > 0.0) {
            return Err(invalid("the sample period must be positive and finite"));
        }
        for old in [dir.join(format!("{stem}.cfg")), dir.join(COMTRADE_JSON)] {
            match std::fs::remove_file(&old) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        let dat = File::create(dir.join(format!("{stem}.dat")))?;
        Ok(ComtradeWriter {
            dat: BufWriter::with_capacity(BUFFER_BYTES, dat),
            dir: dir.to_path_buf(),
            stem: stem.to_string(),
            station: cfg_field(station),
            channels: channels
                .iter()
                .map(|n| Running {
                    name: cfg_field(n),
                    sum_mw: 0.0,
                    min_mw: f64::INFINITY,
                    max_mw: f64::NEG_INFINITY,
                })
                .collect(),
            sample_period_ms,
            start_epoch_ns,
            samples: 0,
            row: Vec::with_capacity(8 + 4 * channels.len()),
        })
    }

    /// Appends one row: `values_mw[i]` is channel `i`'s value, MW.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::InvalidInput`] for a row of another width, a value
    /// that is not finite, or a row past `u32::MAX − 1` (the format's
    /// sample number); otherwise the write's error.
    pub fn push(&mut self, values_mw: &[f64]) -> io::Result<()> {
        if values_mw.len() != self.channels.len() {
            return Err(invalid("a row's width differs from the channel count"));
        }
        if !values_mw.iter().all(|v| v.is_finite()) {
            return Err(invalid("a value is not finite"));
        }
        let index = self.samples;
        let number = index
            .checked_add(1)
            .filter(|&n| n < u32::MAX)
            .ok_or_else(|| invalid("more rows than a COMTRADE sample number counts"))?;
        // One write per row: sample number, timestamp, the values.
        self.row.clear();
        self.row.extend_from_slice(&number.to_le_bytes());
        self.row.extend_from_slice(&index.to_le_bytes());
        for (c, &v) in self.channels.iter_mut().zip(values_mw) {
            self.row.extend_from_slice(&(v as f32).to_le_bytes());
            c.sum_mw += v;
            c.min_mw = c.min_mw.min(v);
            c.max_mw = c.max_mw.max(v);
        }
        self.dat.write_all(&self.row)?;
        self.samples = number;
        Ok(())
    }

    /// Flushes the `.dat`, then writes `stem.cfg` and [`COMTRADE_JSON`].
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::InvalidInput`] when no row was pushed; otherwise
    /// the error flushing or writing a file.
    pub fn finish(mut self) -> io::Result<ComtradeSummary> {
        if self.samples == 0 {
            return Err(invalid("a COMTRADE recording needs one row or more"));
        }
        self.dat.flush()?;
        let summary = self.summary();
        std::fs::write(self.dir.join(&summary.cfg), self.cfg_text(&summary))?;
        let json = serde_json::to_vec_pretty(&summary).map_err(io::Error::other)?;
        std::fs::write(self.dir.join(COMTRADE_JSON), json)?;
        Ok(summary)
    }

    /// The figures of the rows pushed so far.
    fn summary(&self) -> ComtradeSummary {
        let n = f64::from(self.samples);
        ComtradeSummary {
            cfg: format!("{}.cfg", self.stem),
            dat: format!("{}.dat", self.stem),
            revision: REVISION,
            format: DATA_FORMAT,
            unit: UNIT,
            samples: u64::from(self.samples),
            rate_hz: rate_hz(self.sample_period_ms),
            sample_period_ms: self.sample_period_ms,
            start_epoch_ns: self.start_epoch_ns,
            start_utc: powerlab_rundir::layout::utc_rfc3339(self.start_epoch_ns),
            last_time_s: ms_to_s((n - 1.0) * self.sample_period_ms),
            channels: self
                .channels
                .iter()
                .map(|c| ChannelFigures {
                    name: c.name.clone(),
                    mean_mw: c.sum_mw / n,
                    peak_mw: c.max_mw,
                    min_mw: c.min_mw,
                })
                .collect(),
        }
    }

    /// The `.cfg`'s text (2013 revision, CR LF line ends).
    fn cfg_text(&self, s: &ComtradeSummary) -> String {
        let k = self.channels.len();
        let stamp = comtrade_timestamp(self.start_epoch_ns);
        let mut lines = vec![
            format!("{},{REC_DEV_ID},{REVISION}", self.station),
            format!("{k},{k}A,0D"),
        ];
        for (i, c) in self.channels.iter().enumerate() {
            // n,ch_id,ph,ccbm,uu,a,b,skew,min,max,primary,secondary,PS
            lines.push(format!(
                "{},{},,predicted facility load,{UNIT},1,0,0,{},{},1,1,P",
                i + 1,
                c.name,
                c.min_mw as f32,
                c.max_mw as f32,
            ));
        }
        lines.extend([
            // The line frequency: non-critical, and the waveform has none.
            String::new(),
            "1".into(),
            format!("{},{}", s.rate_hz, s.samples),
            stamp.clone(),
            stamp,
            DATA_FORMAT.into(),
            // timemult: each row's timestamp counts sample periods of µs.
            format!("{}", ns_f64_to_us(ms_to_ns_f64(self.sample_period_ms))),
            // time_code,local_code: the timestamps are UTC.
            "0,0".into(),
            // tmq_code,leapsec: a declared clock, exact by definition.
            "0,0".into(),
        ]);
        let mut text = lines.join("\r\n");
        text.push_str("\r\n");
        text
    }
}

/// Samples per second of a period in ms.
fn rate_hz(sample_period_ms: f64) -> f64 {
    1.0 / ms_to_s(sample_period_ms)
}

/// `dd/mm/yyyy,hh:mm:ss.ssssss` (UTC) of Unix-epoch ns.
fn comtrade_timestamp(epoch_ns: EpochNs) -> String {
    let whole_s = epoch_ns.div_euclid(NS_PER_S);
    let us = epoch_ns.rem_euclid(NS_PER_S) / NS_PER_US;
    // "YYYY-MM-DDTHH:MM:SS.000Z"
    let rfc = powerlab_rundir::layout::utc_rfc3339(whole_s * NS_PER_S);
    let (date, time) = rfc.split_at(rfc.find('T').unwrap_or(rfc.len()));
    let mut ymd = date.splitn(3, '-');
    let (y, m, d) = (ymd.next(), ymd.next(), ymd.next());
    let hms = time.get(1..9).unwrap_or("00:00:00");
    format!(
        "{}/{}/{},{hms}.{us:06}",
        d.unwrap_or("01"),
        m.unwrap_or("01"),
        y.unwrap_or("1970"),
    )
}

/// A name fit for a comma-separated `.cfg` field.
fn cfg_field(name: &str) -> String {
    name.chars()
        .map(|c| if c == ',' || c.is_control() { ';' } else { c })
        .take(NAME_CHARS)
        .collect::<String>()
        .trim()
        .to_string()
}

fn invalid(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, why.to_string())
}

#[cfg(test)]
mod tests;
