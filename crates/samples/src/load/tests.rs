//! Tests of loading a run: a rung window cut at the end of the records.

use super::*;

fn duty_window() -> RungWindow {
    let info: RungInfo = serde_json::from_str(
        r#"{"id":3,"label":"d/p100ms/in_phase","phase":"d","kind":"duty","mode":"in_phase","period_ms":100.0,"duty":0.5,"repeat":1,"repeats":1}"#,
    )
    .unwrap();
    RungWindow {
        info,
        epoch_ns: 0,
        measure_from_ns: 1_000_000_000,
        end_ns: 9_000_000_000,
        stopped_from_ns: None,
        records_end: false,
        offsets_ns: vec![0],
        start_error_ns: None,
        barrier_ok: None,
        lead_ns: None,
    }
}

#[test]
fn a_cut_with_no_record_in_the_window_leaves_the_rung_whole() {
    // A GPU with no sample or edge in the window yet: at = i64::MIN.
    for at in [i64::MIN, 0, 1_000_000_000] {
        let mut w = duty_window();
        cut_at_stop(&mut w, at);
        assert_eq!(
            (w.end_ns, w.stopped_from_ns),
            (9_000_000_000, None),
            "at {at}"
        );
    }
    let mut w = duty_window();
    cut_at_stop(&mut w, 1_000_000_000 + 750_000_000);
    assert_eq!(
        (w.end_ns, w.stopped_from_ns),
        (1_700_000_000, Some(9_000_000_000))
    );
}
