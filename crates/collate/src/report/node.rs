//! The compute layer of a node run: the stages from the run directory's
//! raw samples to its [`Report`]. Nothing here writes a report file; the
//! raw files' Parquet copies are written while they are read, so that the
//! samples are read once.

use super::{NodeParts, Report, Scope, marks, node_meters};
use crate::handoff;
use polars::prelude::DataFrame;
use powerlab_analysis::sensor::verdict::SensorReport;
use powerlab_analysis::summary::{Cycles, RungSummary};
use powerlab_analysis::{
    curve, cycle, edges, energy, envelope, mitigation, nccl, per_gpu, sensor, soak, summary,
};
use powerlab_core::Instrument;
use powerlab_rundir::{PhaseKind, RunDir};
use powerlab_samples::error::CollateError;
use powerlab_samples::series::{EdgeIndex, SeriesSet};
use powerlab_samples::{integrity, load, stats};
use std::collections::HashMap;
use std::path::Path;

/// Logs each stage's end at `POWERLAB_LOG=info`, for the collation
/// benchmark.
pub(crate) struct Steps {
    what: &'static str,
    t0: std::time::Instant,
}

impl Steps {
    /// Starts the clock; `what` prefixes every line (`collate`, `collate rack`).
    pub(crate) fn start(what: &'static str) -> Steps {
        Steps {
            what,
            t0: std::time::Instant::now(),
        }
    }

    /// Logs that `stage` is done.
    pub(crate) fn done(&self, stage: &str) {
        tracing::info!(
            "{}: {stage} done at {:.2} s",
            self.what,
            self.t0.elapsed().as_secs_f64()
        );
    }
}

/// The raw samples by GPU, and what was wrong with the files.
struct Samples {
    series: SeriesSet,
    rows: usize,
    /// Each raw file read, with the size and CRC-32 of its bytes.
    read: Vec<(std::path::PathBuf, powerlab_rundir::raw::StoredSum)>,
    problems: Vec<String>,
}

/// Computes a node run's report, in stages: integrity, samples, edges, the
/// node curve, cycles, rung summaries, the sensor, marks, then NCCL, node
/// power, every GPU and the soak. With `raw_parquet_dir` the raw files are
/// copied there as Parquet while they are read.
///
/// # Errors
///
/// As [`crate::collate_with`], for every step up to the report's files.
pub fn compute(
    dir: &RunDir,
    run: &load::Run,
    soak_edge_s: Option<f64>,
    raw_parquet_dir: Option<&Path>,
) -> Result<Report, CollateError> {
    let steps = Steps::start("collate");
    integrity::check_sums(dir, &run.manifest)?;
    integrity::check_format(dir, &run.manifest)?;
    // What this report is computed from, taken before reading: a rack
    // reuses the report only while these files stay as they are. The raw
    // files' checksums are those of the bytes read.
    let inputs = handoff::inputs_before_reading(&dir.path, &dir.raw_files()?)?;
    let mut samples = read_samples(dir, run, raw_parquet_dir, &steps)?;
    let inputs = inputs.with_read(&dir.path, &samples.read)?;
    let (edge_frame, edge_index) = read_edge_index(dir, &steps)?;
    // A run killed (or still running) inside a rung: that rung ends where
    // its records do, as a stopped rung ends at the stop.
    let run =
        load::cut_at_records_end(run, &samples.series, &edge_index).unwrap_or_else(|| run.clone());
    let curve = curve::node_curve(&samples.series, &run)?;
    steps.done("node curve");
    samples
        .problems
        .extend(missing_edges_problem(&run, edge_frame.is_some()));
    let model = sensor::source::model_for(dir, &run, &samples.series, &edge_index)?;
    let mut cycles: Cycles = cycle::compose_all(&run, &samples.series, &edge_index, &model)
        .into_iter()
        .collect();
    steps.done("node cycles");
    // The lifecycle's edges, every GPU's table and the soak on a thread of
    // their own, beside the rungs' summaries and the sensor: they read only
    // the samples, the model and the edges, and neither side keeps both
    // cores busy. An error of the rungs' side comes first, as when it ran
    // first.
    let (by_gpu, rung_figures) = powerlab_samples::parallel::beside(
        || ByGpu {
            lifecycle: powerlab_analysis::lifecycle::analyse(
                &run,
                &samples.series,
                &model,
                &edge_index,
            ),
            per_gpu: per_gpu::per_gpu(&run, &samples.series),
            soak: soak::analyse(
                &run,
                &samples.series,
                soak_edge_s.unwrap_or(soak::EDGE_S_DEFAULT),
            ),
        },
        || {
            rung_figures(
                &run,
                &samples.series,
                (edge_frame, &edge_index),
                model.clone(),
                &curve,
                &mut cycles,
                &steps,
            )
        },
    )?;
    let RungFigures {
        rungs,
        envelope,
        grid,
        sensor,
        workload,
    } = rung_figures;
    steps.done("lifecycle, per-GPU, soak (beside)");
    let ByGpu {
        lifecycle,
        per_gpu,
        soak,
    } = by_gpu;
    let mut parts = node_parts(
        dir, &run, &curve, &rungs, &cycles, samples, sensor, inputs, per_gpu, soak,
    )?;
    parts.workload = workload;
    parts.lifecycle = lifecycle.edges;
    parts.lifecycle_moments = lifecycle.recorded;
    parts.lifecycle_refused = lifecycle.refused;
    steps.done("node power");
    Ok(Report {
        title: format!(
            "{} on {}",
            run.manifest.campaign, run.manifest.backend.node_id
        ),
        repeats: summary::repeat_stats(&rungs),
        compare: summary::compare_modes(&rungs),
        verdicts: super::verdicts::run_rows(&rungs, &envelope, &grid),
        envelope,
        grid,
        run,
        curve,
        cycles,
        rungs,
        scope: Scope::Node(Box::new(parts)),
    })
}

/// What the rungs' summaries and the sensor's analysis give the report.
struct RungFigures {
    rungs: Vec<RungSummary>,
    envelope: envelope::Envelope,
    grid: powerlab_analysis::grid::GridMetrics,
    sensor: SensorReport,
    workload: super::workload::Workload,
}

/// Every rung's summary with its instrument's verdict and marks, the
/// envelope, the grid's figures, the sensor's analysis and the workload
/// rungs' rows, from the composed `cycles` (to which it adds the workload
/// rungs'). The edges' frame is dropped once their statistics are read.
fn rung_figures(
    run: &load::Run,
    series: &SeriesSet,
    (edge_frame, edge_index): (Option<DataFrame>, &EdgeIndex),
    model: sensor::model::SensorModel,
    curve: &curve::NodeCurve,
    cycles: &mut Cycles,
    steps: &Steps,
) -> Result<RungFigures, CollateError> {
    let workload_rungs = with_workload(run, series, &model, cycles);
    let edge_stats = edges::edge_stats(edge_frame.as_ref(), run)?;
    drop(edge_frame);
    let mut rungs = rung_summaries(run, series, curve, cycles, &edge_stats);
    rungs = with_short_on_phases(rungs, run, series, cycles);
    steps.done("rung summaries");
    let sample_window_ms = envelope::sample_window_ms(&model);
    let envelope = envelope::envelope(run, curve, cycles, sample_window_ms);
    let grid = powerlab_analysis::grid::grid_metrics(
        run,
        curve,
        cycles,
        sample_window_ms,
        run.series.len(),
    );
    let visible = rungs.iter().map(|r| (r.rung.id, r.raw_swing_w)).collect();
    let sensor = sensor::verdict::analyse(run, series, edge_index, model, curve, &visible);
    steps.done("sensor analysis");
    with_instrument_verdicts(&mut rungs, &sensor);
    let coverage = integrity::rung_coverage(
        &run.series,
        run.rungs
            .iter()
            .map(|r| (r.info.id, r.measure_from_ns, r.end_ns)),
        series,
    );
    marks::mark_incomplete(&mut rungs, &coverage);
    marks::mark_stopped(&mut rungs, run);
    let counters = workload_counters(run, series);
    let workload = super::workload::Workload {
        rows: super::workload::rows(&workload_rungs, &rungs, &grid, cycles, &counters),
        rungs: workload_rungs,
    };
    Ok(RungFigures {
        rungs,
        envelope,
        grid,
        sensor,
        workload,
    })
}

/// What to say when the run has no edges (`has_edges` false: `edges.csv`
/// missing or empty) although some of its duty rungs ended: their cycles
/// cannot be folded. `None` otherwise.
fn missing_edges_problem(run: &load::Run, has_edges: bool) -> Option<String> {
    let duty_ended = run
        .rungs
        .iter()
        .filter(|r| r.info.kind == PhaseKind::Duty && r.barrier_ok.is_some())
        .count();
    (!has_edges && duty_ended > 0).then(|| format!("edges.csv is missing or empty although {duty_ended} duty rung(s) ended: their cycles cannot be folded (energy-counter means only)"))
}

/// Reads every raw file into per-GPU series; the files' problems and those
/// of files the manifest lists but `raw/` lacks are kept in words.
fn read_samples(
    dir: &RunDir,
    run: &load::Run,
    raw_parquet_dir: Option<&Path>,
    steps: &Steps,
) -> Result<Samples, CollateError> {
    let raw = powerlab_samples::raw_series::read_series(dir, run, raw_parquet_dir)?;
    steps.done("reading raw samples");
    let (series, rows, file_problems, read) = (raw.series, raw.total_rows, raw.problems, raw.read);
    let mut problems = integrity::check_files(dir, &run.manifest)?;
    problems.extend(file_problems);
    Ok(Samples {
        series,
        rows,
        read,
        problems,
    })
}

/// Reads `edges.csv`, and indexes it by rung.
fn read_edge_index(
    dir: &RunDir,
    steps: &Steps,
) -> Result<(Option<DataFrame>, EdgeIndex), CollateError> {
    let frame = edges::edges_frame(dir)?;
    let index = EdgeIndex::from_frame(frame.as_ref());
    steps.done("edges by rung");
    Ok((frame, index))
}

/// Finds every workload rung's iterations in its samples, and gives those
/// with a period their node cycle (composed on the iterations' starts), or
/// the verdict that says why it cannot be, in `cycles`; a rung without a
/// period keeps its sample-and-hold figures.
fn with_workload(
    run: &load::Run,
    series: &SeriesSet,
    model: &sensor::model::SensorModel,
    cycles: &mut Cycles,
) -> Vec<powerlab_analysis::workload::WorkloadRung> {
    powerlab_analysis::workload::analyse(run, series, model)
        .into_iter()
        .map(|(w, c)| {
            if let Some(c) = c {
                cycles.insert(w.rung_id, c);
            }
            w
        })
        .collect()
}

/// Every rung's summary: duty rungs from their composed cycles, the others
/// from the node curve, and rungs whose cycles could not be folded from the
/// energy counter (marked where its readings span part of the window).
fn rung_summaries(
    run: &load::Run,
    series: &SeriesSet,
    curve: &curve::NodeCurve,
    cycles: &Cycles,
    edge_stats: &HashMap<u32, edges::EdgeStats>,
) -> Vec<RungSummary> {
    let gpus = run.manifest.gpu_keys();
    let counter_means: HashMap<u32, energy::CounterMean> = run
        .rungs
        .iter()
        .filter(|r| {
            matches!(
                cycles.get(&r.info.id),
                Some(Err(cycle::NoCycle::Verdict(_)))
            )
        })
        .filter_map(|r| {
            energy::mean_w(series, &gpus, r.measure_from_ns, r.end_ns).map(|m| (r.info.id, m))
        })
        .collect();
    let energy_means = counter_means.iter().map(|(id, m)| (*id, m.w)).collect();
    let held_until = held_until(run, series);
    let mut rungs = summary::summarize(curve, run, edge_stats, cycles, &energy_means, &held_until);
    for r in &mut rungs {
        if let Some(m) = counter_means.get(&r.rung.id)
            && r.method == powerlab_rundir::summary::Method::EnergyCounter
        {
            // The reader must see that the mean is of part of the window.
            r.coverage = stats::r3(m.span_share);
            if m.span_share < 0.995 {
                let note = format!(
                    "the mean is over the energy counter's readings, which span {:.0} % of the window",
                    m.span_share * 100.0
                );
                r.verdict = Some(match r.verdict.take() {
                    Some(v) => format!("{v}; {note}"),
                    None => note,
                });
            }
        }
    }
    rungs
}

/// Every workload rung's mean from the energy counters over its window
/// (where they have readings spanning half of it): the check that the
/// samples' time-weighted mean is the energy the GPUs drew.
fn workload_counters(run: &load::Run, series: &SeriesSet) -> HashMap<u32, energy::CounterMean> {
    let gpus = run.manifest.gpu_keys();
    run.rungs
        .iter()
        .filter(|r| r.info.kind == PhaseKind::Workload)
        .filter_map(|r| {
            energy::mean_w(series, &gpus, r.measure_from_ns, r.end_ns).map(|m| (r.info.id, m))
        })
        .collect()
}

/// Where each rung's curve stops holding readings from before its window:
/// every GPU's first buffered sample inside it.
fn held_until(run: &load::Run, series: &SeriesSet) -> HashMap<u32, i64> {
    run.rungs
        .iter()
        .filter_map(|r| {
            run.series
                .iter()
                .map(|(node, gpu)| {
                    powerlab_samples::series::span(
                        series.get_at(node, gpu, Instrument::BufferedW),
                        r.measure_from_ns,
                        r.end_ns,
                    )
                    .first()
                    .map(|p| p.0)
                })
                .collect::<Option<Vec<i64>>>()
                .and_then(|v| v.into_iter().max())
                .map(|t| (r.info.id, t))
        })
        .collect()
}

/// Adds to each duty rung's edge verdict the on-phases too short for the
/// load to settle.
fn with_short_on_phases(
    mut rungs: Vec<RungSummary>,
    run: &load::Run,
    series: &SeriesSet,
    cycles: &Cycles,
) -> Vec<RungSummary> {
    let short = cycle::short_on_phases(run, series, cycles);
    for r in &mut rungs {
        if let Some(v) = short.get(&r.rung.id) {
            r.edges_verdict = Some(match r.edges_verdict.take() {
                Some(e) => format!("{e}; {v}"),
                None => v.clone(),
            });
        }
    }
    rungs
}

/// Gives each rung the buffered instrument's verdict for its period.
fn with_instrument_verdicts(rungs: &mut [RungSummary], sensor: &SensorReport) {
    for r in rungs {
        if let Some(row) = sensor
            .rows
            .iter()
            .find(|x| x.rung_id == r.rung.id && x.instrument == Instrument::BufferedW)
        {
            r.instrument_verdict = Some(row.verdict);
        }
    }
}

/// What only a node has: NCCL, the fabric's power, the node's own meters,
/// and, computed beside the rungs' figures, every GPU per rung and the soak.
#[allow(clippy::too_many_arguments)]
fn node_parts(
    dir: &RunDir,
    run: &load::Run,
    curve: &curve::NodeCurve,
    rungs: &[RungSummary],
    cycles: &Cycles,
    mut samples: Samples,
    sensor: SensorReport,
    inputs: handoff::Inputs,
    per_gpu: Vec<per_gpu::GpuRungRow>,
    soak: soak::Soak,
) -> Result<NodeParts, CollateError> {
    let nccl_rows = nccl::nccl_rows(dir, run)?;
    let fabric = nccl::fabric_power(rungs, nccl::nccl_ranks(&nccl_rows, run));
    let node_power = node_meters::node_power_of(dir, run, curve, &mut samples.problems)?;
    let mitigation = mitigation::mitigation(run, rungs, cycles, &per_gpu);
    Ok(NodeParts {
        raw_rows: samples.rows,
        raw_end_ns: samples.series.last_ts_ns(),
        raw_problems: samples.problems,
        inputs,
        per_gpu,
        sensor,
        nccl: nccl_rows,
        fabric,
        soak,
        node_power,
        mitigation,
        workload: Default::default(),
        lifecycle: Vec::new(),
        lifecycle_moments: 0,
        lifecycle_refused: Vec::new(),
    })
}

/// What is computed per GPU beside the rungs' figures.
struct ByGpu {
    lifecycle: powerlab_analysis::lifecycle::Lifecycle,
    per_gpu: Vec<per_gpu::GpuRungRow>,
    soak: soak::Soak,
}
