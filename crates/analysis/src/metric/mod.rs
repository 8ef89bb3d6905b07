//! The per-rung node metrics, declared once: the [`RungMetric`] trait and
//! its registry, [`METRICS`] (in the manner of ripgrep's `FLAGS`). Every
//! consumer iterates it: the rung summary computes each metric from the
//! rung's [`Levels`] (a composed cycle's, bootstrapped for its 95 %
//! interval, or the held curve's), `summary.csv` and `summary.json` write
//! its columns, the incomplete-data marks blank those it withholds, the
//! node and rack rung tables show those with a table column, `powerlab
//! compare` compares those it judges, a rack reads its nodes' back, and
//! `docs/report.md`'s column list is checked against it.
//!
//! A metric that predates the registry keeps its typed field in
//! `RungSummary` and `SummaryRow` ([`RungMetric::field`]); a new one
//! declares only its registry entry: its value and interval live in
//! [`MetricValues`], and its columns follow the typed ones in
//! `summary.csv`.

mod levels;
mod registry;

pub use levels::{Levels, weighted_mean};
pub use registry::{Field, METRICS, blank, read, value};

/// A 95 % interval, W, and the figure corrected for the bias its
/// replicates show.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// Lower end.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
    /// The figure less its bootstrap bias.
    pub centre: f64,
}

impl Bounds {
    /// Its width, W.
    pub fn width(&self) -> f64 {
        self.hi - self.lo
    }

    /// Widened to hold `v`.
    pub fn holding(self, v: f64) -> Bounds {
        Bounds {
            lo: self.lo.min(v),
            hi: self.hi.max(v),
            centre: self.centre,
        }
    }
}

/// A composed figure of a rung whose resolution (bounded, unresolved) is
/// judged (`summary::Resolution`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// The mean.
    Mean,
    /// The peak.
    Peak,
    /// p99 − p1.
    Spread,
    /// p90 − p10.
    Swing,
}

impl Figure {
    /// Its name as the report writes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Mean => "mean",
            Self::Peak => "peak",
            Self::Spread => "spread",
            Self::Swing => "swing",
        }
    }
}

/// A per-rung node metric.
pub trait RungMetric: Sync {
    /// Its `summary.csv` column, unit in its name (`p95_w`).
    fn column(&self) -> &'static str;
    /// Its name in the report's prose and in `powerlab compare` (`p95`).
    fn name(&self) -> &'static str;
    /// Its doc line (`docs/report.md`'s column list).
    fn doc(&self) -> &'static str;
    /// The level `q` (0..1) of a metric that is a quantile of the rung's
    /// levels: it is read as [`Levels::quantile`], and a composed cycle's,
    /// once corrected for its replicates' bias, is held within what the
    /// samples support and in order among the typed percentiles (p1, p10,
    /// p90, p99, peak), as they are.
    fn quantile(&self) -> Option<f64> {
        None
    }
    /// How it is read from a rung's levels (a composed cycle's, or the
    /// held curve's); None for a metric that is not. A quantile's is
    /// `levels.quantile(q)`.
    fn of(&self, levels: &Levels) -> Option<f64> {
        self.quantile().map(|q| levels.quantile(q))
    }
    /// Whether its 95 % interval is resampled (the bootstrap over whole
    /// cycles of a composed rung, a rack's nodes' summed): then it has the
    /// columns `{name}_ci95_lo_w` and `{name}_ci95_hi_w`.
    fn bootstrapped(&self) -> bool {
        false
    }
    /// Whether an incomplete window (GPUs that disagree on their coverage)
    /// blanks it.
    fn withheld(&self) -> bool {
        true
    }
    /// Its column in the node's rung table.
    fn node_table(&self) -> Option<TableColumn> {
        None
    }
    /// Its column in the rack's rung table.
    fn rack_table(&self) -> Option<TableColumn> {
        None
    }
    /// Whether `powerlab compare` states its delta, and when that delta
    /// can be a regression.
    fn compare(&self) -> Option<Judged> {
        None
    }
    /// The figure whose resolution (bounded, unresolved) its cell follows.
    fn figure(&self) -> Option<Figure> {
        None
    }
    /// Its typed field, for a metric that predates the registry (None: its
    /// value lives in [`MetricValues`]).
    fn field(&self) -> Option<Field> {
        None
    }
}

/// A column of a rung table: its header and where it stands (columns in
/// ascending `order`), and how its cell is written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TableColumn {
    /// The header (`mean W`).
    pub header: &'static str,
    /// Its place among the table's metric columns.
    pub order: u16,
    /// How its cell is written.
    pub cell: Cell,
}

/// How a metric's cell is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    /// The figure with its 95 % interval (or its bound where the interval
    /// only bounds it).
    Figure,
    /// The figure alone.
    Plain,
    /// The figure alone, or `aliased` where the instrument aliases the
    /// rung's period.
    UnlessAliased,
}

/// When `powerlab compare` judges a metric's delta as a regression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judged {
    /// On every rung.
    Always,
    /// On duty and ramp rungs only.
    DutyRungs,
    /// Never: stated only.
    Never,
}

/// A metric's value and its 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MetricValue {
    /// The value, W.
    pub value: Option<f64>,
    /// Its 95 % interval.
    pub ci95: Option<Bounds>,
}

/// The values of the registry's own metrics (those without a typed field),
/// by column.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MetricValues(Vec<(&'static str, MetricValue)>);

impl MetricValues {
    /// The value of the metric with `column` (none where unset).
    pub fn get(&self, column: &str) -> MetricValue {
        self.0
            .iter()
            .find(|(c, _)| *c == column)
            .map(|x| x.1)
            .unwrap_or_default()
    }

    /// Sets the value of the metric with `column`.
    pub fn set(&mut self, column: &'static str, v: MetricValue) {
        match self.0.iter_mut().find(|(c, _)| *c == column) {
            Some(x) => x.1 = v,
            None => self.0.push((column, v)),
        }
    }

    /// Each metric's value with its column, in the order they were set.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, MetricValue)> + '_ {
        self.0.iter().copied()
    }
}

/// The registry's own metrics (those without a typed field), in order.
pub fn own() -> impl Iterator<Item = &'static dyn RungMetric> {
    METRICS.iter().copied().filter(|m| m.field().is_none())
}

/// The registry's own metrics read from the levels and bootstrapped.
pub fn own_bootstrapped() -> impl Iterator<Item = &'static dyn RungMetric> {
    own().filter(|m| m.bootstrapped())
}

/// The metrics with a column in a table (`pick`: the node's or the
/// rack's), in the table's order.
pub fn table(
    pick: fn(&dyn RungMetric) -> Option<TableColumn>,
) -> Vec<(&'static dyn RungMetric, TableColumn)> {
    let mut cols: Vec<_> = METRICS
        .iter()
        .filter_map(|m| pick(*m).map(|c| (*m, c)))
        .collect();
    cols.sort_by_key(|(_, c)| c.order);
    cols
}

/// The names of a metric's interval columns (low, high).
pub fn ci_columns(m: &dyn RungMetric) -> [String; 2] {
    let stem = m.column().strip_suffix("_w").unwrap_or(m.column());
    [format!("{stem}_ci95_lo_w"), format!("{stem}_ci95_hi_w")]
}

#[cfg(test)]
mod tests;
