#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! The coordinator on the simulated node, under a paused tokio clock: the
//! simulated GPUs, the samplers and the coordinator's waits all run on
//! virtual time, so a campaign of several virtual seconds takes a fraction
//! of a second and always plays out the same way.

use powerlab_campaign::{Plan, expand, parse_str};
use powerlab_core::RunClock;
use powerlab_core::hw::Backend;
use powerlab_rundir::{PhaseKind, RunEvent, RunStatus, ToolInfo};
use powerlab_runner::{Observer, RunOptions, RunResult, StopLatch, StopReason, run_campaign};
use powerlab_sim::{Profile, SimBackend, SimOptions};

const EPOCH_NS: i64 = 1_700_000_000_000_000_000;

/// Three rungs: idle, sustained, then a duty cycle; `limits` is added as is.
fn campaign_text(limits: &str) -> String {
    format!(
        r#"
[campaign]
name = "coord"
gpus = "all"

[defaults]
warmup_s = 1
cooldown_s = 1

{limits}

[[phase]]
kind = "idle"
name = "idle"
duration_s = 2

[[phase]]
kind = "sustained"
name = "sustained"
duration_s = 2

[[phase]]
kind = "duty"
name = "duty"
periods_ms = [200]
duration_s = 2
"#
    )
}

/// Records every event; raises `stop_at`'s reasons when the rung with that
/// id starts.
struct Recorder {
    events: Vec<RunEvent>,
    stop_at: Option<(u32, StopLatch, Vec<StopReason>)>,
}

impl Observer for Recorder {
    fn event(&mut self, event: &RunEvent) {
        if let (RunEvent::RungStarted { rung, .. }, Some((id, latch, reasons))) =
            (event, &self.stop_at)
            && rung.id == *id
        {
            for r in reasons {
                latch.raise(r.clone());
            }
        }
        self.events.push(event.clone());
    }
    fn progress(&mut self, _: i64, _: i64, _: &str) {}
    fn message(&mut self, _: &str) {}
}

struct Ran {
    result: RunResult,
    plan: Plan,
    events: Vec<RunEvent>,
    _results: tempfile::TempDir,
}

async fn run(limits: &str, stop: StopLatch, stop_at: Option<(u32, Vec<StopReason>)>) -> Ran {
    let campaign = parse_str("coord.toml", &campaign_text(limits)).unwrap();
    let plan = expand(&campaign, 2, None).unwrap();
    let clock = RunClock::virtual_at(EPOCH_NS);
    let mut opts = SimOptions::new(Profile::h200(), 2);
    opts.step_us = 1000;
    let node = SimBackend::new(opts, clock).open().unwrap();
    let results = tempfile::tempdir().unwrap();
    let tool = ToolInfo {
        name: "powerlab".into(),
        version: "test".into(),
        git_rev: "test".into(),
    };
    let run_opts = RunOptions::new(results.path().to_path_buf(), tool);
    let mut recorder = Recorder {
        events: Vec::new(),
        stop_at: stop_at.map(|(id, reasons)| (id, stop.clone(), reasons)),
    };
    let result = run_campaign(
        &campaign,
        &plan,
        node,
        clock,
        &run_opts,
        stop,
        &mut recorder,
    )
    .await
    .unwrap();
    let logged: Vec<RunEvent> = std::fs::read_to_string(result.run_dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        logged, recorder.events,
        "the observer saw exactly what events.jsonl holds"
    );
    Ran {
        result,
        plan,
        events: recorder.events,
        _results: results,
    }
}

/// The rung ids of the barrier, start and end events, in the order logged.
fn rung_events(events: &[RunEvent]) -> Vec<(&'static str, u32)> {
    events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Barrier { rung_id, .. } => Some(("barrier", *rung_id)),
            RunEvent::RungStarted { rung, .. } => Some(("started", rung.id)),
            RunEvent::RungEnded { rung_id, .. } => Some(("ended", *rung_id)),
            _ => None,
        })
        .collect()
}

fn run_ended(events: &[RunEvent]) -> (String, Option<String>) {
    match events.last() {
        Some(RunEvent::RunEnded { status, reason, .. }) => (status.clone(), reason.clone()),
        other => panic!("the last event is not run_ended: {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn every_rung_runs_in_order_on_virtual_time() {
    let ran = run("", StopLatch::new(), None).await;
    let ids: Vec<u32> = ran.plan.rungs.iter().map(|r| r.id).collect();
    // The idle baseline before any context, then the three phases.
    assert_eq!(ids.len(), 4);
    assert!(ran.plan.rungs[0].no_context && !ran.plan.rungs[1].no_context);
    assert_eq!(ran.result.status, RunStatus::Complete);
    assert_eq!(ran.result.rungs_completed, 4);
    let expected: Vec<(&str, u32)> = ids
        .iter()
        .flat_map(|&id| [("barrier", id), ("started", id), ("ended", id)])
        .collect();
    assert_eq!(rung_events(&ran.events), expected);
    assert!(matches!(
        ran.events[0],
        RunEvent::RunStarted { rungs: 4, .. }
    ));
    assert_eq!(run_ended(&ran.events), ("complete".into(), None));

    // Each window starts after its barrier, and the run lasted at least
    // every rung's warm-up, window and cooldown: the virtual clock drove it.
    for e in &ran.events {
        if let RunEvent::Barrier {
            ts_ns,
            epoch_ns,
            lead_ns,
            ..
        } = e
        {
            assert_eq!(*epoch_ns, ts_ns + lead_ns);
            assert!(*lead_ns > 0);
        }
    }
    let RunEvent::RunEnded { ts_ns: end_ns, .. } = ran.events.last().unwrap() else {
        unreachable!()
    };
    let nominal: i64 = ran.plan.rungs.iter().map(|r| r.nominal_ns()).sum();
    assert!(
        end_ns - EPOCH_NS >= nominal,
        "{} < {nominal}",
        end_ns - EPOCH_NS
    );
    assert_eq!(ran.result.samplers.len(), 2);
    assert!(ran.result.samplers.iter().all(|s| s.rows > 0));
}

#[tokio::test(start_paused = true)]
async fn a_stop_during_a_rung_ends_the_run_with_the_first_reason() {
    let first = StopReason::Interrupted("operator stop".into());
    let later = StopReason::Failed("a later fault".into());
    let ran = run("", StopLatch::new(), Some((1, vec![first, later]))).await;
    let second = ran.plan.rungs[1].id;
    assert_eq!(second, 1);
    assert_eq!(
        ran.result.status,
        RunStatus::Interrupted {
            reason: "operator stop".into()
        }
    );
    assert_eq!(ran.result.rungs_completed, 1);
    let first_id = ran.plan.rungs[0].id;
    assert_eq!(
        rung_events(&ran.events),
        vec![
            ("barrier", first_id),
            ("started", first_id),
            ("ended", first_id),
            ("barrier", second),
            ("started", second),
        ],
        "the stopped rung never ends and no later rung starts"
    );
    assert_eq!(
        run_ended(&ran.events),
        ("interrupted".into(), Some("operator stop".into()))
    );
}

#[tokio::test(start_paused = true)]
async fn the_node_power_interlock_stops_the_run_in_the_first_loaded_rung() {
    // Two idle GPUs draw far below 1 kW; two under the virus load far above.
    let ran = run("[limits]\nmax_node_power_w = 1000", StopLatch::new(), None).await;
    let (status, reason) = run_ended(&ran.events);
    assert_eq!(status, "failed");
    let reason = reason.unwrap();
    assert!(
        reason.starts_with("interlock max_node_power_w: node power"),
        "{reason}"
    );
    assert_eq!(ran.result.rungs_completed, 2);
    let interlocks = ran
        .events
        .iter()
        .filter(|e| matches!(e, RunEvent::Interlock { .. }))
        .count();
    assert_eq!(interlocks, 1);
    let ended: Vec<u32> = rung_events(&ran.events)
        .into_iter()
        .filter(|(what, _)| *what == "ended")
        .map(|(_, id)| id)
        .collect();
    assert_eq!(
        ended,
        vec![ran.plan.rungs[0].id, ran.plan.rungs[1].id],
        "only the two idle rungs ended"
    );
    assert!(
        !rung_events(&ran.events).contains(&("barrier", ran.plan.rungs[3].id)),
        "no rung after the stopped one begins"
    );
}

#[tokio::test(start_paused = true)]
async fn a_reason_raised_before_the_start_stops_before_the_first_rung() {
    let stop = StopLatch::new();
    stop.raise(StopReason::Interrupted("SIGTERM received".into()));
    let ran = run("", stop, None).await;
    assert_eq!(ran.result.rungs_completed, 0);
    assert!(rung_events(&ran.events).is_empty());
    assert_eq!(
        run_ended(&ran.events),
        ("interrupted".into(), Some("SIGTERM received".into()))
    );
}

/// Issue 31: a duty rung whose plan gives no period ran as a 1000 ms square
/// wave (`unwrap_or(1000.0)`). Such a plan is refused before any load or
/// run directory, naming the rung.
#[tokio::test(start_paused = true)]
async fn a_duty_rung_without_a_period_is_refused_naming_it() {
    let campaign = parse_str("coord.toml", &campaign_text("")).unwrap();
    let mut plan = expand(&campaign, 2, None).unwrap();
    let duty = plan
        .rungs
        .iter_mut()
        .find(|r| r.kind == PhaseKind::Duty)
        .unwrap();
    duty.period_ms = None;
    let label = duty.label.clone();
    let clock = RunClock::virtual_at(EPOCH_NS);
    let node = SimBackend::new(SimOptions::new(Profile::h200(), 2), clock)
        .open()
        .unwrap();
    let results = tempfile::tempdir().unwrap();
    let tool = ToolInfo {
        name: "powerlab".into(),
        version: "test".into(),
        git_rev: "test".into(),
    };
    let opts = RunOptions::new(results.path().to_path_buf(), tool);
    let mut recorder = Recorder {
        events: Vec::new(),
        stop_at: None,
    };
    let out = run_campaign(
        &campaign,
        &plan,
        node,
        clock,
        &opts,
        StopLatch::new(),
        &mut recorder,
    )
    .await;
    let err = match out {
        Ok(r) => panic!("the run went ahead: {:?}", r.status),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains(&label) && err.contains("period"),
        "names the rung and the period: {err}"
    );
    assert!(recorder.events.is_empty(), "nothing ran");
    assert_eq!(std::fs::read_dir(results.path()).unwrap().count(), 0);
}

/// Watches `edges.csv` while the run goes: at each progress report (every
/// second of a wait), the latest achieved edge on disk, with the time.
struct EdgeWatch {
    clock: RunClock,
    dir: Option<std::path::PathBuf>,
    seen: Vec<(i64, Option<i64>)>,
}

impl Observer for EdgeWatch {
    fn event(&mut self, _: &RunEvent) {}
    fn progress(&mut self, _: i64, _: i64, _: &str) {
        let Some(dir) = &self.dir else { return };
        let latest = powerlab_rundir::edges::read_edges(&dir.join("edges.csv"))
            .unwrap()
            .iter()
            .map(|e| e.achieved_ns)
            .max();
        self.seen.push((self.clock.now_ns(), latest));
    }
    fn message(&mut self, m: &str) {
        if let Some(d) = m.strip_prefix("run directory: ") {
            self.dir = Some(d.into());
        }
    }
}

/// Issue 31 (hostile review): a rung's edges reached `edges.csv` only at
/// its end, so a run killed mid-rung lost them. While a window runs, the
/// edges achieved up to a second before are on disk; at the rung's end
/// each edge has one row.
#[tokio::test(start_paused = true)]
async fn a_running_rungs_edges_are_on_disk_within_a_second_and_once_each() {
    let text = campaign_text("").replace(
        "periods_ms = [200]\nduration_s = 2",
        "periods_ms = [200]\nduration_s = 6",
    );
    let campaign = parse_str("coord.toml", &text).unwrap();
    let plan = expand(&campaign, 2, None).unwrap();
    let clock = RunClock::virtual_at(EPOCH_NS);
    let mut sim = SimOptions::new(Profile::h200(), 2);
    sim.step_us = 1000;
    let node = SimBackend::new(sim, clock).open().unwrap();
    let results = tempfile::tempdir().unwrap();
    let tool = ToolInfo {
        name: "powerlab".into(),
        version: "test".into(),
        git_rev: "test".into(),
    };
    let opts = RunOptions::new(results.path().to_path_buf(), tool);
    let mut watch = EdgeWatch {
        clock,
        dir: None,
        seen: Vec::new(),
    };
    let result = run_campaign(
        &campaign,
        &plan,
        node,
        clock,
        &opts,
        StopLatch::new(),
        &mut watch,
    )
    .await
    .unwrap();
    assert_eq!(result.status, RunStatus::Complete);
    let events: Vec<RunEvent> = std::fs::read_to_string(result.run_dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let (duty, from, to) = events
        .iter()
        .find_map(|e| match e {
            RunEvent::RungStarted {
                rung,
                epoch_ns,
                end_ns,
                ..
            } if rung.kind == PhaseKind::Duty => Some((rung.id, *epoch_ns, *end_ns)),
            _ => None,
        })
        .unwrap();
    // Inside the window, from its second second on.
    let inside: Vec<&(i64, Option<i64>)> = watch
        .seen
        .iter()
        .filter(|(t, _)| *t > from + 1_500_000_000 && *t < to)
        .collect();
    assert!(inside.len() >= 3, "{:?}", watch.seen);
    for (t, latest) in inside {
        let lag = latest.map(|l| t - l);
        assert!(
            lag.is_some_and(|l| (0..=1_000_000_000).contains(&l)),
            "{} ms into the window the latest edge on disk is {:?} ms old",
            (t - from) / 1_000_000,
            lag.map(|l| l / 1_000_000)
        );
    }
    let rows = powerlab_rundir::edges::read_edges(&result.run_dir.join("edges.csv")).unwrap();
    let mine: Vec<_> = rows.iter().filter(|r| r.rung_id == duty).collect();
    let unique: std::collections::BTreeSet<(&str, u32)> =
        mine.iter().map(|r| (r.gpu.as_str(), r.index)).collect();
    assert_eq!(unique.len(), mine.len(), "an edge has two rows");
    // 6 s of 200 ms: 30 rises and 30 falls, and the start, per GPU.
    assert!(mine.len() >= 2 * 60, "{} rows", mine.len());
}
