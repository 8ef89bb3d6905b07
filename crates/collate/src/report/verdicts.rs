//! The verdict table a report leads with: one row per spec item (the
//! supply's excursions and rating, the grid's ramp rates, dynamic range
//! and band share), each with its limit, the figure that decides it (± 95 %
//! where it has one), the margin, the verdict and the rung (or a
//! prediction's scenario) that set it, named as its row in `envelope.csv`
//! or `grid.csv`. Computed once here from the [`Envelope`] and the
//! [`GridMetrics`] those files are written from; the exporters only
//! render it.

use powerlab_analysis::envelope::{Envelope, EnvelopePoint, Verdict};
use powerlab_analysis::grid::judge::limit_of;
use powerlab_analysis::grid::{GridFigure, GridMetrics, GridVerdict, Metric};
use powerlab_analysis::summary::RungSummary;
use powerlab_rundir::{PhaseKind, ReportFile};

/// What a row judges.
#[derive(Debug, Clone, PartialEq)]
pub enum SpecItem {
    /// The highest mean power over a window against `[supply]
    /// excursions` (the worst judged window).
    SupplyExcursion,
    /// The highest mean over the longest window against `[supply]
    /// rated_w`.
    SupplyRated,
    /// A `[grid]` metric.
    Grid(Metric),
    /// A prediction's own item (a grid mode, a lifecycle limit), in words.
    Other(String),
}

/// The unit a row's figures are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    /// W.
    Power,
    /// W/s.
    Rate,
    /// W/min.
    RatePerMin,
    /// %.
    Percent,
    /// A frequency deviation, mHz (a prediction's grid study).
    Millihertz,
    /// A rate of change of frequency, Hz/s.
    HzPerS,
    /// A power at the grid's own scale, MW (a tie's oscillation).
    Megawatt,
}

/// Where a row's figure is in the report's files: the file, the row (a
/// rung's or scenario's label) and, within it, the window or metric.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecSource {
    /// The file, relative to the report's folder (`envelope.csv`,
    /// `grid.csv`, a prediction's `modes.csv` or `study/lifecycle.json`).
    pub file: String,
    /// The rung's (or scenario's) label: the row's `label` cell.
    pub row: String,
    /// The window (`envelope.csv`'s `window_ms`) or the metric
    /// (`grid.csv`'s `metric`).
    pub key: SourceKey,
}

/// The column that picks a row out within one rung's rows.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceKey {
    /// `window_ms`.
    Window(f64),
    /// `metric`.
    Metric(Metric),
    /// A prediction's own key, as its file names it.
    Other(String),
}

/// One row of the verdict table.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecRow {
    /// What it judges.
    pub item: SpecItem,
    /// The unit of `limit`, `value`, `margin`.
    pub quantity: Quantity,
    /// The declared limit (at the figure's window for an excursion).
    pub limit: Option<f64>,
    /// A limit that is not a number, in words (a grid mode's: no
    /// harmonic in its band).
    pub limit_words: Option<String>,
    /// The figure that decides the verdict.
    pub value: Option<f64>,
    /// Its 95 % half-width.
    pub plus_minus: Option<f64>,
    /// The figure is only a lower bound.
    pub lower_bound: bool,
    /// The figure's upper end, where it is a range.
    pub upper: Option<f64>,
    /// limit − figure.
    pub margin: Option<f64>,
    /// The verdict (a grid mode that is in band: `Fail`; one the measured
    /// cycles cannot resolve: `Undecided`).
    pub verdict: GridVerdict,
    /// Judged points (windows × rungs, or rungs) and how many failed.
    pub judged: usize,
    /// Of `judged`, those over the limit.
    pub failed: usize,
    /// Where the deciding figure is.
    pub source: Option<SpecSource>,
    /// The deciding rung has too few whole cycles for any interval: its
    /// figure is a point without a bound.
    pub unresolved: bool,
    /// Why the verdict is what it is, where its name alone misleads (a
    /// grid mode the measured cycles cannot resolve).
    pub note: Option<String>,
}

impl SpecRow {
    /// A row with nothing measured for `item`: not judged where a limit
    /// is declared, else no limit declared.
    pub fn empty(item: SpecItem, quantity: Quantity, limit: Option<f64>) -> Self {
        SpecRow {
            item,
            quantity,
            limit,
            limit_words: None,
            value: None,
            plus_minus: None,
            lower_bound: false,
            upper: None,
            margin: None,
            verdict: if limit.is_some() {
                GridVerdict::NotMeasured
            } else {
                GridVerdict::NoLimit
            },
            judged: 0,
            failed: 0,
            source: None,
            unresolved: false,
            note: None,
        }
    }
}

/// The grid metrics the table always shows (a dynamic range in % only
/// where `[grid]` declares a limit for it).
const GRID_ITEMS: [Metric; 5] = [
    Metric::RampUp,
    Metric::RampDown,
    Metric::DynamicRange,
    Metric::DynamicRangePct,
    Metric::BandShare,
];

/// What a table judges: which rungs (a prediction: scenarios) count for
/// the supply and for the grid, and the means the supply's rating is
/// held against.
pub struct Judged {
    /// The rungs an excursion is looked for in (never an idle rung).
    pub loaded: Vec<u32>,
    /// The rungs a grid metric is judged over (a node: every loaded rung
    /// but a mitigation's; a prediction: its headline scenario).
    pub grid: Vec<u32>,
    /// The rungs of too few whole cycles for any interval.
    pub unbounded: Vec<u32>,
    /// Each loaded rung's mean, against the supply's rating.
    pub means: Vec<MeanOf>,
}

/// A loaded rung's (or scenario's) mean and where it is written.
pub struct MeanOf {
    /// The mean, W.
    pub mean_w: f64,
    /// Where it is: the file, the row and the column or window.
    pub source: SpecSource,
}

/// Every row: the supply's two, then each grid metric.
pub fn spec_rows(envelope: &Envelope, grid: &GridMetrics, j: &Judged) -> Vec<SpecRow> {
    let rated = envelope.supply.as_ref().and_then(|s| s.rated_w);
    let mut rows = vec![
        excursion_row(envelope, &j.loaded),
        rated_row(rated, &j.means),
    ];
    for metric in GRID_ITEMS {
        if metric == Metric::DynamicRangePct && declared_limit(grid, metric).is_none() {
            continue;
        }
        let mut row = grid_row(grid, metric, &j.grid);
        row.unresolved = grid.rungs.iter().any(|r| {
            j.unbounded.contains(&r.rung_id)
                && row.source.as_ref().is_some_and(|x| x.row == r.label)
        });
        rows.push(row);
    }
    rows
}

/// Each of the rungs (or scenarios) `ids`: its mean over the longest
/// window its envelope states (a prediction's: its whole span).
pub fn longest_window_means(e: &Envelope, ids: &[u32]) -> Vec<MeanOf> {
    e.rungs
        .iter()
        .filter(|r| ids.contains(&r.rung_id))
        .filter_map(|r| {
            let p = r
                .points
                .iter()
                .filter(|p| p.max_mean_w.is_some())
                .max_by(|a, b| a.window_ms.total_cmp(&b.window_ms))?;
            Some(MeanOf {
                mean_w: p.max_mean_w?,
                source: SpecSource {
                    file: ReportFile::EnvelopeCsv.file_name().into(),
                    row: r.label.clone(),
                    key: SourceKey::Window(p.window_ms),
                },
            })
        })
        .collect()
}

/// The points of the rungs `ids`, with their rung's label.
fn points<'a>(
    e: &'a Envelope,
    ids: &'a [u32],
) -> impl Iterator<Item = (&'a str, &'a EnvelopePoint)> + 'a {
    e.rungs
        .iter()
        .filter(move |r| ids.contains(&r.rung_id))
        .flat_map(|r| r.points.iter().map(move |p| (r.label.as_str(), p)))
}

/// The excursion row: the judged point with the least margin.
fn excursion_row(e: &Envelope, loaded: &[u32]) -> SpecRow {
    let mut row = SpecRow::empty(SpecItem::SupplyExcursion, Quantity::Power, None);
    if e.supply.as_ref().is_none_or(|s| s.excursions.is_empty()) {
        return row;
    }
    row.verdict = GridVerdict::NotMeasured;
    let judged: Vec<(&str, &EnvelopePoint)> = points(e, loaded)
        .filter(|(_, p)| p.margin_w.is_some() && p.max_mean_w.is_some())
        .collect();
    row.judged = judged.len();
    row.failed = judged
        .iter()
        .filter(|(_, p)| p.verdict() == Some(Verdict::Fail))
        .count();
    let Some((label, p)) = judged.into_iter().min_by(|a, b| {
        a.1.margin_w
            .unwrap_or(0.0)
            .total_cmp(&b.1.margin_w.unwrap_or(0.0))
    }) else {
        return row;
    };
    row.limit = p.limit_w;
    row.value = p.max_mean_w;
    row.margin = p.margin_w;
    row.verdict = if row.failed > 0 {
        GridVerdict::Fail
    } else {
        GridVerdict::Pass
    };
    row.source = Some(SpecSource {
        file: ReportFile::EnvelopeCsv.file_name().into(),
        row: label.to_string(),
        key: SourceKey::Window(p.window_ms),
    });
    row
}

/// The rated row: every loaded rung's mean against `rated_w`, the
/// highest deciding.
fn rated_row(rated: Option<f64>, means: &[MeanOf]) -> SpecRow {
    let mut row = SpecRow::empty(SpecItem::SupplyRated, Quantity::Power, rated);
    let Some(top) = means.iter().max_by(|a, b| a.mean_w.total_cmp(&b.mean_w)) else {
        return row;
    };
    row.value = Some(top.mean_w);
    if let Some(limit) = rated {
        row.judged = means.len();
        row.failed = means.iter().filter(|m| m.mean_w > limit).count();
        row.margin = Some(limit - top.mean_w);
        row.verdict = if row.failed > 0 {
            GridVerdict::Fail
        } else {
            GridVerdict::Pass
        };
    }
    row.source = Some(top.source.clone());
    row
}

/// `metric`'s limit as `[grid]` declares it, scaled to the metrics' GPUs.
fn declared_limit(g: &GridMetrics, metric: Metric) -> Option<f64> {
    g.spec.as_ref().and_then(|s| limit_of(s, metric, g.gpus))
}

/// How bad a verdict is, worst first.
fn severity(v: GridVerdict) -> u8 {
    match v {
        GridVerdict::Fail => 5,
        GridVerdict::Undecided => 4,
        GridVerdict::Undetermined => 3,
        GridVerdict::Pass => 2,
        GridVerdict::NoLimit => 1,
        GridVerdict::NotMeasured => 0,
    }
}

/// A grid metric's row: over the rungs `ids` with a figure, the worst
/// verdict, and among those the largest figure.
fn grid_row(g: &GridMetrics, metric: Metric, ids: &[u32]) -> SpecRow {
    let quantity = match metric.unit() {
        "W/s" => Quantity::Rate,
        "W" => Quantity::Power,
        _ => Quantity::Percent,
    };
    let figures: Vec<(&str, &GridFigure)> = g
        .rungs
        .iter()
        .filter(|r| ids.contains(&r.rung_id))
        .filter_map(|r| {
            let f = r.figures.iter().find(|f| f.metric == metric)?;
            f.value.is_some().then_some((r.label.as_str(), f))
        })
        .collect();
    let mut row = SpecRow::empty(SpecItem::Grid(metric), quantity, declared_limit(g, metric));
    let Some((label, f)) = figures.iter().max_by(|a, b| {
        severity(a.1.verdict).cmp(&severity(b.1.verdict)).then(
            a.1.value
                .unwrap_or(0.0)
                .total_cmp(&b.1.value.unwrap_or(0.0)),
        )
    }) else {
        return row;
    };
    row.judged = figures.iter().filter(|(_, f)| f.limit.is_some()).count();
    row.failed = figures
        .iter()
        .filter(|(_, f)| f.verdict == GridVerdict::Fail)
        .count();
    row.value = f.value;
    row.plus_minus = f.plus_minus;
    row.lower_bound = f.lower_bound;
    row.upper = f.upper;
    row.margin = f.margin;
    row.verdict = f.verdict;
    row.source = Some(SpecSource {
        file: ReportFile::GridCsv.file_name().into(),
        row: (*label).to_string(),
        key: SourceKey::Metric(metric),
    });
    row
}

/// A node's (or a rack's) rows: the supply over every rung but the idle
/// ones (its rating against each rung's mean, `summary.csv`), the grid
/// over every loaded rung but a mitigation's (a what-if, judged in its
/// own section).
pub fn run_rows(rungs: &[RungSummary], envelope: &Envelope, grid: &GridMetrics) -> Vec<SpecRow> {
    let loaded: Vec<&RungSummary> = rungs
        .iter()
        .filter(|r| r.rung.kind != PhaseKind::Idle)
        .collect();
    let judged = Judged {
        loaded: loaded.iter().map(|r| r.rung.id).collect(),
        grid: loaded
            .iter()
            .filter(|r| !r.rung.smoothed())
            .map(|r| r.rung.id)
            .collect(),
        unbounded: rungs
            .iter()
            .filter(|r| r.resolution.as_ref().is_some_and(|u| u.unbounded()))
            .map(|r| r.rung.id)
            .collect(),
        means: loaded
            .iter()
            .filter_map(|r| {
                Some(MeanOf {
                    mean_w: r.mean_w?,
                    source: SpecSource {
                        file: ReportFile::SummaryCsv.file_name().into(),
                        row: r.rung.label.clone(),
                        key: SourceKey::Other("mean_w".into()),
                    },
                })
            })
            .collect(),
    };
    spec_rows(envelope, grid, &judged)
}
