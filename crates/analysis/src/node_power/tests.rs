//! Tests of the node-power analysis.

use super::*;

fn row(sent: i64, recv: i64, w: Option<f64>) -> NodePowerRow {
    NodePowerRow {
        sent_ns: sent,
        recv_ns: recv,
        node: "n".into(),
        source: "bmc".into(),
        kind: "redfish".into(),
        quantity: "node".into(),
        watts: w,
        error: if w.is_none() {
            "timeout: no answer".into()
        } else {
            String::new()
        },
    }
}

/// A node whose GPUs draw a 4 s square wave (200 ↔ 1200 W) for 40 s
/// after a 10 s constant 700 W; its BMC adds 900 W, averages over
/// 500 ms, publishes every 500 ms and shows it 300 ms late; the
/// harness asks every 250 ms.
fn node() -> (Vec<i64>, Vec<Option<f64>>, Vec<NodePowerRow>, Vec<RungSpan>) {
    let ms = 1_000_000i64;
    let gpu_w = |t: i64| {
        if t < 10_000 * ms {
            700.0
        } else if ((t - 10_000 * ms) / (2_000 * ms)) % 2 == 0 {
            1200.0
        } else {
            200.0
        }
    };
    let t: Vec<i64> = (0..50_000).map(|i| i * ms).collect();
    let w: Vec<Option<f64>> = t.iter().map(|t| Some(gpu_w(*t))).collect();
    let mut rows = Vec::new();
    let mut published = 900.0 + 700.0;
    for k in 0..200 {
        let sent = k * 250 * ms;
        let recv = sent + 20 * ms;
        // The value published at the last 500 ms tick before recv - lag.
        let tick = (recv - 300 * ms) / (500 * ms) * (500 * ms);
        if tick >= 500 * ms {
            let avg: f64 = (0..500)
                .map(|i| gpu_w(tick - 500 * ms + i * ms))
                .sum::<f64>()
                / 500.0;
            // A BMC's last digit is never still.
            published = 900.0 + avg + ((tick / (500 * ms)) % 3) as f64 * 0.5;
        }
        let failed = (160..164).contains(&k);
        rows.push(row(sent, recv, (!failed).then_some(published)));
    }
    let rungs = vec![
        RungSpan {
            id: 0,
            label: "sustained".into(),
            kind: PhaseKind::Sustained,
            period_ms: None,
            from_ns: 2_000 * ms,
            to_ns: 10_000 * ms,
        },
        RungSpan {
            id: 1,
            label: "slow".into(),
            kind: PhaseKind::Duty,
            period_ms: Some(4000.0),
            from_ns: 10_000 * ms,
            to_ns: 30_000 * ms,
        },
        RungSpan {
            id: 2,
            label: "fast".into(),
            kind: PhaseKind::Duty,
            period_ms: Some(200.0),
            from_ns: 30_000 * ms,
            to_ns: 50_000 * ms,
        },
    ];
    (t, w, rows, rungs)
}

#[test]
fn finds_the_update_period_the_lag_and_the_non_gpu_power() {
    let (t, w, rows, rungs) = node();
    let src = SourceRows {
        source: "bmc".into(),
        kind: "redfish".into(),
        interval_ms: Some(250.0),
        rows,
    };
    let (facts, table) = analyse(&[src], &rungs, &GpuSum { t_ns: &t, w: &w });
    let f = &facts[0];
    assert_eq!(f.update_ms, Some(500.0), "{f:?}");
    // 300 ms late, plus on average half an update held (250 ms), plus
    // the 20 ms answer: ~570 ms.
    let lag = f.lag_ms.unwrap();
    assert!((450.0..=750.0).contains(&lag), "{f:?}");
    assert_eq!(f.failed, 4);
    assert_eq!(f.errors, "timeout: 4");
    let sustained = &table[0];
    assert!(
        (sustained.non_gpu_w.unwrap() - 900.0).abs() < 1.0,
        "{sustained:?}"
    );
    assert!((sustained.gpu_sum_w.unwrap() - 700.0).abs() < 1.0);
    let slow = &table[1];
    // 900 W of the node's own, whatever the GPUs do.
    assert!((slow.non_gpu_w.unwrap() - 900.0).abs() < 60.0, "{slow:?}");
    assert!(slow.chassis_swing_w.unwrap() > 900.0, "{slow:?}");
    let fast = &table[2];
    assert_eq!(fast.chassis_swing_w, None);
    assert!(
        fast.verdict.0.iter().any(|n| matches!(
            n,
            NodePowerNote::CannotResolve { period_ms, .. } if *period_ms == 200.0
        )),
        "{fast:?}"
    );
    assert!(
        fast.verdict
            .to_string()
            .contains("cannot resolve a 200 ms swing")
    );
    // The failed reads fall into the fast rung's window: 4 of its ~78
    // readings are missing.
    assert!(
        fast.verdict.0.contains(&NodePowerNote::FailedReads(4)),
        "{fast:?}"
    );
    assert!(fast.coverage < 1.0 && fast.coverage > 0.9, "{fast:?}");
}

#[test]
fn a_source_that_stopped_answering_marks_the_rung_incomplete() {
    let (t, w, mut rows, rungs) = node();
    for r in rows.iter_mut().filter(|r| r.sent_ns > 20_000_000_000) {
        r.watts = None;
    }
    let src = SourceRows {
        source: "bmc".into(),
        kind: "redfish".into(),
        interval_ms: Some(250.0),
        rows,
    };
    let (_, table) = analyse(&[src], &rungs, &GpuSum { t_ns: &t, w: &w });
    assert!(
        table[1]
            .verdict
            .0
            .iter()
            .any(|n| matches!(n, NodePowerNote::Incomplete { .. })),
        "{:?}",
        table[1]
    );
    assert!(table[1].coverage < 0.6, "{:?}", table[1]);
    assert_eq!(table[2].readings, 0);
    assert!(
        table[2].verdict.0.contains(&NodePowerNote::NoReading),
        "{:?}",
        table[2]
    );
}

#[test]
fn a_meter_below_the_gpu_sum_is_said_not_passed_off() {
    let (t, w, mut rows, rungs) = node();
    // One PSU of four: a quarter of the chassis, below what the GPUs draw.
    for r in rows.iter_mut() {
        r.watts = r.watts.map(|x| x / 4.0);
    }
    let src = SourceRows {
        source: "psu1".into(),
        kind: "redfish".into(),
        interval_ms: Some(250.0),
        rows,
    };
    let (_, table) = analyse(&[src], &rungs, &GpuSum { t_ns: &t, w: &w });
    let sustained = &table[0];
    assert!(sustained.non_gpu_w.unwrap() < 0.0, "{sustained:?}");
    assert!(sustained.verdict.below_gpu_sum(), "{sustained:?}");
}

#[test]
fn a_meter_is_this_node_s_only_between_its_two_bounds() {
    // Below: by more than max(20 W, 3 % of the GPU sum).
    assert_eq!(meter_mismatch(985.0, 1000.0), None);
    assert_eq!(meter_mismatch(970.0, 1000.0), None);
    assert_eq!(
        meter_mismatch(969.0, 1000.0),
        Some(NodePowerNote::BelowGpuSum(31.0))
    );
    assert_eq!(meter_mismatch(100.0, 119.0), None);
    assert_eq!(
        meter_mismatch(100.0, 121.0),
        Some(NodePowerNote::BelowGpuSum(21.0))
    );
    // Far above: more than NON_GPU_CEILING_W beside the GPUs (a node's
    // 1,600 W read in mW).
    assert_eq!(meter_mismatch(51_000.0, 1000.0), None);
    assert_eq!(
        meter_mismatch(1_600_000.0, 1450.0),
        Some(NodePowerNote::FarAboveGpuSum(1_598_550.0))
    );
}
