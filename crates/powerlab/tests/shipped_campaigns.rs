#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! The campaigns shipped in `campaigns/`, run as shipped on the simulated
//! node.

use crate::util::*;

/// Issue 31, defect 13: the release tarball's first campaign,
/// `campaigns/device-smoke.toml`, said "too short to fold" on every duty
/// rung, so a first real run showed no swing at all. Run as shipped on the
/// simulated node, every duty rung now gets composed figures.
#[test]
fn issue31_defect13_the_shipped_smoke_campaign_folds_its_duty_rungs() {
    let file =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../campaigns/device-smoke.toml");
    let text_of = std::fs::read_to_string(&file).unwrap();
    let r = run_sim(&text_of, &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let rows = csv_rows(&r.dir().join("report/summary.csv"));
    let duty: Vec<_> = rows.iter().filter(|r| r["kind"] == "duty").collect();
    assert_eq!(duty.len(), 4, "{rows:?}");
    for d in &duty {
        assert!(
            !d["spread_w"].is_empty() && !d["swing_w"].is_empty(),
            "{}: no composed figures ({})",
            d["label"],
            d["verdict"]
        );
    }
    let md = std::fs::read_to_string(r.dir().join("report/report.md")).unwrap();
    assert!(!md.contains("too short to fold"), "{md}");
}
