#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! A raw copy read back by polars' own Parquet reader is the frame it was
//! written from: every row, every empty field, whatever the strings and
//! however the frame was chunked.

use super::{Dictionary, ROW_GROUP_ROWS, write};
use crate::load::raw_schema;
use polars::prelude::*;
use proptest::prelude::*;

/// The frame read back from its copy.
fn round_trip(df: &DataFrame) -> DataFrame {
    let mut bytes = Vec::new();
    write(df, &mut bytes).unwrap();
    ParquetReader::new(std::io::Cursor::new(bytes))
        .finish()
        .unwrap()
}

type Row = (
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<f64>,
);

/// A raw frame of `rows` (None is an empty field), built in `parts`
/// chunks.
fn frame(rows: &[Row], parts: usize) -> DataFrame {
    let per = rows.len().div_ceil(parts.max(1)).max(1);
    let mut out = DataFrame::empty_with_schema(&raw_schema());
    for part in rows.chunks(per) {
        let text = |name: &str, f: &dyn Fn(&Row) -> Option<String>| {
            Column::new(name.into(), part.iter().map(f).collect::<Vec<_>>())
        };
        let df = DataFrame::new_infer_height(vec![
            Column::new("ts_ns".into(), part.iter().map(|r| r.0).collect::<Vec<_>>()),
            text("node", &|r| r.1.clone()),
            text("gpu", &|r| r.2.clone()),
            text("instrument", &|r| r.3.clone()),
            Column::new("value".into(), part.iter().map(|r| r.4).collect::<Vec<_>>()),
        ])
        .unwrap();
        out.vstack_mut_owned(df).unwrap();
    }
    out
}

/// A string field: short (held in its view), long (a host name, held in a
/// buffer), one of many, or empty.
fn text() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        6 => prop::sample::select(vec!["node-a", "gpu0", "instant_w", "average_w", "energy_mj"])
            .prop_map(|s| Some(s.to_string())),
        3 => prop::sample::select(vec![
            "ip-10-0-1-23.ec2.internal",
            "ip-10-0-1-24.ec2.internal",
            "GPU-0123456789abcdef",
        ])
        .prop_map(|s| Some(s.to_string())),
        1 => (0u32..200).prop_map(|i| Some(format!("s{i}"))),
        1 => Just(None),
    ]
}

fn row() -> impl Strategy<Value = Row> {
    (
        prop::option::weighted(0.95, 0i64..2_000_000_000_000_000_000),
        text(),
        text(),
        text(),
        prop::option::weighted(0.95, prop_oneof![-1e6f64..1e6, Just(f64::NAN), Just(0.0)]),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_copy_reads_back_as_the_frame_it_was_written_from(
        rows in prop::collection::vec(row(), 0..400),
        parts in 1usize..4,
    ) {
        let df = frame(&rows, parts);
        let back = round_trip(&df);
        prop_assert!(back.equals_missing(&df), "wrote\n{df}\nread back\n{back}");
        prop_assert_eq!(back.schema(), df.schema());
    }
}

#[test]
fn a_copy_longer_than_a_row_group_reads_back_whole() {
    let n = ROW_GROUP_ROWS + 1000;
    let instruments = ["instant_w", "average_w", "energy_mj"];
    let rows: Vec<Row> = (0..n)
        .map(|i| {
            (
                Some(1_796_649_728_401_848_714 + (i / 3) as i64 * 20_000_000),
                Some("ip-10-0-1-23.ec2.internal".to_string()),
                Some("gpu0".to_string()),
                Some(instruments[i % 3].to_string()),
                Some((i % 700) as f64 + 0.25),
            )
        })
        .collect();
    let df = frame(&rows, 3);
    let back = round_trip(&df);
    assert!(back.equals_missing(&df));
}

#[test]
fn equal_strings_share_a_key_and_different_ones_do_not() {
    let texts = [
        "a",
        "b",
        "a",
        "long-host-name-0",
        "long-host-name-0",
        "long-host-name-1",
        "b",
        "long-host-name-0",
        "a",
    ];
    let column = StringChunked::from_iter(texts.iter().map(|s| Some(*s)));
    let array = column.downcast_iter().next().unwrap();
    let mut dict = Dictionary::default();
    let keys: Vec<u32> = array
        .views()
        .iter()
        .enumerate()
        .map(|(j, v)| dict.key(*v, || array.value(j)))
        .collect();
    for (i, a) in texts.iter().enumerate() {
        for (j, b) in texts.iter().enumerate() {
            assert_eq!(keys[i] == keys[j], a == b, "rows {i} and {j}");
        }
        assert_eq!(dict.values[keys[i] as usize], *a);
    }
    assert_eq!(
        dict.values,
        ["a", "b", "long-host-name-0", "long-host-name-1"]
    );
}

/// Each chunk's long strings sit in its own buffer from offset 0: the last
/// long string of one chunk and the first of the next can have the same
/// view (length, first 4 bytes, buffer 0, offset 0) and be different
/// strings (found by a hostile review: the second took the first's key).
#[test]
fn a_long_string_opening_a_chunk_is_read_not_taken_from_the_chunk_before() {
    let row = |node: &str| -> Row {
        (
            Some(1),
            Some(node.to_string()),
            Some("gpu0".to_string()),
            Some("instant_w".to_string()),
            Some(1.0),
        )
    };
    let rows = [
        row("node-a"),
        row("ip-10-0-1-23.ec2.internal"),
        row("ip-10-0-1-24.ec2.internal"),
        row("node-a"),
    ];
    let df = frame(&rows, 2);
    assert_eq!(df.column("node").unwrap().n_chunks(), 2);
    let back = round_trip(&df);
    assert!(back.equals_missing(&df), "wrote\n{df}\nread back\n{back}");
}
