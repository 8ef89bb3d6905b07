//! A raw file's Parquet copy, written column by column with an encoding
//! chosen for what a raw file holds, not guessed per column.
//!
//! polars' `ParquetWriter` tries a dictionary for every column: it
//! estimates each column's distinct values, then hashes every row into a
//! dictionary. A raw file's timestamps repeat once per instrument and its
//! readings repeat too, so all five columns were hashed: 0.32–0.36 s of a
//! 2.3 M-row file on one core (a 4-hour 8-GPU run's), its largest cost
//! after parsing. Here:
//! - the timestamps, rising by a few steps, are delta-encoded;
//! - the readings are written plain;
//! - the node, GPU and instrument names, a handful of distinct strings, are
//!   dictionary-encoded from a dictionary built here. A row whose string
//!   has the same view as the row before's in the same chunk takes its
//!   key without being read.
//!
//! The same file took 0.16 s and half the bytes (11.2 MB against 21.5 MB,
//! LZ4 both). The rows are the same: polars reads a copy back equal to
//! the frame it was written from (tests), and DuckDB read the 4 h run's
//! eight copies back equal to the CSVs (docs/benchmarks.md). The footer's
//! Arrow schema names the string columns as strings, so a reader that
//! follows it gets strings, not categories.

use crate::error::CollateError;
use polars::prelude::*;
use polars_arrow::array::{Array, DictionaryArray, PrimitiveArray, Utf8ViewArray, View};
use polars_arrow::bitmap::MutableBitmap;
use polars_arrow::datatypes::{ArrowDataType, ArrowSchema, IntegerType};
use polars_arrow::record_batch::RecordBatchT;
use polars_parquet::write::{
    CompressionOptions, Encoding, FileWriter, StatisticsOptions, Version, WriteOptions,
    row_group_iter, schema_to_metadata_key,
};
use std::collections::HashMap;
use std::io::Write;

/// Rows per row group: polars' own default, so a copy's row groups do not
/// depend on how the CSV reader chunked the file (or on the cores).
const ROW_GROUP_ROWS: usize = 512 * 512;

/// The dictionary's key type for a string column.
fn dictionary_dtype() -> ArrowDataType {
    ArrowDataType::Dictionary(
        IntegerType::UInt32,
        Box::new(ArrowDataType::Utf8View),
        false,
    )
}

/// How a column of `dtype` is encoded (see the module doc).
fn encoding_of(dtype: &DataType) -> Encoding {
    match dtype {
        DataType::Int64 => Encoding::DeltaBinaryPacked,
        DataType::String => Encoding::RleDictionary,
        _ => Encoding::Plain,
    }
}

/// Writes `df` (any frame of primitive and string columns; a raw file's
/// rows) to `out` as Parquet, compressed with LZ4 (raw).
///
/// # Errors
///
/// Returns [`CollateError::Polars`] (step "writing Parquet") when a column
/// cannot be laid out or written; an I/O failure of `out` comes back the
/// same way, wrapped by polars' writer.
pub(super) fn write(df: &DataFrame, out: impl Write) -> Result<(), CollateError> {
    let stated = df.schema().to_arrow(CompatLevel::newest());
    let written: ArrowSchema = stated
        .iter_values()
        .map(|f| match f.dtype {
            ArrowDataType::Utf8View => f.clone().with_dtype(dictionary_dtype()),
            _ => f.clone(),
        })
        .map(|f| (f.name.clone(), f))
        .collect();
    let options = WriteOptions {
        statistics: StatisticsOptions::default(),
        compression: CompressionOptions::Lz4Raw,
        version: Version::V1,
        data_page_size: None,
    };
    let encodings: Vec<Vec<Encoding>> = df.dtypes().iter().map(|d| vec![encoding_of(d)]).collect();
    let mut writer = FileWriter::try_new(out, written.clone(), options).map_err(failed)?;
    let fields = writer.parquet_schema().fields().to_vec();
    let written = Arc::new(written);
    for off in (0..df.height()).step_by(ROW_GROUP_ROWS) {
        let len = ROW_GROUP_ROWS.min(df.height() - off);
        let arrays = group_arrays(&df.slice(off as i64, len)).map_err(failed)?;
        let batch = RecordBatchT::new(len, written.clone(), arrays);
        let columns = row_group_iter(batch, encodings.clone().into(), fields.clone(), options);
        writer.write(len as u64, columns).map_err(failed)?;
    }
    writer
        .end(Some(vec![schema_to_metadata_key(&stated)]))
        .map_err(failed)?;
    Ok(())
}

/// A polars failure while writing the copy, named as that step.
fn failed(source: PolarsError) -> CollateError {
    CollateError::polars("writing Parquet")(source)
}

/// One row group's columns as single arrays: a string column as its
/// dictionary, any other as its values.
fn group_arrays(group: &DataFrame) -> PolarsResult<Vec<Box<dyn Array>>> {
    group
        .columns()
        .iter()
        .map(|c| match c.dtype() {
            DataType::String => dictionary_of(c.str()?),
            _ => Ok(c
                .as_materialized_series()
                .rechunk()
                .to_arrow(0, CompatLevel::newest())),
        })
        .collect()
}

/// A string column as a dictionary of its distinct strings (in order of
/// first appearance) and a key per row; an empty row has no key.
fn dictionary_of(column: &StringChunked) -> PolarsResult<Box<dyn Array>> {
    let mut dict = Dictionary::default();
    let mut keys = Vec::with_capacity(column.len());
    let mut validity = MutableBitmap::with_capacity(column.len());
    for array in column.downcast_iter() {
        // A longer string's view names a place in its own array's buffers:
        // the same view in the next array may be another string.
        dict.last = None;
        for (j, view) in array.views().iter().enumerate() {
            let valid = array.is_valid(j);
            validity.push(valid);
            keys.push(if valid {
                dict.key(*view, || array.value(j))
            } else {
                0
            });
        }
    }
    let keys = PrimitiveArray::<u32>::new(ArrowDataType::UInt32, keys.into(), validity.into());
    let values = Utf8ViewArray::from_slice_values(dict.values);
    let array = DictionaryArray::try_new(dictionary_dtype(), keys, values.boxed())?;
    Ok(Box::new(array))
}

/// The distinct strings of a column and where each was seen.
#[derive(Default)]
struct Dictionary<'a> {
    /// The strings, in order of first appearance; a key is an index here.
    values: Vec<&'a str>,
    /// Every string's key.
    by_text: HashMap<&'a str, u32>,
    /// Inline views (strings of up to 12 bytes, held in the view itself)
    /// already seen and their keys, up to [`VIEWS_KEPT`]: a column of a
    /// few short strings never reads or hashes a string twice.
    by_view: Vec<(u128, u32)>,
    /// The row before's view and key, in the same array (see
    /// [`dictionary_of`]). A longer string (a host name) repeated row after
    /// row sits at a new place in the buffer each time, so it is compared
    /// with the row before's string, not hashed.
    last: Option<(u128, u32)>,
}

/// Inline views kept for a search before a string is read and hashed.
const VIEWS_KEPT: usize = 32;

impl<'a> Dictionary<'a> {
    /// The key of the row with `view`, whose string `text` reads.
    fn key(&mut self, view: View, text: impl FnOnce() -> &'a str) -> u32 {
        let bits = view.as_u128();
        let inline = view.length <= View::MAX_INLINE_SIZE;
        let seen = match self.last {
            Some((v, k)) if v == bits => Some(k),
            _ if inline => self.by_view.iter().find(|(v, _)| *v == bits).map(|x| x.1),
            _ => None,
        };
        let key = match seen {
            Some(k) => k,
            None => {
                let text = text();
                let key = match self.last {
                    Some((_, k)) if self.values[k as usize] == text => k,
                    _ => self.by_text_key(text),
                };
                if inline && self.by_view.len() < VIEWS_KEPT {
                    self.by_view.push((bits, key));
                }
                key
            }
        };
        self.last = Some((bits, key));
        key
    }

    /// The key of `text`, a new one for a string not seen before.
    fn by_text_key(&mut self, text: &'a str) -> u32 {
        let next = self.values.len() as u32;
        let key = *self.by_text.entry(text).or_insert(next);
        if key == next {
            self.values.push(text);
        }
        key
    }
}

#[cfg(test)]
mod tests;
