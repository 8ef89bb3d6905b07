//! Markdown reports: `report.md` of a node run ([`run`], with its sensor
//! section in [`sensor`]) and of a rack run ([`rack`]), and the table cells
//! they share ([`cells`]), and `compare.md` ([`compare`]).

pub mod answer;
pub mod baseline;
pub mod cells;
pub mod compare;
pub mod node_power;
pub mod per_gpu;
pub mod rack;
pub mod run;
pub mod sensor;
pub mod soak;
