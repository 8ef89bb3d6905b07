//! [`METRICS`]: every per-rung node metric, in `summary.csv`'s order. A
//! new metric is one entry here: a type implementing [`RungMetric`] (its
//! column, doc line, how it is read from the levels, its interval, its
//! table columns) and its line in [`METRICS`].

use super::{Bounds, Cell, Figure, Judged, MetricValue, RungMetric, TableColumn, ci_columns};
use crate::summary::RungSummary;
use powerlab_rundir::summary::SummaryRow;

/// Every per-rung node metric.
pub static METRICS: &[&dyn RungMetric] = &[
    &MEAN,
    &PEAK,
    &P1,
    &P99,
    &SPREAD,
    &SWING,
    &ENERGY,
    &RAW_MEAN,
    &RAW_PEAK,
    &RAW_SPREAD,
    &RAW_SWING,
    &INSTANT_MEAN,
    &INSTANT_SPREAD,
    &AVERAGE_FIELD_MEAN,
    &AVERAGE_FIELD_SPREAD,
    &AVERAGE_FIELD_SWING,
];

/// A metric with a typed field in `RungSummary` and `SummaryRow` (every
/// metric that predates the registry), its properties as data.
struct Typed {
    column: &'static str,
    name: &'static str,
    doc: &'static str,
    field: Field,
    bootstrapped: bool,
    node: Option<TableColumn>,
    rack: Option<TableColumn>,
    compare: Option<Judged>,
    figure: Option<Figure>,
}

impl RungMetric for Typed {
    fn column(&self) -> &'static str {
        self.column
    }
    fn name(&self) -> &'static str {
        self.name
    }
    fn doc(&self) -> &'static str {
        self.doc
    }
    fn bootstrapped(&self) -> bool {
        self.bootstrapped
    }
    fn node_table(&self) -> Option<TableColumn> {
        self.node
    }
    fn rack_table(&self) -> Option<TableColumn> {
        self.rack
    }
    fn compare(&self) -> Option<Judged> {
        self.compare
    }
    fn figure(&self) -> Option<Figure> {
        self.figure
    }
    fn field(&self) -> Option<Field> {
        Some(self.field)
    }
}

/// No interval.
fn no_ci(_: &RungSummary) -> Option<Bounds> {
    None
}

/// A typed field without an interval, its table columns and comparison
/// left out.
macro_rules! plain {
    ($column:ident, $name:literal, $doc:literal) => {
        Typed {
            column: stringify!($column),
            name: $name,
            doc: $doc,
            field: Field {
                get: |r| r.$column,
                slot: |r| &mut r.$column,
                ci95: no_ci,
                row: |r| [r.$column, None, None],
            },
            bootstrapped: false,
            node: None,
            rack: None,
            compare: None,
            figure: None,
        }
    };
}

/// A typed field with its interval (`$ci` in the summary, `$lo`/`$hi` in
/// the row).
macro_rules! bootstrapped {
    ($column:ident, $ci:ident, $lo:ident, $hi:ident, $name:literal, $doc:literal) => {
        Typed {
            field: Field {
                get: |r| r.$column,
                slot: |r| &mut r.$column,
                ci95: |r| r.$ci,
                row: |r| [r.$column, r.$lo, r.$hi],
            },
            bootstrapped: true,
            ..plain!($column, $name, $doc)
        }
    };
}

/// A column of the node's rung table.
const fn node(header: &'static str, order: u16, cell: Cell) -> Option<TableColumn> {
    Some(TableColumn {
        header,
        order,
        cell,
    })
}

static MEAN: Typed = Typed {
    node: node("mean W", 10, Cell::Figure),
    rack: node("mean", 10, Cell::Figure),
    compare: Some(Judged::Always),
    figure: Some(Figure::Mean),
    ..bootstrapped!(
        mean_w,
        mean_ci95,
        mean_ci95_lo_w,
        mean_ci95_hi_w,
        "mean",
        "Mean node power, W."
    )
};
static PEAK: Typed = Typed {
    node: node("peak W", 20, Cell::Figure),
    rack: node("peak", 20, Cell::Figure),
    compare: Some(Judged::Always),
    figure: Some(Figure::Peak),
    ..bootstrapped!(
        peak_w,
        peak_ci95,
        peak_ci95_lo_w,
        peak_ci95_hi_w,
        "peak",
        "Peak, W."
    )
};
static P1: Typed = plain!(p1_w, "p1", "1st percentile, W.");
static P99: Typed = plain!(p99_w, "p99", "99th percentile, W.");
static SPREAD: Typed = Typed {
    node: node("spread W", 30, Cell::Figure),
    rack: node("spread p99−p1", 30, Cell::Figure),
    compare: Some(Judged::Never),
    figure: Some(Figure::Spread),
    ..bootstrapped!(
        spread_w,
        spread_ci95,
        spread_ci95_lo_w,
        spread_ci95_hi_w,
        "spread",
        "p99 − p1, W."
    )
};
static SWING: Typed = Typed {
    node: node("swing W", 40, Cell::Figure),
    compare: Some(Judged::DutyRungs),
    figure: Some(Figure::Swing),
    ..bootstrapped!(
        swing_w,
        swing_ci95,
        swing_ci95_lo_w,
        swing_ci95_hi_w,
        "swing",
        "p90 − p10, W."
    )
};
static ENERGY: Typed = plain!(energy_j, "energy", "Energy over the measured window, J.");
static RAW_MEAN: Typed = plain!(
    raw_mean_w,
    "NVML mean",
    "What NVML sampled: mean of the sample-and-hold node curve, W."
);
static RAW_PEAK: Typed = plain!(raw_peak_w, "NVML peak", "What NVML sampled: its peak, W.");
static RAW_SPREAD: Typed = Typed {
    node: node("NVML sample-and-hold spread W", 50, Cell::Plain),
    ..plain!(
        raw_spread_w,
        "NVML spread",
        "What NVML sampled: its p99 − p1, W (not the node's spread for a duty rung)."
    )
};
static RAW_SWING: Typed = Typed {
    node: node("swing W", 60, Cell::UnlessAliased),
    ..plain!(
        raw_swing_w,
        "NVML swing",
        "What NVML sampled: its p90 − p10, W."
    )
};
static INSTANT_MEAN: Typed = plain!(
    instant_mean_w,
    "instant mean",
    "The instant field's mean, W (second instrument)."
);
static INSTANT_SPREAD: Typed = plain!(
    instant_spread_w,
    "instant spread",
    "The instant field's spread, W."
);
static AVERAGE_FIELD_MEAN: Typed = plain!(
    average_field_mean_w,
    "1 s average mean",
    "The 1 s average field's mean, W — comparison only."
);
static AVERAGE_FIELD_SPREAD: Typed = plain!(
    average_field_spread_w,
    "1 s average spread",
    "The 1 s average field's spread, W — comparison only, never a result."
);
static AVERAGE_FIELD_SWING: Typed = plain!(
    average_field_swing_w,
    "1 s average swing",
    "The 1 s average field's swing (p90 − p10), W — comparison only."
);

/// A metric's typed field in `RungSummary` and `SummaryRow`.
#[derive(Clone, Copy)]
pub struct Field {
    /// Its value in the summary.
    pub get: fn(&RungSummary) -> Option<f64>,
    /// The same, to set.
    pub slot: fn(&mut RungSummary) -> &mut Option<f64>,
    /// Its interval in the summary.
    pub ci95: fn(&RungSummary) -> Option<Bounds>,
    /// Its value and interval (low, high) in a row read back.
    pub row: fn(&SummaryRow) -> [Option<f64>; 3],
}

/// A metric's value in a summary.
pub fn value(m: &dyn RungMetric, r: &RungSummary) -> MetricValue {
    match m.field() {
        Some(f) => MetricValue {
            value: (f.get)(r),
            ci95: (f.ci95)(r),
        },
        None => r.metrics.get(m.column()),
    }
}

/// Blanks a metric's value in a summary (an incomplete window).
pub fn blank(m: &dyn RungMetric, r: &mut RungSummary) {
    match m.field() {
        Some(f) => *(f.slot)(r) = None,
        None => r.metrics.set(m.column(), MetricValue::default()),
    }
}

/// A metric's value and interval (low, high) in a row read back from a
/// `summary.csv`.
pub fn read(m: &dyn RungMetric, row: &SummaryRow) -> [Option<f64>; 3] {
    match m.field() {
        Some(f) => (f.row)(row),
        None => {
            let [lo, hi] = ci_columns(m);
            [m.column(), lo.as_str(), hi.as_str()].map(|c| row.extra_value(c))
        }
    }
}
