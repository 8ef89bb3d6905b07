//! What the tests of damaged, edited and refused runs share: a one-rung
//! duty campaign, a campaign file, a finished run to damage, a collation,
//! and a run directory made to look older than raw indexes.

use super::*;

pub const DUTY: &str =
    "[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiod_ms = 200\nduration_s = 4\n";

pub fn write_campaign(dir: &std::path::Path, body: &str) -> std::path::PathBuf {
    let file = dir.join("c.toml");
    std::fs::write(&file, campaign(body)).unwrap();
    file
}

/// A finished simulated run of 2 GPUs and two duty rungs (each case works
/// on its own copy).
pub fn finished_run() -> Run {
    let c = campaign(
        "[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiods_ms = [500, 200]\nduration_s = 4\n",
    );
    let r = run_sim(&c, &["--sim-gpus", "2"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    r
}

pub fn collate_dir(d: &std::path::Path) -> std::process::Output {
    powerlab_output(["collate", d.to_str().unwrap()])
}

/// Makes a run directory look written before raw indexes existed (format
/// 1, no seal, no index).
pub fn older_than_indexes(d: &std::path::Path) {
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("manifest.json")).unwrap()).unwrap();
    m["format_version"] = serde_json::json!(1);
    m.as_object_mut().unwrap().remove("seal");
    m.as_object_mut().unwrap().remove("raw_index");
    m.as_object_mut().unwrap().remove("checksums");
    std::fs::write(d.join("manifest.json"), serde_json::to_string(&m).unwrap()).unwrap();
    for e in std::fs::read_dir(d.join("raw")).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "idx") {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
}
