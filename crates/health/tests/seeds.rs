#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Every failure the seeds describe, on a faked system, names the right
//! lowest broken contract.

use powerlab_health::facts::{FabricFacts, ProcessFacts};
use powerlab_health::{NodeFacts, Status, run_checks};

fn lowest(f: &NodeFacts, needs_nccl: bool) -> (Option<String>, String) {
    let r = run_checks(f, "idle", needs_nccl);
    (r.lowest_broken.clone(), r.headline())
}

#[test]
fn healthy_node_passes() {
    let r = run_checks(&NodeFacts::healthy_h200(2), "idle", true);
    assert!(!r.failed(), "{}", r.headline());
    assert!(r.headline().starts_with("PREFLIGHT PASSED"));
    assert!(
        r.checks.iter().all(|c| c.status == Status::Pass),
        "{:#?}",
        r.checks
    );
}

/// The devlog's B300 node: nvidia-smi perfect, fabric In Progress with
/// CliqueId N/A, every CUDA call 802.
#[test]
fn cuda_802_with_fabric_in_progress_names_cuda_init_with_fabric_evidence() {
    let mut f = NodeFacts::healthy_h200(8);
    f.cuda_init = Err((802, "CUDA_ERROR_SYSTEM_NOT_READY".into()));
    f.cuda_uuids.clear();
    for g in &mut f.gpus {
        g.fabric = Some(FabricFacts {
            state: "in_progress".into(),
            status: "nvml_return_0".into(),
            clique_id: None,
        });
    }
    let r = run_checks(&f, "idle", true);
    assert_eq!(r.lowest_broken.as_deref(), Some("cuda_init"));
    let c = r.checks.iter().find(|c| c.id == "cuda_init").unwrap();
    let ev = c.evidence.join(" ");
    assert!(
        ev.contains("802") && ev.contains("in_progress") && ev.contains("clique id N/A"),
        "{ev}"
    );
    assert!(c.fix.contains("Fabric Manager"), "{}", c.fix);
    assert!(
        r.headline()
            .starts_with("PREFLIGHT FAILED — do not start the campaign")
    );
    // Everything above is a consequence, not a clue.
    assert!(
        r.checks
            .iter()
            .skip_while(|c| c.id != "cuda_init")
            .skip(1)
            .all(|c| c.status != Status::Fail)
    );
}

#[test]
fn empty_device_mask_names_the_mask_not_cuda() {
    let mut f = NodeFacts::healthy_h200(2);
    f.cuda_visible_devices = Some(String::new());
    f.cuda_init = Ok(0);
    f.cuda_uuids.clear();
    assert_eq!(lowest(&f, false).0.as_deref(), Some("device_mask"));
}

#[test]
fn capped_gpu_names_the_power_limit() {
    let mut f = NodeFacts::healthy_h200(2);
    f.gpus[1].enforced_limit_w = Some(250.0);
    f.gpus[1].default_limit_w = Some(400.0);
    let (id, head) = lowest(&f, false);
    assert_eq!(id.as_deref(), Some("power_limit"));
    assert!(
        head.contains("GPU 1: enforced limit 250 W below the default 400 W"),
        "{head}"
    );
}

#[test]
fn ecc_off_on_one_of_two_gpus_names_ecc() {
    let mut f = NodeFacts::healthy_h200(2);
    f.gpus[1].ecc_current = Some(false);
    let (id, head) = lowest(&f, false);
    assert_eq!(id.as_deref(), Some("ecc"));
    assert!(
        head.contains("GPU 1: ECC off while the other GPUs have it on"),
        "{head}"
    );
}

#[test]
fn foreign_process_is_named_with_pid_and_memory() {
    let mut f = NodeFacts::healthy_h200(2);
    f.gpus[0].processes.push(ProcessFacts {
        pid: 4242,
        used_bytes: Some(11 << 30),
        name: Some("python3".into()),
    });
    let (id, head) = lowest(&f, false);
    assert_eq!(id.as_deref(), Some("foreign_processes"));
    assert!(
        head.contains("pid 4242 (python3) holds 11264 MiB"),
        "{head}"
    );
}

#[test]
fn missing_nccl_blocks_only_campaigns_that_need_it() {
    let mut f = NodeFacts::healthy_h200(2);
    let nccl = f.libs.iter_mut().find(|l| l.name == "libnccl").unwrap();
    nccl.found = None;
    nccl.error = Some("none of libnccl.so, libnccl.so.2 could be loaded".into());
    assert_eq!(lowest(&f, true).0.as_deref(), Some("libraries"));
    let r = run_checks(&f, "idle", false);
    assert!(!r.failed());
    assert_eq!(
        r.checks
            .iter()
            .find(|c| c.id == "libraries")
            .unwrap()
            .status,
        Status::Warn
    );
}

#[test]
fn unreadable_power_on_one_gpu_names_nvml_power_and_the_gpu() {
    let mut f = NodeFacts::healthy_h200(2);
    f.gpus[1].instant_power_w = None;
    f.gpus[1].instant_power_error = Some("Not Supported".into());
    let (id, head) = lowest(&f, false);
    assert_eq!(id.as_deref(), Some("nvml_power"));
    assert!(head.contains("GPU 1: power not readable"), "{head}");
}

#[test]
fn lower_contract_wins_when_several_break() {
    let mut f = NodeFacts::healthy_h200(2);
    f.gpus[0].enforced_limit_w = Some(250.0);
    f.gpus[1].ecc_current = Some(false);
    f.nvml = Err("NVML_ERROR_DRIVER_NOT_LOADED".into());
    assert_eq!(lowest(&f, false).0.as_deref(), Some("driver"));
}

#[test]
fn hw_power_brake_is_a_facility_problem() {
    let mut f = NodeFacts::healthy_h200(2);
    f.gpus[0].clock_event_bits = Some(0x4 | 0x80);
    let (id, head) = lowest(&f, false);
    assert_eq!(id.as_deref(), Some("clock_events"));
    assert!(
        head.contains("sw_power_cap, hw_power_brake_slowdown"),
        "{head}"
    );
}

#[test]
fn health_diff_shows_idle_vs_load() {
    let idle = run_checks(&NodeFacts::healthy_h200(1), "idle", false);
    let mut loaded = NodeFacts::healthy_h200(1);
    loaded.gpus[0].sm_clock_mhz = Some(1980);
    loaded.gpus[0].clock_event_bits = Some(0x4);
    loaded.gpus[0].power_avg_w = Some(693.0);
    let load = run_checks(&loaded, "under_load", false);
    let d = powerlab_health::diff::diff(
        &serde_json::to_value(&idle).unwrap(),
        &serde_json::to_value(&load).unwrap(),
    );
    assert!(
        d.iter().any(|l| l.contains("sm_clock_mhz: 345 -> 1980")),
        "{d:?}"
    );
    assert!(
        d.iter().any(|l| l.contains("clock_event_bits: 1 -> 4")),
        "{d:?}"
    );
    assert!(
        d.iter().any(|l| l.contains("power_avg_w: 95.0 -> 693.0")),
        "{d:?}"
    );
}

#[test]
fn reports_are_written_with_the_verdict_first() {
    let tmp = tempfile::tempdir().unwrap();
    let mut f = NodeFacts::healthy_h200(2);
    f.gpus[1].ecc_current = Some(false);
    let r = run_checks(&f, "idle", false);
    let (json, md) = powerlab_health::report::write(&r, tmp.path(), "health").unwrap();
    let text = std::fs::read_to_string(md).unwrap();
    assert!(
        text.lines()
            .next()
            .unwrap()
            .starts_with("# PREFLIGHT FAILED — do not start the campaign")
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(v["lowest_broken"], "ecc");
}

/// Issue 33 item 4: power smoothing is recorded, never judged as broken:
/// "not supported" (an H200) passes with NVML's return code, "on" warns
/// that the figures are the smoothed draw, in the JSON and the markdown.
#[test]
fn power_smoothing_is_recorded_and_warns_only_when_on() {
    use powerlab_core::smoothing_state::{PowerSmoothing, SmoothingProfile};
    let r = run_checks(&NodeFacts::healthy_h200(2), "idle", false);
    let c = r.checks.iter().find(|c| c.id == "power_smoothing").unwrap();
    assert_eq!(c.status, Status::Pass);
    assert!(
        c.evidence[0].contains("GPU 0: power smoothing not supported (NVML return 3"),
        "{:?}",
        c.evidence
    );
    let md = powerlab_health::report::markdown(&r);
    assert!(
        md.contains("power smoothing not supported (NVML return 3"),
        "{md}"
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(
        json["facts"]["gpus"][0]["power_smoothing"]["state"],
        "not_supported"
    );

    let mut f = NodeFacts::healthy_h200(2);
    f.gpus[1].power_smoothing = PowerSmoothing::On(SmoothingProfile {
        profile: 2,
        floor_pct: 55.0,
        ramp_up_w_per_s: 1000.0,
        ramp_down_w_per_s: 500.0,
        ramp_down_hysteresis_ms: 1000.0,
        applied_floor_w: None,
    });
    f.gpus[0].power_smoothing = PowerSmoothing::DriverTooOld { code: 2 };
    let r = run_checks(&f, "idle", false);
    assert!(!r.failed(), "{}", r.headline());
    let c = r.checks.iter().find(|c| c.id == "power_smoothing").unwrap();
    assert_eq!(c.status, Status::Warn);
    assert!(
        c.evidence[0].contains("driver is too old"),
        "{:?}",
        c.evidence
    );
    assert!(
        c.evidence[1].contains(
            "on, profile 2: floor 55 % TMP, ramp up 1000 W/s, down 500 W/s, hysteresis 1000 ms"
        ) && c.evidence[1].contains("not the load's raw swing"),
        "{:?}",
        c.evidence
    );
    assert!(r.headline().contains("1 warnings"), "{}", r.headline());
    let md = powerlab_health::report::markdown(&r);
    assert!(
        md.contains("| power_smoothing |") && md.contains("| WARN |"),
        "{md}"
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["facts"]["gpus"][1]["power_smoothing"]["state"], "on");
    assert_eq!(json["facts"]["gpus"][1]["power_smoothing"]["profile"], 2);

    // A capture written before the field existed still reads.
    let mut old = serde_json::to_value(&r).unwrap();
    for g in old["facts"]["gpus"].as_array_mut().unwrap() {
        g.as_object_mut().unwrap().remove("power_smoothing");
    }
    let back: powerlab_health::HealthReport = serde_json::from_value(old).unwrap();
    assert_eq!(
        back.facts.gpus[0].power_smoothing,
        PowerSmoothing::NotRecorded
    );
}
