//! Markdown reports: `report.md` of a node run ([`run`], with its title in
//! [`headline`], its rung tables in [`rungs`], its sensor section in
//! [`sensor`] and its NCCL sections in [`nccl`]) and of a rack run
//! ([`rack`]), and the table cells they share ([`cells`]), and
//! `compare.md` ([`compare`]).

pub mod answer;
pub mod baseline;
pub mod cells;
pub mod compare;
pub mod headline;
pub mod nccl;
pub mod node_power;
pub mod per_gpu;
pub mod rack;
pub mod run;
pub mod rungs;
pub mod sensor;
pub mod soak;
