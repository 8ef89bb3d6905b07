#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! The edge index's one pass against polars' own grouping of the frame.

use super::EdgeIndex;
use polars::prelude::*;
use powerlab_core::shape::EdgeKind;
use proptest::prelude::*;
use std::collections::BTreeMap;

type Row = (
    Option<u32>,
    Option<&'static str>,
    Option<&'static str>,
    Option<i64>,
);

/// The index polars' `partition_by` gives (the pass it replaced), rows
/// with an empty field or an unknown kind left out.
fn by_partition(df: &DataFrame) -> BTreeMap<(u32, String, EdgeKind), Vec<i64>> {
    let mut whole = df.clone();
    whole.rechunk_mut();
    let keep = whole
        .columns()
        .iter()
        .map(|c| c.is_not_null())
        .reduce(|a, b| &a & &b)
        .unwrap();
    let whole = whole.filter(&keep).unwrap();
    let mut m = BTreeMap::new();
    for part in whole
        .partition_by(["rung_id", "gpu", "kind"], true)
        .unwrap()
    {
        let text = |n: &str| {
            part.column(n)
                .unwrap()
                .str()
                .unwrap()
                .get(0)
                .unwrap()
                .to_string()
        };
        let Some(kind) = EdgeKind::parse(&text("kind")) else {
            continue;
        };
        let rung = part
            .column("rung_id")
            .unwrap()
            .u32()
            .unwrap()
            .get(0)
            .unwrap();
        let at = part.column("achieved_ns").unwrap().i64().unwrap();
        m.insert((rung, text("gpu"), kind), at.into_no_null_iter().collect());
    }
    m
}

/// An edges frame of `rows` in `parts` chunks; with `mixed`, the kind
/// column in one chunk (the others' chunks then do not line up with it).
fn frame(rows: &[Row], parts: usize, mixed: bool) -> DataFrame {
    let per = rows.len().div_ceil(parts.max(1)).max(1);
    let schema = Schema::from_iter([
        Field::new("rung_id".into(), DataType::UInt32),
        Field::new("gpu".into(), DataType::String),
        Field::new("kind".into(), DataType::String),
        Field::new("achieved_ns".into(), DataType::Int64),
    ]);
    let mut df = DataFrame::empty_with_schema(&schema);
    for part in rows.chunks(per) {
        let piece = DataFrame::new_infer_height(vec![
            Column::new(
                "rung_id".into(),
                part.iter().map(|r| r.0).collect::<Vec<_>>(),
            ),
            Column::new("gpu".into(), part.iter().map(|r| r.1).collect::<Vec<_>>()),
            Column::new("kind".into(), part.iter().map(|r| r.2).collect::<Vec<_>>()),
            Column::new(
                "achieved_ns".into(),
                part.iter().map(|r| r.3).collect::<Vec<_>>(),
            ),
        ])
        .unwrap();
        df.vstack_mut_owned(piece).unwrap();
    }
    if mixed {
        let kind = df
            .column("kind")
            .unwrap()
            .as_materialized_series()
            .rechunk();
        df.with_column(kind.into_column()).unwrap();
    }
    df
}

fn row() -> impl Strategy<Value = Row> {
    (
        prop::option::weighted(0.95, 1u32..5),
        prop::option::weighted(
            0.95,
            prop::sample::select(vec!["gpu0", "gpu1", "GPU-0123456789abcdef"]),
        ),
        prop::option::weighted(
            0.95,
            prop::sample::select(vec!["start", "rise", "fall", "fell"]),
        ),
        prop::option::weighted(0.95, 0i64..1_000_000),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_index_groups_the_edges_as_polars_partitions_them(
        rows in prop::collection::vec(row(), 0..300),
        parts in 1usize..4,
        mixed in any::<bool>(),
    ) {
        let df = frame(&rows, parts, mixed);
        prop_assert_eq!(EdgeIndex::from_frame(Some(&df)).0, by_partition(&df));
    }
}

#[test]
fn no_frame_or_a_missing_column_is_no_edge() {
    assert!(EdgeIndex::from_frame(None).0.is_empty());
    let df = frame(&[(Some(1), Some("gpu0"), Some("rise"), Some(5))], 1, false);
    assert_eq!(
        EdgeIndex::from_frame(Some(&df)).get(1, "gpu0", EdgeKind::Rise),
        [5]
    );
    let without = df.drop("kind").unwrap();
    assert!(EdgeIndex::from_frame(Some(&without)).0.is_empty());
}
