//! A prediction's verdict table: the run report's rows for the headline
//! scenario (its excursion envelope against `[supply]`, its ramp rates,
//! dynamic range and band share against `[grid]`), then one row per grid
//! mode (`modes.csv`) and one per lifecycle limit of the headline
//! (`study/lifecycle.json`), each at its scale.

use super::super::Prediction;
use super::study::STUDY_DIR;
use powerlab_analysis::grid::GridVerdict;
use powerlab_analysis::grid::modes::ModeForcing;
use powerlab_collate::render::{Scale, write_table};
use powerlab_collate::render::{capitalised, text};
use powerlab_collate::report::verdicts::{
    Judged, Quantity, SourceKey, SpecItem, SpecRow, SpecSource, longest_window_means, spec_rows,
};
use powerlab_core::units::W_PER_MW;
use powerlab_rundir::files::predict::{LIFECYCLE_JSON, MODES_CSV};

/// Every row of the table (none without a scenario).
pub fn rows(p: &Prediction) -> Vec<SpecRow> {
    let Some(h) = p.scenarios.first() else {
        return Vec::new();
    };
    let judged = Judged {
        loaded: vec![h.id],
        grid: vec![h.id],
        unbounded: Vec::new(),
        means: longest_window_means(&p.envelope, &[h.id]),
    };
    let mut rows = spec_rows(&p.envelope, &p.grid, &judged);
    if let Some(m) = &p.modes {
        rows.extend(m.modes.iter().map(mode_row));
    }
    if let Some(l) = &p.lifecycle
        && let Some(c) = l.study.channels.first()
    {
        rows.extend(
            l.verdicts
                .iter()
                .filter(|v| v.scenario == c.label)
                .map(lifecycle_row),
        );
    }
    rows.extend(super::grid_section::rows(p));
    rows
}

/// A grid mode's row: the iteration's harmonics in its band fail it.
fn mode_row(f: &ModeForcing) -> SpecRow {
    let mut row = SpecRow::empty(
        SpecItem::Other(format!(
            "Grid mode {} ({:.3}–{:.3} Hz)",
            text(&f.mode.name),
            f.band_lo_hz,
            f.band_hi_hz
        )),
        Quantity::Power,
        None,
    );
    row.limit_words = Some("no harmonic in the band".into());
    row.value = Some(f.forcing_mw * W_PER_MW);
    row.verdict = match (f.flagged, f.unresolved_above_hz) {
        (true, _) => GridVerdict::Fail,
        (false, Some(hz)) => {
            row.note = Some(format!("the measured cycles hold nothing above {hz:.1} Hz"));
            GridVerdict::Undecided
        }
        (false, None) => GridVerdict::Pass,
    };
    row.source = Some(SpecSource {
        file: MODES_CSV.into(),
        row: f.mode.name.clone(),
        key: SourceKey::Other("forcing_mw".into()),
    });
    row
}

/// A lifecycle limit's row, its MW figures in W.
fn lifecycle_row(v: &crate::lifecycle::judge::Verdict) -> SpecRow {
    let (quantity, k) = match v.unit {
        "MW" => (Quantity::Power, W_PER_MW),
        "MW/s" => (Quantity::Rate, W_PER_MW),
        "MW/min" => (Quantity::RatePerMin, W_PER_MW),
        _ => (Quantity::Percent, 1.0),
    };
    let limit = v.limit.map(|l| l * k);
    let mut row = SpecRow::empty(SpecItem::Other(capitalised(&v.item)), quantity, limit);
    if v.value.is_finite() {
        row.value = Some(v.value * k);
        row.margin = limit.map(|l| l - v.value * k);
    }
    row.verdict = match v.pass {
        Some(true) => GridVerdict::Pass,
        Some(false) => GridVerdict::Fail,
        None if limit.is_none() => GridVerdict::NoLimit,
        None => GridVerdict::NotMeasured,
    };
    row.source = Some(SpecSource {
        file: format!("{STUDY_DIR}/{LIFECYCLE_JSON}"),
        row: v.scenario.clone(),
        key: SourceKey::Other(v.item.clone()),
    });
    row
}

/// Appends the table and what it is judged against.
pub(super) fn write(s: &mut String, p: &Prediction) {
    let rows = rows(p);
    if rows.is_empty() {
        return;
    }
    let headline = p.scenarios.first().map_or("", |h| h.label.as_str());
    write_table(
        s,
        &rows,
        Scale::Scaled,
        &format!(
            "The job's predicted power ({} GPUs, scenario `{headline}`) against the schedule's `[supply]` and `[grid]` (band share: {}–{} Hz); the rating row holds its mean over the whole span; a grid mode fails where the iteration or a significant harmonic falls in its band (`modes.csv`), a lifecycle limit where an event breaks it (`{STUDY_DIR}/{LIFECYCLE_JSON}`).",
            p.schedule.job.gpus, p.grid.band_hz[0], p.grid.band_hz[1]
        ),
    );
}
