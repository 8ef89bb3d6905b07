//! A recording replayed as a node: the readings `powerlab observe --csv`
//! took of real GPUs beside a user's job (the raw files' schema,
//! `ts_ns,node,gpu,instrument,value`), handed to the runner through the
//! hardware seams as if the GPUs were being read now. The runner then
//! writes a run directory of them like any other (one `workload` rung
//! over the recording), and the collator reads it like any run.
//!
//! [`Recording::read`] parses and checks the file; [`Recording::open`]
//! (or [`ReplayBackend`]) hands out one [`PowerSource`] per GPU that
//! returns each recorded row once, when the run clock has reached its
//! timestamp, and one [`Gpu`] that does nothing: it is ready at once and
//! waits out every window. Meant for a paused tokio runtime whose run
//! clock starts at [`Span::start_ns`] (`RunClock::virtual_at`): the
//! recording then replays in seconds.
//!
//! [`PowerSource`]: powerlab_core::hw::PowerSource
//! [`Gpu`]: powerlab_core::hw::Gpu

mod checks;
mod play;

pub use play::{LOOKAHEAD_NS, PRE_RUN_NS, ReplayBackend};

use powerlab_core::hw::{GpuIdentity, HwError};
use powerlab_core::units::{NS_PER_MS, NS_PER_S};
use powerlab_core::{EpochNs, Instrument, Sample};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The columns of a recording: the raw files' header
/// (`powerlab_rundir::raw::RAW_COLUMNS`), which `observe --csv` writes.
pub const HEADER: [&str; 5] = ["ts_ns", "node", "gpu", "instrument", "value"];

/// Fewest buffered power samples a GPU of a recording must have (one
/// second of the driver's 20 ms samples).
pub const MIN_BUFFERED: usize = 50;

/// How far a GPU's buffered sample may be stamped before one earlier in
/// the file (the driver restamps a sample by under a millisecond); past
/// it the file is refused as out of order.
pub const BACKWARDS_TOLERANCE_NS: i64 = 5 * NS_PER_MS;

/// The longest gap between two instant-power readings of a GPU a
/// recording may hold: the replayed sampler reads that field every poll,
/// and a run whose GPU stops answering for 2 s is stopped.
pub const MAX_INSTANT_GAP_NS: i64 = 1_500 * NS_PER_MS;

/// What the name of a recorded GPU says it is.
pub const RECORDED_GPU_NAME: &str = "recorded GPU (observe --csv)";

/// One GPU's readings, each kind sorted by time.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedGpu {
    /// Its key, as in the file (`gpu0`, …).
    pub key: String,
    /// Its enforced power limit: the first `power_limit_w` reading, W.
    pub power_limit_w: f64,
    /// Buffered power samples (`buffered_w`).
    pub buffered: Vec<Sample>,
    /// Instant power readings (`instant_w`).
    pub instant: Vec<Sample>,
    /// The 1 s average and the energy counter (`average_w`, `energy_mj`).
    pub fields: Vec<Sample>,
    /// Clocks, temperatures, clock-event reasons, the limit and the
    /// reasons' time counters.
    pub status: Vec<Sample>,
}

impl RecordedGpu {
    /// Every reading of this GPU, of every instrument.
    pub fn rows(&self) -> usize {
        self.buffered.len() + self.instant.len() + self.fields.len() + self.status.len()
    }
}

/// The stretch of a recording where every GPU has buffered samples and
/// instant readings, epoch ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// The first moment every GPU has both.
    pub start_ns: EpochNs,
    /// The last buffered sample of the GPU whose samples end first.
    pub end_ns: EpochNs,
}

impl Span {
    /// Its length, ns.
    pub fn len_ns(&self) -> i64 {
        self.end_ns - self.start_ns
    }
}

/// A parsed, checked recording.
#[derive(Debug, Clone)]
pub struct Recording {
    path: PathBuf,
    node: String,
    gpus: Vec<Arc<RecordedGpu>>,
    /// The job's stretch where the recording idles before or after it.
    job: Option<Span>,
    /// What was left out or cut, in words.
    notes: Vec<String>,
}

/// A row of the file, parsed.
struct Row {
    ts_ns: EpochNs,
    node: String,
    gpu: String,
    instrument: Instrument,
    value: f64,
}

/// One GPU's rows while the file is read, with what the checks need.
#[derive(Default)]
struct Gathered {
    rows: Vec<Sample>,
    /// Latest buffered timestamp so far, and its line.
    buffered_max: Option<(EpochNs, u64)>,
    /// Latest instant timestamp so far, and its line.
    instant_last: Option<(EpochNs, u64)>,
    /// The latest buffered samples, for stamps seen twice.
    recent: checks::Recent,
}

/// An error about `path`, at `line` when there is one.
/// Whether `node` is a plain host name: 1 to 64 ASCII letters, digits,
/// `-`, `_` and `.`, starting with a letter or a digit.
fn plain_node(node: &str) -> bool {
    (1..=64).contains(&node.len())
        && node.starts_with(|c: char| c.is_ascii_alphanumeric())
        && node
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn refused(path: &Path, line: Option<u64>, message: impl std::fmt::Display) -> HwError {
    match line {
        Some(l) => HwError::Other(format!("recording {}, line {l}: {message}", path.display())),
        None => HwError::Other(format!("recording {}: {message}", path.display())),
    }
}

impl Recording {
    /// Reads and checks a recording written by `powerlab observe --csv`.
    ///
    /// # Errors
    ///
    /// [`HwError::Other`] naming the file (and the line, where one is at
    /// fault) when it cannot be read, its header is not [`HEADER`], a row
    /// is not five fields of the right kinds (a whole-number timestamp, a
    /// known instrument, a finite value), rows name more than one node,
    /// it holds no `buffered_w` rows, a GPU has fewer than
    /// [`MIN_BUFFERED`] of them, no instant readings or no
    /// `power_limit_w` reading, a GPU's buffered samples go back in time
    /// by more than [`BACKWARDS_TOLERANCE_NS`], its instant readings stop
    /// for more than [`MAX_INSTANT_GAP_NS`], or the GPUs' readings do not
    /// overlap.
    pub fn read(path: &Path) -> Result<Recording, HwError> {
        let file = std::fs::File::open(path).map_err(|e| {
            refused(
                path,
                None,
                format!("cannot be opened: {e}; give the file `powerlab observe --csv FILE` wrote"),
            )
        })?;
        Recording::from_reader(std::io::BufReader::new(file), path)
    }

    /// [`Recording::read`] of text already open; `path` names it in errors.
    ///
    /// # Errors
    ///
    /// As [`Recording::read`].
    pub fn from_reader(reader: impl std::io::Read, path: &Path) -> Result<Recording, HwError> {
        let mut csv = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(reader);
        let mut record = csv::StringRecord::new();
        let mut header_seen = false;
        let mut node: Option<String> = None;
        let mut gathered: BTreeMap<String, Gathered> = BTreeMap::new();
        loop {
            match csv.read_record(&mut record) {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => return Err(csv_error(path, &e)),
            }
            let line = record.position().map_or(0, csv::Position::line);
            if !header_seen {
                check_header(path, line, &record)?;
                header_seen = true;
                continue;
            }
            let row = parse_row(&record).map_err(|m| refused(path, Some(line), m))?;
            checks::units(path, line, &row)?;
            match &node {
                None if !plain_node(&row.node) => {
                    return Err(refused(
                        path,
                        Some(line),
                        format!(
                            "node `{}` cannot name a node of a run directory (its files, its reports' rows): a host name is 1 to 64 ASCII letters, digits, '-', '_' and '.', starting with a letter or a digit; correct the `node` column",
                            powerlab_core::words::shown(&row.node)
                        ),
                    ));
                }
                None => node = Some(row.node.clone()),
                Some(n) if *n != row.node => {
                    return Err(refused(
                        path,
                        Some(line),
                        format!(
                            "node `{}`, where the rows before name node `{n}`: a recording is one node's; record each node into a file of its own",
                            row.node
                        ),
                    ));
                }
                Some(_) => {}
            }
            let g = gathered.entry(row.gpu.clone()).or_default();
            check_order(path, line, &row, g)?;
            g.rows.push(Sample {
                ts_ns: row.ts_ns,
                instrument: row.instrument,
                value: row.value,
            });
        }
        if !header_seen {
            return Err(refused(
                path,
                None,
                format!(
                    "the file is empty; a recording starts with the header `{}`",
                    HEADER.join(",")
                ),
            ));
        }
        if gathered.is_empty() {
            return Err(refused(
                path,
                None,
                "it holds no readings after its header (no buffered_w rows): record for longer, or give the file `powerlab observe --csv` wrote while the GPUs were read",
            ));
        }
        let mut gpus = sort_gpus(gathered)
            .into_iter()
            .map(|(key, g)| recorded_gpu(path, key, g.rows).map(Arc::new))
            .collect::<Result<Vec<_>, _>>()?;
        let out = checks::left_out(&gpus);
        gpus.retain(|g| !out.iter().any(|(k, _)| *k == g.key));
        let mut recording = Recording {
            path: path.to_path_buf(),
            node: node.unwrap_or_default(),
            gpus,
            job: None,
            notes: out.into_iter().map(|(_, words)| words).collect(),
        };
        recording.check_span()?;
        if let Some((job, words)) = checks::job_stretch(&recording.gpus, recording.span())
            .map_err(|m| refused(path, None, m))?
        {
            recording.job = Some(job);
            recording.notes.push(words);
        }
        Ok(recording)
    }

    /// The stretch a replay measures: the job's ([`Recording::span`] where
    /// the recording does not idle before or after it).
    pub fn job_span(&self) -> Span {
        self.job.unwrap_or_else(|| self.span())
    }

    /// What was left out of the recording or cut from it, in words (a GPU
    /// that took no part in the job, the idle before or after it).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The node every row names.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The GPUs, in key order (`gpu2` before `gpu10`).
    pub fn gpus(&self) -> &[Arc<RecordedGpu>] {
        &self.gpus
    }

    /// Each GPU as a run knows it: its key, the UUID `RECORDED-<key>`, the
    /// name [`RECORDED_GPU_NAME`], the index of its key (`gpu3`: 3; its
    /// position otherwise) and its recorded power limit.
    pub fn identities(&self) -> Vec<GpuIdentity> {
        self.gpus
            .iter()
            .enumerate()
            .map(|(i, g)| GpuIdentity {
                key: g.key.clone(),
                uuid: format!("RECORDED-{}", g.key),
                name: RECORDED_GPU_NAME.into(),
                nvml_index: key_index(&g.key).unwrap_or(i as u32),
                power_limit_w: g.power_limit_w,
                power_smoothing: Default::default(),
            })
            .collect()
    }

    /// Where every GPU has buffered samples and instant readings: from
    /// the latest of the GPUs' first ones to the earliest of their last
    /// buffered samples.
    pub fn span(&self) -> Span {
        let first = |g: &RecordedGpu| {
            let b = g.buffered.first().map_or(EpochNs::MAX, |s| s.ts_ns);
            let i = g.instant.first().map_or(EpochNs::MAX, |s| s.ts_ns);
            b.max(i)
        };
        Span {
            start_ns: self.gpus.iter().map(|g| first(g)).max().unwrap_or(0),
            end_ns: self
                .gpus
                .iter()
                .map(|g| g.buffered.last().map_or(EpochNs::MIN, |s| s.ts_ns))
                .min()
                .unwrap_or(0),
        }
    }

    /// The GPUs' readings overlap for at least a second.
    fn check_span(&self) -> Result<(), HwError> {
        let span = self.span();
        if span.len_ns() >= NS_PER_S {
            return Ok(());
        }
        Err(refused(
            &self.path,
            None,
            format!(
                "its GPUs ({}) have buffered samples and instant readings together for {:.2} s only; a recording needs at least 1 s of every GPU read at once: record for longer",
                self.gpus
                    .iter()
                    .map(|g| g.key.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                span.len_ns().max(0) as f64 / NS_PER_S as f64
            ),
        ))
    }
}

/// The number in a `gpu<N>` key.
fn key_index(key: &str) -> Option<u32> {
    key.strip_prefix("gpu")?.parse().ok()
}

/// The GPUs in key order: `gpu<N>` by N, then any other key by name.
fn sort_gpus(gathered: BTreeMap<String, Gathered>) -> Vec<(String, Gathered)> {
    let mut gpus: Vec<(String, Gathered)> = gathered.into_iter().collect();
    gpus.sort_by(|(a, _), (b, _)| {
        (key_index(a).is_none(), key_index(a), a).cmp(&(key_index(b).is_none(), key_index(b), b))
    });
    gpus
}

/// A csv reader's error, at its line.
fn csv_error(path: &Path, e: &csv::Error) -> HwError {
    let line = e.position().map(csv::Position::line);
    let what = match e.kind() {
        csv::ErrorKind::Utf8 { .. } => {
            "not text (invalid UTF-8): the file is damaged or not a recording".to_string()
        }
        _ => format!("cannot be read: {e}"),
    };
    refused(path, line, what)
}

/// The first line is [`HEADER`].
fn check_header(path: &Path, line: u64, record: &csv::StringRecord) -> Result<(), HwError> {
    if record.iter().eq(HEADER.iter().copied()) {
        return Ok(());
    }
    let found: Vec<&str> = record.iter().collect();
    Err(refused(
        path,
        Some(line),
        format!(
            "the header is `{}`, not `{}`: give the file `powerlab observe --csv FILE` wrote (or a run's raw/<gpu>.csv)",
            found.join(","),
            HEADER.join(",")
        ),
    ))
}

/// One data row: five fields, a whole-number timestamp, a node and GPU
/// key, a known instrument and a finite value.
fn parse_row(record: &csv::StringRecord) -> Result<Row, String> {
    let fields: Vec<&str> = record.iter().collect();
    let [ts, node, gpu, instrument, value] = fields.as_slice() else {
        return Err(format!(
            "`{}` is not a reading: a row is five fields, {}",
            fields.join(","),
            HEADER.join(",")
        ));
    };
    let ts_ns = ts
        .trim()
        .parse::<EpochNs>()
        .ok()
        .filter(|t| *t > 0)
        .ok_or_else(|| format!("ts_ns `{ts}` is not a Unix time in whole nanoseconds"))?;
    if node.trim().is_empty() {
        return Err("the node is empty".into());
    }
    if gpu.is_empty()
        || !gpu
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(format!(
            "GPU key `{gpu}` is not one observe writes (gpu0, gpu1, …: letters, digits, - and _)"
        ));
    }
    let instrument = Instrument::parse(instrument.trim()).ok_or_else(|| {
        let known: Vec<&str> = Instrument::ALL.iter().map(|i| i.as_str()).collect();
        format!(
            "unknown instrument `{instrument}` (known: {})",
            known.join(", ")
        )
    })?;
    let value = value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| {
            format!(
                "value `{value}` of {} is not a finite number",
                instrument.as_str()
            )
        })?;
    Ok(Row {
        ts_ns,
        node: node.to_string(),
        gpu: gpu.to_string(),
        instrument,
        value,
    })
}

/// A GPU's buffered samples do not go back in time (beyond
/// [`BACKWARDS_TOLERANCE_NS`]) and its instant readings do not stop for
/// more than [`MAX_INSTANT_GAP_NS`].
fn check_order(path: &Path, line: u64, row: &Row, g: &mut Gathered) -> Result<(), HwError> {
    let ms = |ns: i64| ns as f64 / NS_PER_MS as f64;
    if row.instrument == Instrument::BufferedW {
        g.recent.add(path, line, row)?;
    }
    match row.instrument {
        Instrument::BufferedW => match g.buffered_max {
            Some((max, at)) if row.ts_ns < max - BACKWARDS_TOLERANCE_NS => {
                return Err(refused(
                    path,
                    Some(line),
                    format!(
                        "{}'s buffered sample is stamped {:.1} ms before the one on line {at}: its samples go back in time; the file was edited or pieced together out of order (sort each GPU's rows by ts_ns)",
                        row.gpu,
                        ms(max - row.ts_ns)
                    ),
                ));
            }
            Some((max, _)) if row.ts_ns <= max => {}
            _ => g.buffered_max = Some((row.ts_ns, line)),
        },
        Instrument::InstantW => {
            if let Some((last, at)) = g.instant_last
                && row.ts_ns - last > MAX_INSTANT_GAP_NS
            {
                return Err(refused(
                    path,
                    Some(line),
                    format!(
                        "{}'s instant readings stop for {:.2} s (from line {at}): the replay reads that field every 20 ms as a run does, and a GPU that does not answer for 2 s stops a run; cut the recording at the gap",
                        row.gpu,
                        ms(row.ts_ns - last) / 1000.0
                    ),
                ));
            }
            g.instant_last = Some((row.ts_ns, line));
        }
        _ => {}
    }
    Ok(())
}

/// One GPU's rows sorted into its kinds, each by time, after the checks
/// that need them all: enough buffered samples, instant readings, and
/// a power limit.
fn recorded_gpu(path: &Path, key: String, rows: Vec<Sample>) -> Result<RecordedGpu, HwError> {
    let mut gpu = RecordedGpu {
        key,
        power_limit_w: f64::NAN,
        buffered: Vec::new(),
        instant: Vec::new(),
        fields: Vec::new(),
        status: Vec::new(),
    };
    for s in rows {
        let to = match s.instrument {
            Instrument::BufferedW => &mut gpu.buffered,
            Instrument::InstantW => &mut gpu.instant,
            Instrument::AverageW | Instrument::EnergyMj => &mut gpu.fields,
            _ => &mut gpu.status,
        };
        to.push(s);
    }
    for kind in [
        &mut gpu.buffered,
        &mut gpu.instant,
        &mut gpu.fields,
        &mut gpu.status,
    ] {
        kind.sort_by_key(|s| s.ts_ns);
    }
    gpu.power_limit_w = gpu
        .status
        .iter()
        .find(|s| s.instrument == Instrument::PowerLimitW)
        .map_or(f64::NAN, |s| s.value);
    let lacks = if gpu.buffered.is_empty() {
        Some("no buffered_w rows (the driver's buffered power samples)".to_string())
    } else if gpu.buffered.len() < MIN_BUFFERED {
        Some(format!(
            "only {} buffered_w samples (at least {MIN_BUFFERED}: one second of the driver's 20 ms samples)",
            gpu.buffered.len()
        ))
    } else if gpu.instant.is_empty() {
        Some("no instant_w readings".into())
    } else if gpu.power_limit_w.is_nan() {
        Some("no power_limit_w reading (its enforced limit, which every figure against the limit needs)".into())
    } else if gpu.power_limit_w <= 0.0 {
        Some(format!(
            "a power_limit_w reading of {} W (an enforced limit is above 0 W)",
            gpu.power_limit_w
        ))
    } else {
        None
    };
    match lacks {
        Some(what) => Err(refused(
            path,
            None,
            format!(
                "{} has {what}; `powerlab observe --csv` writes every one of them: record for longer, or give the whole file observe wrote",
                gpu.key
            ),
        )),
        None => Ok(gpu),
    }
}

#[cfg(test)]
mod tests;
