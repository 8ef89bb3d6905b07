//! Sensor truth: what each NVML power path can see, and whether each rung's
//! numbers are a swing of the board or an artefact of the instrument.
//!
//! The sensor model (update period, averaging window, latency per GPU and
//! path) comes from the run's own calibration rungs when it has them
//! (`calibrate = true`, `powerlab calibrate`), else from a `sensor.json` in
//! the run directory, else from nominal H200 values, and the report says
//! which. Every duty rung is then folded on its recorded rising edges
//! (equivalent-time sampling): the fundamental of the folded cycle gives the
//! swing independent of latency and window shape, and dividing by the
//! window's attenuation gives the board's swing where the window does not
//! null that period. Verdict per period: board follows / board attenuates /
//! instrument limit / aliased.
//!
//! One file per concern: [`bounds`] (the ranges a power path's values lie
//! in), [`model`] (the model's types, its checks and the built-in H200
//! profile), the readings and edges by key
//! (`powerlab_samples::series`, re-exported),
//! [`calibration`] (fitting a model on the run's calibration rungs),
//! [`source`] (which model a run is judged by), [`verdict`] (the per-rung
//! and per-period verdicts), and the numerics in [`fit`], [`fold`] and
//! [`spectrum`]. Everything is re-exported here, so `sensor::X` names the
//! same item as before the split.

pub mod bounds;
pub mod calibration;
pub mod fit;
pub mod fold;
pub mod model;
pub mod source;
pub mod spectrum;
pub mod verdict;

pub use calibration::calibrate;
pub use model::{GpuSensor, MeasuredGpu, ModelKind, PathModel, Probe, SensorModel, read_model};
pub use powerlab_samples::series::{EdgeIndex, SeriesSet};
pub use source::model_for;
pub use verdict::{
    PeriodAnswer, PeriodVerdict, RawVerdict, RungPathRow, SensorReport, analyse, raw_verdict,
};
