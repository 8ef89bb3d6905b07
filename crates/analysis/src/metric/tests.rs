//! The registry against `docs/report.md`'s column list of `summary.csv`.

use super::*;

/// The rows of `docs/report.md`'s `summary.csv` section, in order.
fn documented() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/report.md");
    let doc = std::fs::read_to_string(path).unwrap_or_default();
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with("`summary.csv`"))
        .unwrap_or_default();
    section
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(str::to_string)
        .collect()
}

/// A metric's rows as the docs write them: its column with its unit and
/// doc line, then its interval's ends.
fn rows_of(m: &dyn RungMetric) -> Vec<String> {
    let unit = if m.column().ends_with("_j") { "J" } else { "W" };
    let mut rows = vec![format!("| `{}` | {unit} | {} |", m.column(), m.doc())];
    if m.bootstrapped() {
        let [lo, hi] = ci_columns(m);
        for (c, end) in [(lo, "low"), (hi, "high")] {
            let n = m.name();
            rows.push(format!(
                "| `{c}` | W | The {n}'s 95 % interval, {end} end, W. |"
            ));
        }
    }
    rows
}

#[test]
fn every_metric_is_documented_in_report_md_as_the_registry_declares_it() {
    let doc = documented();
    assert!(
        !doc.is_empty(),
        "docs/report.md has a `summary.csv` section"
    );
    for m in METRICS {
        for row in rows_of(*m) {
            assert!(
                doc.contains(&row),
                "docs/report.md lacks, in summary.csv's list: {row}"
            );
        }
    }
}

#[test]
fn the_registry_s_own_metrics_are_documented_after_the_typed_columns_in_its_order() {
    let doc = documented();
    let at = |row: &String| doc.iter().position(|d| d == row);
    let own: Vec<String> = own().flat_map(rows_of).collect();
    let positions: Vec<Option<usize>> = own.iter().map(at).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{own:?}");
    let last_typed = doc.iter().position(|d| d.starts_with("| `cycles`"));
    if let Some(first) = positions.first() {
        assert!(
            *first > last_typed,
            "the registry's own columns follow `cycles`"
        );
    }
}

#[test]
fn the_table_columns_of_the_typed_metrics_stand_in_today_s_order() {
    let heads = |pick| {
        table(pick)
            .iter()
            .map(|(_, c)| c.header)
            .collect::<Vec<_>>()
    };
    let node = heads(|m| m.node_table());
    let rack = heads(|m| m.rack_table());
    let at = |v: &[&str], h: &str| v.iter().position(|x| *x == h);
    for w in [
        "mean W",
        "peak W",
        "spread W",
        "swing W",
        "NVML sample-and-hold spread W",
    ]
    .windows(2)
    {
        assert!(at(&node, w[0]) < at(&node, w[1]), "{node:?}");
    }
    assert!(at(&rack, "mean") < at(&rack, "spread p99−p1"), "{rack:?}");
}
