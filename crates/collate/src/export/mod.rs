//! Every file the collator writes, one writer per format: [`csv`] (the
//! tables and curves), [`json`] (the summary and the sensor model),
//! [`parquet`] (the rack's tables again, for polars, DuckDB or Spark),
//! [`markdown`] (the reports a person reads), [`html`] (the same report as
//! one self-contained page), [`plots`] (the charts as SVG and PNG) and
//! [`compare`] (the outputs of `powerlab compare`). The analysis modules compute data and never open a file;
//! these writers turn that data into bytes and nothing else.

pub mod compare;
pub mod csv;
pub mod html;
pub mod json;
pub mod markdown;
pub mod parquet;
pub mod plots;
