//! What the collator's writers share with the workspace's other writers
//! (`powerlab predict`'s report, the terminal's summary, `powerlab
//! compare`): the Markdown cells and warnings, the verdict table, the CSV,
//! HTML and chart writers and compare's outputs. The exporters themselves
//! ([`crate::export`]) are the collator's own.

pub use crate::export::compare::{json as compare_json, write_all as write_compare};
pub use crate::export::csv::{write_envelope, write_grid, write_rows};
pub use crate::export::html::write_html;
pub use crate::export::markdown::cells::{capitalised, code, text};
pub use crate::export::markdown::compare::markdown as compare_markdown;
pub use crate::export::markdown::headline::{missing_rungs_warning, status_warning};
pub use crate::export::markdown::verdict_table::{
    Scale, Style, item, verdict, verdict_in, write_table,
};
pub use crate::export::plots::{
    ResponsePanel, SafeGpusChart, WAVEFORM_STEM, WaveformChart, has_envelope_plot,
    write_grid_response_plot, write_safe_gpus_plot, write_scenario_envelope_plot,
    write_waveform_plot,
};
