//! What a node's collation hands to its rack: the node curve at full
//! precision (`report/node_curve.parquet`, with how many GPUs each point
//! holds), the composed cycle of every duty rung
//! (`report/node_cycles.parquet`) and the inputs they were computed from
//! (`report/inputs.json`: each input file's size, modification time and
//! CRC-32; and the hand-off format). The rack step reads these, each
//! node's `summary.csv` and `edges.csv`, never the raw power files; a node
//! whose inputs changed since is stale and is collated again. A file is
//! known by its content, never by its modification time alone: a copy of
//! the run (`cp -r`, new times) is up to date, a file rewritten with other
//! bytes is not. The Parquet files are plain tables: DuckDB or Spark read
//! a fleet's node curves as they are.

use polars::prelude::*;
use powerlab_analysis::curve::{CURVE_INSTRUMENTS, NodeCurve};
use powerlab_analysis::cycle::CyclePart;
use powerlab_analysis::summary::Cycles;
use powerlab_rundir::raw::StoredSum;
use powerlab_rundir::{ReportFile, RunFile};
use powerlab_samples::error::CollateError;
use powerlab_samples::load::Run;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The hand-off format: a collator that writes another one recollates.
pub const FORMAT: u32 = 1;
/// The node curve, full precision.
pub const CURVE_FILE: &str = ReportFile::NodeCurveParquet.file_name();
/// The composed cycles of the duty rungs.
pub const CYCLES_FILE: &str = ReportFile::NodeCyclesParquet.file_name();
/// What the report was computed from.
pub const INPUTS_FILE: &str = ReportFile::Inputs.file_name();

/// The files a node's report was computed from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inputs {
    /// The hand-off format ([`FORMAT`]).
    pub format: u32,
    /// Every input file, by path inside the run directory, sorted.
    pub files: Vec<InputFile>,
    /// The files the rack reads from the report (`node_curve.parquet`,
    /// `node_cycles.parquet`, `summary.csv`), with their CRC-32: a report
    /// file edited, swapped or cut after its collation makes the node
    /// stale, never a silent input to the rack.
    #[serde(default)]
    pub outputs: Vec<InputFile>,
}

/// The report files the rack and `compare` read, checksummed in
/// [`Inputs::outputs`].
pub const OUTPUTS: [&str; 4] = [
    CURVE_FILE,
    CYCLES_FILE,
    ReportFile::SummaryCsv.file_name(),
    ReportFile::PerGpuCsv.file_name(),
];

/// One input file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputFile {
    /// Path inside the run directory (`raw/gpu0.csv`).
    pub file: String,
    /// Size, bytes.
    pub bytes: u64,
    /// Last modification, ns since the Unix epoch.
    pub modified_ns: i64,
    /// CRC-32 of the whole file, hex (None in an `inputs.json` written
    /// before every file was checksummed: files above [`CRC_LIMIT_BYTES`]
    /// had none).
    pub crc32: Option<String>,
}

/// Files up to this size are checksummed on every freshness check; a
/// larger one (a raw sample file) is read again only where its size or
/// modification time differ from its collation's: reading every node's
/// raw files to prove nothing changed would cost what the rack step saves
/// (collation itself verifies their checksums).
pub const CRC_LIMIT_BYTES: u64 = 16 << 20;

/// Whether a node's report can stand for its raw files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Freshness {
    /// Every hand-off file is there and the inputs are those it was computed from.
    Fresh,
    /// As fresh, but the run's `raw/` is gone (archived): the report is the
    /// only record of it and is reused as it was.
    RawArchived,
    /// It must be collated again; the text says why.
    Stale(String),
}

fn crc_of(path: &Path) -> Result<u32, CollateError> {
    let mut f = std::fs::File::open(path).map_err(|e| CollateError::io(path, e))?;
    let mut h = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| CollateError::io(path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize())
}

/// Size and CRC-32 of a report file (its modification time is not part of
/// what it says).
fn output_file(report_dir: &Path, name: &str) -> Result<InputFile, CollateError> {
    let path = report_dir.join(name);
    let meta = std::fs::metadata(&path).map_err(|e| CollateError::io(&path, e))?;
    Ok(InputFile {
        file: name.to_string(),
        bytes: meta.len(),
        modified_ns: 0,
        crc32: Some(format!("{:08x}", crc_of(&path)?)),
    })
}

/// A file's modification time, ns since the Unix epoch (0: unknown).
fn modified_ns(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// `rel`'s size and modification time, its CRC-32 left for
/// [`Inputs::with_read`].
fn unsummed_file(dir: &Path, rel: &Path) -> Result<InputFile, CollateError> {
    let path = dir.join(rel);
    let meta = std::fs::metadata(&path).map_err(|e| CollateError::io(&path, e))?;
    Ok(InputFile {
        file: rel.to_string_lossy().into_owned(),
        bytes: meta.len(),
        modified_ns: modified_ns(&meta),
        crc32: None,
    })
}

/// `rel`'s size, modification time and CRC-32.
fn input_file(dir: &Path, rel: &Path) -> Result<InputFile, CollateError> {
    let mut file = unsummed_file(dir, rel)?;
    file.crc32 = Some(format!("{:08x}", crc_of(&dir.join(rel))?));
    Ok(file)
}

/// Whether the file `rel` of `dir` is the one `was` records: the same size
/// and CRC-32. A file above [`CRC_LIMIT_BYTES`] whose size and
/// modification time are the recorded ones is taken as unchanged without
/// reading it; one whose time moved (a copy) is read and known by its
/// checksum, and is changed where its collation recorded none.
///
/// # Errors
///
/// [`CollateError::Io`] when the file cannot be read.
fn unchanged(dir: &Path, rel: &Path, was: &InputFile) -> Result<bool, CollateError> {
    let path = dir.join(rel);
    let meta = std::fs::metadata(&path).map_err(|e| CollateError::io(&path, e))?;
    if meta.len() != was.bytes {
        return Ok(false);
    }
    if meta.len() > CRC_LIMIT_BYTES && modified_ns(&meta) == was.modified_ns {
        return Ok(true);
    }
    match &was.crc32 {
        Some(crc) => Ok(*crc == format!("{:08x}", crc_of(&path)?)),
        None => Ok(false),
    }
}

/// Whether a top-level entry of a run directory is an input of its report:
/// every plain file but locks and hidden files, and everything under `raw/`
/// (not `report/`, its staging copies, or the simulator's `sim-truth/`,
/// which the collator never reads).
fn input_paths(dir: &Path) -> Result<Vec<PathBuf>, CollateError> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| CollateError::io(dir, e))? {
        let e = e.map_err(|e| CollateError::io(dir, e))?;
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        if name.starts_with('.') || name.ends_with(powerlab_rundir::lock::LOCK_SUFFIX) {
            continue;
        }
        if path.is_file() {
            out.push(PathBuf::from(&name));
        } else if (name == RunFile::Raw.name() || name == RunFile::NodePower.name())
            && path.is_dir()
        {
            for r in std::fs::read_dir(&path).map_err(|e| CollateError::io(&path, e))? {
                let r = r.map_err(|e| CollateError::io(&path, e))?;
                if r.path().is_file() {
                    out.push(PathBuf::from(&name).join(r.file_name()));
                }
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The inputs of `dir`'s report as they are now.
///
/// # Errors
///
/// Returns [`CollateError::Io`] when the run directory or `raw/` cannot be
/// listed, or a file in them cannot be read.
pub fn inputs_of(dir: &Path) -> Result<Inputs, CollateError> {
    inputs_before_reading(dir, &[])
}

/// As [`inputs_of`], but the files of `to_read` (the raw files a
/// collation is about to read, as [`powerlab_rundir::RunDir::raw_files`]
/// names them) are given no CRC-32 here: [`Inputs::with_read`] takes it
/// from the bytes the collation read, so that they are not read twice.
/// Every modification time is taken now, before the reading.
///
/// # Errors
///
/// As [`inputs_of`].
pub fn inputs_before_reading(dir: &Path, to_read: &[PathBuf]) -> Result<Inputs, CollateError> {
    let mut files = Vec::new();
    for rel in input_paths(dir)? {
        files.push(if to_read.contains(&dir.join(&rel)) {
            unsummed_file(dir, &rel)?
        } else {
            input_file(dir, &rel)?
        });
    }
    Ok(Inputs {
        format: FORMAT,
        files,
        outputs: Vec::new(),
    })
}

impl Inputs {
    /// Gives each input [`inputs_before_reading`] left without a CRC-32
    /// the size and CRC-32 of its bytes as the collation read them
    /// (`read`: path and sum); one the collation did not read after all is
    /// read here.
    ///
    /// # Errors
    ///
    /// [`CollateError::Io`] when such a file cannot be read.
    pub fn with_read(
        mut self,
        dir: &Path,
        read: &[(PathBuf, StoredSum)],
    ) -> Result<Inputs, CollateError> {
        for f in self.files.iter_mut().filter(|f| f.crc32.is_none()) {
            let path = dir.join(&f.file);
            let (bytes, crc32) = match read.iter().find(|(p, _)| *p == path) {
                Some((_, sum)) => (sum.bytes, sum.crc32),
                None => (f.bytes, crc_of(&path)?),
            };
            (f.bytes, f.crc32) = (bytes, Some(format!("{crc32:08x}")));
        }
        Ok(self)
    }
}

/// Whether `run_dir`'s report is up to date with its files.
pub fn freshness(run_dir: &Path) -> Freshness {
    let report = run_dir.join(powerlab_rundir::RunFile::Report.name());
    for f in [
        CURVE_FILE,
        CYCLES_FILE,
        INPUTS_FILE,
        ReportFile::SummaryCsv.file_name(),
    ] {
        if !report.join(f).is_file() {
            return Freshness::Stale(format!("no report/{f}"));
        }
    }
    let path = report.join(INPUTS_FILE);
    let recorded: Inputs = match std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
    {
        Some(i) => i,
        None => return Freshness::Stale(format!("{} does not parse", path.display())),
    };
    if recorded.format != FORMAT {
        return Freshness::Stale(format!(
            "its report is of hand-off format {}, this collator writes {FORMAT}",
            recorded.format
        ));
    }
    for want in &recorded.outputs {
        match output_file(&report, &want.file) {
            Ok(now) if now == *want => {}
            _ => {
                return Freshness::Stale(format!(
                    "report/{} is not the file its collation wrote",
                    want.file
                ));
            }
        }
    }
    if recorded.outputs.len() != OUTPUTS.len() {
        return Freshness::Stale("its report lists no checksums of its own files".into());
    }
    // Raw files archived away (no `raw/` at all): the report stands for
    // them as it was; everything else must still match.
    let archived = !run_dir.join(powerlab_rundir::RunFile::Raw.name()).exists();
    match inputs_stale(run_dir, recorded, archived) {
        Ok(Some(why)) => Freshness::Stale(why),
        Err(e) => Freshness::Stale(e.to_string()),
        Ok(None) if archived => Freshness::RawArchived,
        Ok(None) => Freshness::Fresh,
    }
}

/// Why the input files of `run_dir` are not those `recorded` lists (one
/// new, changed or gone), or None; `raw/` left out where `archived`.
///
/// # Errors
///
/// [`CollateError::Io`] when the directory cannot be listed or a file read.
fn inputs_stale(
    run_dir: &Path,
    mut recorded: Inputs,
    archived: bool,
) -> Result<Option<String>, CollateError> {
    let mut now = input_paths(run_dir)?;
    if archived {
        recorded.files.retain(|f| !f.file.starts_with("raw/"));
        now.retain(|p| !p.starts_with("raw"));
    }
    let was: BTreeMap<String, &InputFile> =
        recorded.files.iter().map(|f| (f.file.clone(), f)).collect();
    let names: Vec<String> = now
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    for (rel, name) in now.iter().zip(&names) {
        match was.get(name) {
            None => return Ok(Some(format!("{name} is new since its collation"))),
            Some(w) if !unchanged(run_dir, rel, w)? => {
                return Ok(Some(format!("{name} changed since its collation")));
            }
            Some(_) => {}
        }
    }
    Ok(recorded
        .files
        .iter()
        .find(|f| !names.contains(&f.file))
        .map(|gone| format!("{} is gone since its collation", gone.file)))
}

/// Writes `inputs.json` into `report_dir`, with the checksums of the
/// report files the rack reads (written before it).
///
/// # Errors
///
/// Returns [`CollateError::Io`] when a report file cannot be read or the
/// file cannot be written.
pub fn write_inputs(inputs: &Inputs, report_dir: &Path) -> Result<PathBuf, CollateError> {
    let mut inputs = inputs.clone();
    inputs.outputs = OUTPUTS
        .iter()
        .map(|f| output_file(report_dir, f))
        .collect::<Result<_, _>>()?;
    let path = report_dir.join(INPUTS_FILE);
    let text = serde_json::to_string_pretty(&inputs).map_err(|e| CollateError::BadRaw {
        path: path.clone(),
        message: e.to_string(),
    })?;
    std::fs::write(&path, text).map_err(|e| CollateError::io(&path, e))?;
    Ok(path)
}

/// Column holding how many GPUs have a reading of `instrument` at a point.
pub fn gpus_column(node_column: &str) -> String {
    format!("{node_column}_gpus")
}

/// Writes the node curve at full precision: `t_ns`, each instrument's node
/// sum (null where any GPU has no reading) and its GPU count.
///
/// # Errors
///
/// Returns [`CollateError::Polars`] when selecting the columns or writing
/// Parquet fails, and [`CollateError::Io`] when the file cannot be created.
pub fn write_curve(
    curve: &NodeCurve,
    run: &Run,
    report_dir: &Path,
) -> Result<PathBuf, CollateError> {
    let height = curve.df.height();
    let mut columns = vec![
        curve
            .df
            .column("t_ns")
            .map_err(CollateError::polars("the node curve's time"))?
            .clone(),
    ];
    for (inst, node_col) in CURVE_INSTRUMENTS {
        let Ok(node) = curve.df.column(node_col) else {
            continue;
        };
        columns.push(node.clone());
        // How many GPUs have a reading at each point: each GPU's presence
        // added as a column (whole numbers, so in any order the same).
        let mut present = UInt32Chunked::full(gpus_column(node_col).as_str().into(), 0, height);
        for (n, g) in &run.series {
            let per_gpu = curve
                .df
                .column(format!("{n}/{g}:{inst}").as_str())
                .map_err(CollateError::polars("a GPU's column of the node curve"))?;
            let ok = per_gpu
                .is_not_null()
                .cast(&DataType::UInt32)
                .map_err(CollateError::polars("a GPU's column of the node curve"))?;
            present = &present + ok.u32().map_err(CollateError::polars("a GPU count"))?;
        }
        columns.push(present.into_column());
    }
    let mut df = DataFrame::new(height, columns)
        .map_err(CollateError::polars("selecting the node curve for Parquet"))?;
    powerlab_samples::parquet_io::write_frame(&mut df, &report_dir.join(CURVE_FILE))
}

/// Writes every composed cycle to `path`: one row per point, with the
/// rung's period, harmonics, coverage and samples.
///
/// # Errors
///
/// Returns [`CollateError::Polars`] when the frame cannot be built or
/// written, and [`CollateError::Io`] when the file cannot be created.
pub fn write_cycles(cycles: &Cycles, path: &Path) -> Result<PathBuf, CollateError> {
    let mut ids: Vec<u32> = cycles
        .iter()
        .filter(|(_, c)| c.is_ok())
        .map(|(id, _)| *id)
        .collect();
    ids.sort_unstable();
    let (mut rung, mut period, mut harm, mut cov, mut samples, mut index, mut power) =
        (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    for id in ids {
        let Some(Ok(c)) = cycles.get(&id) else {
            continue;
        };
        for (i, v) in c.values.iter().enumerate() {
            rung.push(id);
            period.push(c.period_ms);
            harm.push(c.harmonics as u32);
            cov.push(c.coverage);
            samples.push(c.samples as u64);
            index.push(i as u32);
            power.push(*v);
        }
    }
    let mut df = DataFrame::new(
        rung.len(),
        vec![
            Column::new("rung_id".into(), rung),
            Column::new("period_ms".into(), period),
            Column::new("harmonics".into(), harm),
            Column::new("coverage".into(), cov),
            Column::new("samples".into(), samples),
            Column::new("index".into(), index),
            Column::new("power_w".into(), power),
        ],
    )
    .map_err(CollateError::polars("the node cycles"))?;
    powerlab_samples::parquet_io::write_frame(&mut df, path)
}

/// Reads a node's composed cycles, by rung.
///
/// # Errors
///
/// Returns [`CollateError::Io`] when the file cannot be opened and
/// [`CollateError::Polars`] when it is not the table [`write_cycles`] writes.
pub fn read_cycles(report_dir: &Path) -> Result<BTreeMap<u32, CyclePart>, CollateError> {
    let df = read_parquet(&report_dir.join(CYCLES_FILE), None)?;
    let get = |name: &str| {
        df.column(name)
            .map_err(CollateError::polars("a node cycles column"))
    };
    let rung = get("rung_id")?
        .u32()
        .map_err(CollateError::polars("rung_id"))?
        .clone();
    let period = get("period_ms")?
        .f64()
        .map_err(CollateError::polars("period_ms"))?
        .clone();
    let harm = get("harmonics")?
        .u32()
        .map_err(CollateError::polars("harmonics"))?
        .clone();
    let cov = get("coverage")?
        .f64()
        .map_err(CollateError::polars("coverage"))?
        .clone();
    let samples = get("samples")?
        .u64()
        .map_err(CollateError::polars("samples"))?
        .clone();
    let power = get("power_w")?
        .f64()
        .map_err(CollateError::polars("power_w"))?
        .clone();
    let mut out: BTreeMap<u32, CyclePart> = BTreeMap::new();
    for i in 0..df.height() {
        let (Some(id), Some(p), Some(h), Some(c), Some(s), Some(v)) = (
            rung.get(i),
            period.get(i),
            harm.get(i),
            cov.get(i),
            samples.get(i),
            power.get(i),
        ) else {
            continue;
        };
        out.entry(id)
            .or_insert_with(|| CyclePart {
                period_ms: p,
                harmonics: h as usize,
                coverage: c,
                samples: s as usize,
                values: Vec::new(),
            })
            .values
            .push(v);
    }
    Ok(out)
}

/// Reads a Parquet file, only `columns` when given.
///
/// # Errors
///
/// Returns [`CollateError::Io`] when the file cannot be opened and
/// [`CollateError::Polars`] when it does not read as Parquet.
pub fn read_parquet(path: &Path, columns: Option<Vec<String>>) -> Result<DataFrame, CollateError> {
    let file = std::fs::File::open(path).map_err(|e| CollateError::io(path, e))?;
    ParquetReader::new(file)
        .with_columns(columns)
        .finish()
        .map_err(|e| CollateError::BadRaw {
            path: path.to_path_buf(),
            message: format!("does not read as Parquet ({e}): collate the node again"),
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test that unwraps reports its failure by panicking
    use super::*;

    #[test]
    fn inputs_summed_from_the_bytes_read_are_those_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("raw");
        std::fs::create_dir(&raw).unwrap();
        std::fs::write(dir.path().join("manifest.json"), "{}").unwrap();
        std::fs::write(
            raw.join("gpu0.csv"),
            "ts_ns,node,gpu,instrument,value\n1,n,g,instant_w,5\n",
        )
        .unwrap();
        std::fs::write(raw.join("gpu1.csv"), "ts_ns,node,gpu,instrument,value\n").unwrap();
        let to_read = vec![raw.join("gpu0.csv"), raw.join("gpu1.csv")];
        let gpu0 = powerlab_rundir::raw::RawFile::read(&to_read[0]).unwrap();
        let pending = inputs_before_reading(dir.path(), &to_read).unwrap();
        // gpu1.csv was not read after all: it is read for its sum here.
        let summed = pending
            .clone()
            .with_read(dir.path(), &[(to_read[0].clone(), gpu0.stored)])
            .unwrap();
        assert_eq!(summed, inputs_of(dir.path()).unwrap());
        // The sum recorded is that of the bytes read, not of the file now.
        let other = StoredSum {
            bytes: 3,
            crc32: 0xdead_beef,
        };
        let as_read = pending
            .with_read(dir.path(), &[(to_read[0].clone(), other)])
            .unwrap();
        let row = as_read
            .files
            .iter()
            .find(|f| f.file == "raw/gpu0.csv")
            .unwrap();
        assert_eq!((row.bytes, row.crc32.as_deref()), (3, Some("deadbeef")));
    }
}
