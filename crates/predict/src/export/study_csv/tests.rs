//! The waveform table's rows and the events table.

use super::*;

#[test]
fn writes_rows_with_the_periods_decimals() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.csv");
    let mut w = WaveformCsvWriter::create(&path, &["plain", "a, \"b\""], 10.0).unwrap();
    w.push(&[1.5, 2.0]).unwrap();
    w.push(&[100.25, 0.000_001]).unwrap();
    assert_eq!(
        w.push(&[1.0]).unwrap_err().kind(),
        io::ErrorKind::InvalidInput
    );
    assert_eq!(w.finish().unwrap(), 2);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        "time_s,plain (MW),\"a, \"\"b\"\" (MW)\"\n0.00,1.500000,2.000000\n0.01,100.250000,0.000001\n"
    );
    let fixed = |v: f64, d: usize| {
        let mut s = String::new();
        push_fixed(&mut s, v, d);
        s
    };
    assert_eq!(fixed(-1.25, 3), "-1.250");
    assert_eq!(fixed(-0.0000004, 6), "0.000000");
    assert_eq!(fixed(86_399.99, 2), "86399.99");
    assert_eq!(fixed(7.6, 0), "8");
    assert_eq!(fixed(f64::NAN, 2), "NaN");
    assert_eq!(fixed(1e300, 1), format!("{:.1}", 1e300));
    assert_eq!(time_decimals(1.0), 0);
    assert_eq!(time_decimals(0.0005), 4);
    assert_eq!(time_decimals(1.0 / 3.0), 9);
}

#[test]
fn writes_the_events_table() {
    let dir = tempfile::tempdir().unwrap();
    let row = EventRow {
        time_s: 300.0,
        event: "checkpoint".into(),
        mw_before: 140.0,
        mw_after: 35.5,
        duration_ms: 10.0,
    };
    let path = write_events(dir.path(), &[row]).unwrap();
    assert_eq!(path.file_name().unwrap(), LIFECYCLE_EVENTS_CSV);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text,
        "time_s,event,mw_before,mw_after,duration_ms\n300.0,checkpoint,140.0,35.5,10.0\n"
    );
    write_events(dir.path(), &[]).unwrap();
    let empty = std::fs::read_to_string(&path).unwrap();
    assert_eq!(empty, "time_s,event,mw_before,mw_after,duration_ms\n");
}
