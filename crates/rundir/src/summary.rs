//! `summary.csv` (and the rung rows of `summary.json`): one row per rung,
//! declared once, here. The collator writes it from its rung summaries
//! (`RungSummary::row`), and everything that reads a summary back (a rack
//! collating its nodes, `powerlab compare`) reads it through
//! [`read_summary`]. The columns stand in the order every run has written
//! them. The rung's facts and its headline figures (every column a reader
//! of the summary ever required) must be there; a column added later is
//! read as absent from an older file.

use crate::layout::RunDirError;
use powerlab_core::{Instrument, Mode, PhaseKind};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// How a rung's node figures were obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Method {
    /// The composed node cycle of a duty rung: every GPU's buffered
    /// samples folded on its own edges and summed.
    #[serde(rename = "composed cycle")]
    ComposedCycle,
    /// The sample-and-hold sum of the GPUs' readings (constant load).
    #[serde(rename = "sample and hold")]
    SampleAndHold,
    /// A duty rung without a composed cycle: the energy counter's mean only.
    #[serde(rename = "energy counter")]
    EnergyCounter,
    /// No figure (the verdict says why).
    #[serde(rename = "none")]
    None,
}

impl Method {
    /// As written in `summary.csv` and the report.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::ComposedCycle => "composed cycle",
            Method::SampleAndHold => "sample and hold",
            Method::EnergyCounter => "energy counter",
            Method::None => "none",
        }
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// One rung's row of `summary.csv`: the rung's facts as the run recorded
/// them, then its node figures (W, J, µs, ppm as the names say).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    /// The rung's id in the run.
    pub rung_id: u32,
    /// The rung's label (`phase/p100ms/in_phase`, with `/rN` for a repeat).
    pub label: String,
    /// The phase it belongs to.
    pub phase: String,
    /// The phase kind.
    pub kind: PhaseKind,
    /// In phase or staggered.
    pub mode: Mode,
    /// The achieved period, ms (duty rungs).
    pub period_ms: Option<f64>,
    /// The requested period, ms (a detuned rung's request).
    #[serde(default)]
    pub nominal_period_ms: Option<f64>,
    /// The on-fraction.
    pub duty: f64,
    /// Which repeat (1-based).
    pub repeat: u32,
    /// How the node figures were obtained: `composed cycle` (duty rungs),
    /// `sample and hold` (constant load), `energy counter` (a duty rung
    /// without a composed cycle: the mean only), or `none`.
    pub method: Method,
    /// Why figures are missing or qualified (empty when all is stated).
    pub verdict: Option<String>,
    /// Instrument the figures come from (`buffered_w`, `instant_w`, or
    /// `energy_mj` for the energy counter's mean).
    pub instrument: Instrument,
    /// Samples behind the figures: grid points with every GPU present
    /// (sample and hold), or buffered samples folded (composed cycle).
    #[serde(default)]
    pub samples: u64,
    /// Sample and hold: fraction of the window's grid points with every GPU
    /// present. Composed cycle: the lowest share of the cycle any GPU's
    /// samples covered. Energy counter: the share of the window the
    /// counter's readings span (the mean is theirs).
    #[serde(default)]
    pub coverage: f64,
    /// Harmonics in the composed cycle.
    #[serde(default)]
    pub harmonics: Option<u32>,
    /// Mean node power, W.
    pub mean_w: Option<f64>,
    /// Peak, W.
    pub peak_w: Option<f64>,
    /// 1st percentile, W.
    #[serde(default)]
    pub p1_w: Option<f64>,
    /// 99th percentile, W.
    #[serde(default)]
    pub p99_w: Option<f64>,
    /// p99 − p1, W.
    pub spread_w: Option<f64>,
    /// p90 − p10, W.
    pub swing_w: Option<f64>,
    /// For duty rungs: what the raw readings of `instrument` can make of
    /// the period (resolvable / instrument limit / aliased), from the run's
    /// sensor model. The raw figures of an aliased rung are meaningless.
    #[serde(default)]
    pub instrument_verdict: Option<String>,
    /// Energy over the measured window, J.
    #[serde(default)]
    pub energy_j: Option<f64>,
    /// What NVML sampled: mean of the sample-and-hold node curve, W.
    #[serde(default)]
    pub raw_mean_w: Option<f64>,
    /// What NVML sampled: its peak, W.
    #[serde(default)]
    pub raw_peak_w: Option<f64>,
    /// What NVML sampled: its p99 − p1, W (not the node's spread for a duty rung).
    #[serde(default)]
    pub raw_spread_w: Option<f64>,
    /// What NVML sampled: its p90 − p10, W.
    #[serde(default)]
    pub raw_swing_w: Option<f64>,
    /// The instant field's mean, W (second instrument).
    #[serde(default)]
    pub instant_mean_w: Option<f64>,
    /// The instant field's spread, W.
    #[serde(default)]
    pub instant_spread_w: Option<f64>,
    /// The 1 s average field's mean, W — comparison only.
    #[serde(default)]
    pub average_field_mean_w: Option<f64>,
    /// The 1 s average field's spread, W — comparison only, never a result.
    #[serde(default)]
    pub average_field_spread_w: Option<f64>,
    /// The 1 s average field's swing (p90 − p10), W — comparison only.
    #[serde(default)]
    pub average_field_swing_w: Option<f64>,
    /// Largest |start error| of any GPU against its intended start, µs.
    #[serde(default)]
    pub start_error_max_us: Option<f64>,
    /// Start skew across GPUs after removing intended offsets, µs.
    #[serde(default)]
    pub start_skew_us: Option<f64>,
    /// Rising edges: median of achieved − intended (signed), µs.
    #[serde(default)]
    pub rise_err_p50_us: Option<f64>,
    /// Rising edges: 99th percentile of |achieved − intended|, µs.
    #[serde(default)]
    pub rise_err_p99_us: Option<f64>,
    /// Rising edges: largest |achieved − intended|, µs.
    #[serde(default)]
    pub rise_err_max_us: Option<f64>,
    /// Falling edges: median of achieved − intended (signed), µs.
    #[serde(default)]
    pub fall_err_p50_us: Option<f64>,
    /// Falling edges: 99th percentile of |achieved − intended|, µs.
    #[serde(default)]
    pub fall_err_p99_us: Option<f64>,
    /// Falling edges: largest |achieved − intended|, µs.
    #[serde(default)]
    pub fall_err_max_us: Option<f64>,
    /// Per edge, the spread across GPUs of achieved − intended: 99th percentile, µs.
    #[serde(default)]
    pub edge_skew_p99_us: Option<f64>,
    /// Largest |drift| of a GPU's device clock against the run clock over the rung, µs/s.
    #[serde(default)]
    pub clock_drift_ppm: Option<f64>,
    /// Every GPU started within the barrier tolerance of its intended start.
    #[serde(default)]
    pub barrier_ok: Option<bool>,
    /// Why the rung's edges are out of tolerance (`[limits] edge_p99_us`,
    /// `edge_max_us`) or its on-phases drew less than the sustained level;
    /// empty when both hold.
    #[serde(default)]
    pub edges_verdict: Option<String>,
    /// Lowest share of the measured window that any GPU's readings cover.
    #[serde(default)]
    pub window_coverage: Option<f64>,
    /// Why the rung's raw data are incomplete (a GPU's file missing or cut
    /// short, a run stopped mid-rung); empty when every GPU covers the window.
    pub incomplete: Option<String>,
    /// The mean's 95 % interval, low end, W.
    #[serde(default)]
    pub mean_ci95_lo_w: Option<f64>,
    /// The mean's 95 % interval, high end, W.
    #[serde(default)]
    pub mean_ci95_hi_w: Option<f64>,
    /// The peak's 95 % interval, low end, W.
    #[serde(default)]
    pub peak_ci95_lo_w: Option<f64>,
    /// The peak's 95 % interval, high end, W.
    #[serde(default)]
    pub peak_ci95_hi_w: Option<f64>,
    /// The spread's 95 % interval, low end, W.
    #[serde(default)]
    pub spread_ci95_lo_w: Option<f64>,
    /// The spread's 95 % interval, high end, W.
    #[serde(default)]
    pub spread_ci95_hi_w: Option<f64>,
    /// The swing's 95 % interval, low end, W.
    #[serde(default)]
    pub swing_ci95_lo_w: Option<f64>,
    /// The swing's 95 % interval, high end, W.
    #[serde(default)]
    pub swing_ci95_hi_w: Option<f64>,
    /// The node's on−off step of a composed duty rung, W.
    #[serde(default)]
    pub step_w: Option<f64>,
    /// What the composed figures' intervals leave open, in words: the
    /// figures only bounded (an interval wider than the figure or than a
    /// quarter of the node's step, each as `≤ hi` or `lo–hi` at 95 %), or,
    /// from fewer than 5 whole cycles, no bound at all with the rung
    /// length that would give one (empty when every figure is resolved).
    #[serde(default)]
    pub unresolved: Option<String>,
    /// Whole cycles the intervals were resampled from (a rack: the fewest
    /// of any node).
    #[serde(default)]
    pub cycles: Option<usize>,
    /// The columns after these: the metrics declared only in the
    /// collator's registry (`powerlab_analysis::metric`), each with its
    /// value, in the order written.
    #[serde(skip)]
    pub extra: Vec<(String, Option<f64>)>,
}

impl SummaryRow {
    /// The value of a column after the typed ones (none where absent).
    pub fn extra_value(&self, column: &str) -> Option<f64> {
        self.extra
            .iter()
            .find(|(c, _)| c == column)
            .and_then(|x| x.1)
    }

    /// The row as `summary.json` writes it: the typed columns, then the
    /// extra ones.
    pub fn json(&self) -> impl Serialize + '_ {
        #[derive(Serialize)]
        struct Json<'a> {
            #[serde(flatten)]
            row: &'a SummaryRow,
            #[serde(flatten)]
            extra: Extra<'a>,
        }
        Json {
            row: self,
            extra: Extra(&self.extra),
        }
    }

    /// Mean, peak, spread and swing, each with its 95 % interval
    /// (`(figure, lo, hi)`, W), in that order; None where any is not stated.
    pub fn stated(&self) -> Option<[(f64, f64, f64); 4]> {
        let one = |v: Option<f64>, lo: Option<f64>, hi: Option<f64>| Some((v?, lo?, hi?));
        Some([
            one(self.mean_w, self.mean_ci95_lo_w, self.mean_ci95_hi_w)?,
            one(self.peak_w, self.peak_ci95_lo_w, self.peak_ci95_hi_w)?,
            one(self.spread_w, self.spread_ci95_lo_w, self.spread_ci95_hi_w)?,
            one(self.swing_w, self.swing_ci95_lo_w, self.swing_ci95_hi_w)?,
        ])
    }
}

/// Reads a `summary.csv` (no rows where the file is absent; a torn last
/// line is dropped).
///
/// # Errors
///
/// [`RunDirError::Format`] naming the line that does not read as a row,
/// [`RunDirError::Io`] when the file cannot be read.
pub fn read_summary(path: &Path) -> Result<Vec<SummaryRow>, RunDirError> {
    let mut rows: Vec<SummaryRow> = crate::edges::read_rows(path)?;
    if rows.is_empty() {
        return Ok(rows);
    }
    // The columns after the typed ones, by name, as numbers.
    let bad = |e: &dyn std::fmt::Display| RunDirError::Format {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let bytes = crate::layout::read_regular(path, None)?;
    let mut rdr = csv::Reader::from_reader(std::io::Cursor::new(bytes));
    let headers = rdr.headers().map_err(|e| bad(&e))?.clone();
    let typed = typed_columns();
    let extra: Vec<(usize, &str)> = headers
        .iter()
        .enumerate()
        .filter(|(_, h)| !typed.contains(h))
        .collect();
    if extra.is_empty() {
        return Ok(rows);
    }
    for (row, rec) in rows.iter_mut().zip(rdr.records()) {
        let rec = rec.map_err(|e| bad(&e))?;
        row.extra = extra
            .iter()
            .map(|(k, h)| (h.to_string(), rec.get(*k).and_then(|v| v.parse().ok())))
            .collect();
    }
    Ok(rows)
}

/// Writes `rows` to `path` as `summary.csv`: a header of the typed
/// columns, then the first row's extra ones.
///
/// # Errors
///
/// [`RunDirError::Io`] when the file cannot be written, or a row cannot
/// be serialized.
pub fn write_summary(rows: &[SummaryRow], path: &Path) -> Result<(), RunDirError> {
    let io = |e: csv::Error| RunDirError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(e),
    };
    let mut w = csv::Writer::from_path(path).map_err(io)?;
    for (i, r) in rows.iter().enumerate() {
        let (head, rec) = typed_record(r).map_err(io)?;
        if i == 0 {
            w.write_record(head.iter().chain(r.extra.iter().map(|x| x.0.as_str())))
                .map_err(io)?;
        }
        let extra = values_record(&r.extra).map_err(io)?;
        w.write_record(rec.iter().chain(extra.iter())).map_err(io)?;
    }
    w.flush().map_err(|e| RunDirError::Io {
        path: path.to_path_buf(),
        source: e,
    })
}

/// The header and the record of a row's typed columns, as the `csv`
/// crate writes them.
fn typed_record(r: &SummaryRow) -> Result<(csv::StringRecord, csv::StringRecord), csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.serialize(r)?;
    let bytes = w
        .into_inner()
        .map_err(|e| csv::Error::from(e.into_error()))?;
    let mut rdr = csv::Reader::from_reader(bytes.as_slice());
    let head = rdr.headers()?.clone();
    let rec = rdr.records().next().transpose()?.unwrap_or_default();
    Ok((head, rec))
}

/// The extra columns' values as the `csv` crate writes numbers.
fn values_record(extra: &[(String, Option<f64>)]) -> Result<csv::StringRecord, csv::Error> {
    if extra.is_empty() {
        return Ok(csv::StringRecord::new());
    }
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    w.serialize(extra.iter().map(|x| x.1).collect::<Vec<_>>())?;
    let bytes = w
        .into_inner()
        .map_err(|e| csv::Error::from(e.into_error()))?;
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(bytes.as_slice());
    Ok(rdr.records().next().transpose()?.unwrap_or_default())
}

/// The typed columns' names, as `SummaryRow` declares them.
fn typed_columns() -> Vec<&'static str> {
    /// Records the field names serde asks a deserializer for.
    struct Names(Vec<&'static str>);
    impl<'de> serde::Deserializer<'de> for &mut Names {
        type Error = serde::de::value::Error;
        fn deserialize_any<V: serde::de::Visitor<'de>>(
            self,
            _: V,
        ) -> Result<V::Value, Self::Error> {
            Err(serde::de::Error::custom("names only"))
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = fields.to_vec();
            Err(serde::de::Error::custom("names only"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }
    let mut names = Names(Vec::new());
    let _ = SummaryRow::deserialize(&mut names);
    names.0
}

/// The extra columns as a map, for `summary.json`.
struct Extra<'a>(&'a [(String, Option<f64>)]);

impl Serialize for Extra<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header and one whole row of every required column.
    const HEAD: &str = "rung_id,label,phase,kind,mode,period_ms,duty,repeat,method,verdict,instrument,mean_w,peak_w,spread_w,swing_w,incomplete";
    const ROW: &str =
        "1,idle,idle,idle,in_phase,,1.0,1,sample and hold,,buffered_w,100.5,120.0,20.0,,";

    fn read(text: &str) -> Result<Vec<SummaryRow>, RunDirError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.csv");
        std::fs::write(&path, text).unwrap();
        read_summary(&path)
    }

    #[test]
    fn an_older_row_without_the_later_columns_reads_them_as_absent() {
        let rows = read(&format!("{HEAD}\n{ROW}\n")).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].mean_w, Some(100.5));
        assert_eq!(
            (rows[0].cycles, rows[0].step_w, rows[0].samples),
            (None, None, 0)
        );
    }

    #[test]
    fn a_whole_last_row_that_does_not_read_is_an_error_not_a_torn_line() {
        let bad = ROW.replace("buffered_w", "Buffered_W");
        let e = read(&format!("{HEAD}\n{ROW}\n{bad}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 3"), "{e}");
        // Cut off mid-write (no newline): the whole rows before it are kept.
        let rows = read(&format!("{HEAD}\n{ROW}\n1,idle,idle,id")).unwrap();
        assert_eq!(rows.len(), 1);
    }

    #[test]
    fn the_extra_columns_follow_the_typed_ones_and_read_back_by_name() {
        let mut row = read(&format!("{HEAD}\n{ROW}\n")).unwrap().remove(0);
        row.extra = vec![("p95_w".into(), Some(118.25)), ("x_w".into(), None)];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.csv");
        write_summary(std::slice::from_ref(&row), &path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let head = text.lines().next().unwrap();
        assert!(head.ends_with(",cycles,p95_w,x_w"), "{head}");
        assert!(text.lines().nth(1).unwrap().ends_with(",118.25,"), "{text}");
        let back = read_summary(&path).unwrap();
        assert_eq!(back, vec![row.clone()]);
        assert_eq!(back[0].extra_value("p95_w"), Some(118.25));
        let json = serde_json::to_string(&row.json()).unwrap();
        assert!(
            json.ends_with(r#""cycles":null,"p95_w":118.25,"x_w":null}"#),
            "{json}"
        );
    }

    #[test]
    fn a_missing_required_column_is_refused() {
        let head = HEAD.replace(",method", "");
        let row = ROW.replace(",sample and hold", "");
        let e = read(&format!("{head}\n{row}\n")).unwrap_err().to_string();
        assert!(e.contains("method"), "{e}");
    }
}
