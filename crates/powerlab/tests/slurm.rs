#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Rack runs under real Slurm: a one-machine cluster that
//! `scripts/ci/ci-slurm.sh` starts (munged, slurmctld, slurmd), each rank a
//! simulated node on this machine, started through `srun --mpi=pmix` (the
//! plugin Debian's Open MPI works with, see the script's header). Batch jobs
//! submit the example scripts of `docs/slurm/` so that they cannot rot.
//!
//! Built only with `--features mpi`; they run only where
//! `POWERLAB_SLURM=1` (set by ci-slurm.sh) and say they were skipped
//! elsewhere. With it set, a missing Slurm fails them.
#![cfg(feature = "mpi")]

use crate::rack::{events, node_dirs, nodes_mean_sum, rung, starts, summary};
use crate::util::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Whether the Slurm tests run here (a cluster is up): `POWERLAB_SLURM=1`.
#[allow(clippy::print_stderr)] // the notice that the test is skipped
fn slurm() -> bool {
    if std::env::var("POWERLAB_SLURM").is_ok_and(|v| v == "1") {
        return true;
    }
    eprintln!(
        "skipped: the Slurm tests need a running Slurm cluster; scripts/ci/ci-slurm.sh starts one and sets POWERLAB_SLURM=1"
    );
    false
}

/// The MPI plugin srun uses (ci-slurm.sh says which and why).
fn mpi_plugin() -> String {
    std::env::var("POWERLAB_SLURM_MPI").unwrap_or_else(|_| "pmix".into())
}

/// Slurm's KillWait in the CI cluster (scripts/ci/slurm/slurm.conf.in), s:
/// SIGKILL follows SIGTERM this much later.
const KILL_WAIT_S: i64 = 10;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn doc_script(name: &str) -> PathBuf {
    let p = repo().join("docs/slurm").join(name);
    assert!(p.is_file(), "{} is missing", p.display());
    p
}

/// A Slurm command with Open MPI allowed to run as root (CI containers).
fn slurm_cmd(program: &str) -> Command {
    let mut cmd = Command::new(program);
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    cmd
}

fn output(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| {
        panic!(
            "could not start {cmd:?}: {e} (POWERLAB_SLURM=1 says a Slurm cluster is up: run these tests through scripts/ci/ci-slurm.sh)"
        )
    })
}

fn both(out: &Output) -> String {
    text(&out.stdout) + &text(&out.stderr)
}

/// This host's name as Slurm and MPI see it (the node's label carries it).
fn short_host() -> String {
    let out = output(Command::new("hostname").arg("-s"));
    text(&out.stdout).trim().to_string()
}

/// A results directory with `campaign` in it.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(campaign: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("campaign.toml"), campaign).unwrap();
        Setup { dir }
    }
    fn campaign(&self) -> PathBuf {
        self.dir.path().join("campaign.toml")
    }
    fn runs(&self) -> PathBuf {
        self.dir.path().join("runs")
    }
    fn job_out(&self) -> PathBuf {
        self.dir.path().join("job.out")
    }
    fn job_output(&self) -> String {
        std::fs::read_to_string(self.job_out()).unwrap_or_default()
    }
    /// The rack's run directory (the one with `nodes/`).
    fn rack(&self, said: &str) -> PathBuf {
        run_dirs(&self.runs())
            .into_iter()
            .find(|p| p.join("nodes").is_dir())
            .unwrap_or_else(|| {
                panic!(
                    "no rack run directory; output:\n{said}\njob output:\n{}",
                    self.job_output()
                )
            })
    }
    /// `sbatch` of a `docs/slurm/` script, its settings in the environment.
    fn sbatch(&self, script: &str, options: &[&str], ranks_per_node: usize, args: &str) -> Command {
        let mut cmd = slurm_cmd("sbatch");
        cmd.arg("--parsable")
            .arg(format!("--output={}", self.job_out().display()))
            .args(options)
            .arg(doc_script(script))
            .env("POWERLAB", POWERLAB)
            .env("CAMPAIGN", self.campaign())
            .env("RESULTS", self.runs())
            .env("RANKS_PER_NODE", ranks_per_node.to_string())
            .env("POWERLAB_ARGS", format!("--backend sim --json {args}"));
        cmd
    }
}

/// Every rung on every node: idle, then a 1 s duty swing in phase and staggered.
fn campaign(duty_s: u32) -> String {
    format!(
        "[campaign]\nname = \"slurm\"\nconfirm_node_swing = true\n[defaults]\nwarmup_s = 1\ncooldown_s = 1\n[rack]\nstagger = \"gpu\"\n\
[[phase]]\nkind = \"idle\"\nduration_s = 2\n\
[[phase]]\nkind = \"duty\"\nname = \"swing\"\nperiod_ms = 1000\nduration_s = {duty_s}\nmodes = [\"in_phase\", \"staggered\"]\n"
    )
}

fn manifest(node: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(node.join("manifest.json")).unwrap()).unwrap()
}

fn gpus_of(node: &Path) -> usize {
    manifest(node)["backend"]["gpus"].as_array().unwrap().len()
}

fn label_of(node: &Path) -> String {
    node.file_name().unwrap().to_string_lossy().into_owned()
}

/// The labels under `nodes/` are `n<rank>-<host>`: distinct, one per rank
/// in rank order, each carrying the host Slurm ran it on.
fn labels_are_ranks_on_this_host(rack: &Path, ranks: usize) {
    let host = short_host();
    let labels: Vec<String> = node_dirs(rack).iter().map(|n| label_of(n)).collect();
    let want: Vec<String> = (0..ranks).map(|r| format!("n{r:03}-{host}")).collect();
    assert_eq!(labels, want, "node labels under {}", rack.display());
    let distinct: std::collections::BTreeSet<&String> = labels.iter().collect();
    assert_eq!(distinct.len(), ranks, "{labels:?}");
    // rack.json lists the same nodes by rank.
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(rack.join("rack.json")).unwrap()).unwrap();
    let listed: Vec<&str> = file["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(listed, want, "rack.json");
}

/// A complete rack: every node started every rung at one epoch, the
/// staggered rung spread GPU by GPU over the whole rack, the rack report
/// complete with `gpus` GPUs.
fn complete_rack(rack: &Path, ranks: usize, gpus_per_rank: usize) {
    let nodes = node_dirs(rack);
    assert_eq!(nodes.len(), ranks, "{nodes:?}");
    for n in &nodes {
        assert_eq!(
            manifest(n)["status"]["state"],
            "complete",
            "{}",
            n.display()
        );
        assert_eq!(gpus_of(n), gpus_per_rank, "{}", n.display());
    }
    let all: Vec<_> = nodes.iter().map(|n| starts(n)).collect();
    let epochs = |s: &[(String, i64, Vec<i64>, Option<f64>)]| {
        s.iter()
            .map(|(l, e, _, _)| (l.clone(), *e))
            .collect::<Vec<_>>()
    };
    for (k, s) in all.iter().enumerate() {
        assert_eq!(
            epochs(s),
            epochs(&all[0]),
            "node {k} started at other epochs"
        );
    }
    let total = ranks * gpus_per_rank;
    for (k, s) in all.iter().enumerate() {
        let (_, _, offs, period) = s
            .iter()
            .find(|(l, _, _, _)| l.ends_with("staggered"))
            .unwrap();
        let period_ns = period.unwrap() * 1e6;
        let want: Vec<i64> = (0..gpus_per_rank)
            .map(|i| ((gpus_per_rank * k + i) as f64 / total as f64 * period_ns).round() as i64)
            .collect();
        assert_eq!(offs, &want, "node {k}'s staggered offsets");
    }
    let report = std::fs::read_to_string(rack.join("report/report.md")).unwrap_or_else(|e| {
        panic!("no rack report in {}: {e}", rack.display());
    });
    assert!(
        report.contains(&format!("complete rack run: {ranks} nodes, {total} GPUs")),
        "{report}"
    );
    let rows = summary(rack);
    let node_sum = nodes_mean_sum(&nodes, "swing/p1000ms/in_phase");
    let rack_mean = rung(&rows, "swing/p1000ms/in_phase")["mean_w"]
        .as_f64()
        .unwrap();
    assert!(
        (rack_mean - node_sum).abs() < 0.01 * node_sum,
        "rack mean {rack_mean} vs its nodes' {node_sum}"
    );
}

#[test]
fn a_batch_job_of_the_rack_script_runs_one_rank_per_node() {
    if !slurm() {
        return;
    }
    // docs/slurm/rack.sbatch asks for 4 nodes; this cluster has one, so
    // the 4 ranks (each a simulated 8-GPU node) share it.
    let s = Setup::new(&campaign(8));
    let out = output(
        s.sbatch(
            "rack.sbatch",
            &["--wait", "--nodes=1", "--ntasks-per-node=4"],
            4,
            "",
        )
        .current_dir(s.dir.path()),
    );
    let said = both(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "sbatch --wait: {said}\njob output:\n{}",
        s.job_output()
    );
    let rack = s.rack(&said);
    labels_are_ranks_on_this_host(&rack, 4);
    complete_rack(&rack, 4, 8);
    // Rank 0 collated the rack inside the job; a later collate agrees.
    let before = std::fs::read(rack.join("report/summary.csv")).unwrap();
    assert_exit(&powerlab_output(["collate", rack.to_str().unwrap()]), 0);
    assert_eq!(
        std::fs::read(rack.join("report/summary.csv")).unwrap(),
        before
    );
}

#[test]
fn a_direct_srun_step_runs_one_rank_per_gpu() {
    if !slurm() {
        return;
    }
    // srun outside any allocation: Slurm allocates and runs one step of 8
    // ranks, each driving one simulated GPU.
    let s = Setup::new(&campaign(8));
    let mpi = format!("--mpi={}", mpi_plugin());
    let out = output(
        slurm_cmd("srun")
            .args([mpi.as_str(), "--kill-on-bad-exit=1", "-N", "1", "-n", "8"])
            .arg(POWERLAB)
            .arg("run")
            .arg(s.campaign())
            .args(["--backend", "sim", "--json", "--sim-gpus", "1", "--results"])
            .arg(s.runs()),
    );
    let said = both(&out);
    assert_eq!(out.status.code(), Some(0), "srun: {said}");
    let rack = s.rack(&said);
    labels_are_ranks_on_this_host(&rack, 8);
    complete_rack(&rack, 8, 1);
}

#[test]
fn the_node_script_runs_two_ranks_of_four_gpus() {
    if !slurm() {
        return;
    }
    let s = Setup::new(&campaign(8));
    let out = output(
        s.sbatch("node-8gpu.sbatch", &["--wait"], 2, "--sim-gpus 4")
            .current_dir(s.dir.path()),
    );
    let said = both(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "sbatch --wait: {said}\njob output:\n{}",
        s.job_output()
    );
    let rack = s.rack(&said);
    labels_are_ranks_on_this_host(&rack, 2);
    complete_rack(&rack, 2, 4);
}

/// Every `SLURM_*`/`PMI*` variable of each task of a step, by rank.
fn step_envs(dir: &Path, tag: &str) -> Vec<HashMap<String, String>> {
    let mut files: Vec<(usize, PathBuf)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let rank = name.strip_prefix(&format!("{tag}."))?.parse().ok()?;
            Some((rank, e.path()))
        })
        .collect();
    files.sort();
    files
        .iter()
        .map(|(_, p)| {
            std::fs::read_to_string(p)
                .unwrap()
                .split('\0')
                .filter_map(|kv| kv.split_once('='))
                .filter(|(k, _)| k.starts_with("SLURM") || k.starts_with("PMI"))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn each_rank_gets_its_share_of_an_8_gpu_node_from_real_slurm_variables() {
    if !slurm() {
        return;
    }
    // A job of 8 tasks per node running steps of 8 ranks and of 2: each
    // step's ranks must split the node's 8 GPUs by the step's own layout,
    // not the job's --ntasks-per-node (which every step inherits).
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let mpi = mpi_plugin();
    let script = format!(
        "#!/bin/sh\nset -e\n\
srun --mpi={mpi} -n 8 sh -c 'env -0 > {d}/n8.$SLURM_PROCID'\n\
srun --mpi={mpi} -n 2 sh -c 'env -0 > {d}/n2.$SLURM_PROCID'\n"
    );
    std::fs::write(dir.path().join("env.sbatch"), script).unwrap();
    let out = output(
        slurm_cmd("sbatch")
            .args(["--wait", "--nodes=1", "--ntasks-per-node=8"])
            .arg(format!("--output={d}/job.out"))
            .arg(dir.path().join("env.sbatch")),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        both(&out),
        std::fs::read_to_string(dir.path().join("job.out")).unwrap_or_default()
    );
    use powerlab_rack::launcher::{Binding, binding, detect};
    for (tag, ranks, want) in [
        (
            "n8",
            8,
            (0..8).map(|r| r.to_string()).collect::<Vec<String>>(),
        ),
        ("n2", 2, vec!["0,1,2,3".to_string(), "4,5,6,7".to_string()]),
    ] {
        let envs = step_envs(dir.path(), tag);
        assert_eq!(
            envs.len(),
            ranks,
            "{tag}: {} ranks wrote their environment",
            envs.len()
        );
        let mut got = Vec::new();
        for (rank, env) in envs.iter().enumerate() {
            let get = |k: &str| env.get(k).cloned();
            assert_eq!(
                get("SLURM_NTASKS_PER_NODE").as_deref(),
                Some("8"),
                "{tag}: {env:?}"
            );
            let launch =
                detect(get).unwrap_or_else(|| panic!("{tag} rank {rank}: no launch: {env:?}"));
            assert_eq!(launch.world_size, ranks, "{tag}: {launch:?}");
            match binding(get, 8).unwrap() {
                Binding::Split { devices, place } => {
                    assert_eq!((place.rank, place.size), (rank, ranks), "{tag}: {env:?}");
                    got.push(devices);
                }
                other => panic!("{tag} rank {rank}: {other:?} from {env:?}"),
            }
        }
        assert_eq!(got, want, "{tag}: each rank's CUDA_VISIBLE_DEVICES");
    }
}

/// The job's state as `scontrol` shows it (None once it left the controller).
fn job_state(job: &str) -> Option<String> {
    let out = output(slurm_cmd("scontrol").args(["show", "job", "-o", job]));
    let t = text(&out.stdout);
    t.split_whitespace()
        .find_map(|w| w.strip_prefix("JobState="))
        .map(String::from)
}

/// Waits until the job has ended; its final state.
fn wait_job_end(job: &str, limit: Duration) -> String {
    let t0 = Instant::now();
    let mut last = None;
    loop {
        match job_state(job) {
            Some(st)
                if ![
                    "PENDING",
                    "CONFIGURING",
                    "RUNNING",
                    "COMPLETING",
                    "SUSPENDED",
                ]
                .contains(&st.as_str()) =>
            {
                return st;
            }
            None => panic!("job {job} left the controller unseen (last state {last:?})"),
            st => last = st,
        }
        assert!(
            t0.elapsed() < limit,
            "job {job} still {last:?} after {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Submits the node script (2 ranks of 4 simulated GPUs in real time) and
/// waits until every node runs the duty rung; the job id and rack dir.
fn start_long_job(s: &Setup, options: &[&str]) -> (String, PathBuf) {
    let out = output(
        s.sbatch(
            "node-8gpu.sbatch",
            options,
            2,
            "--sim-gpus 4 --sim-pace realtime",
        )
        .current_dir(s.dir.path()),
    );
    assert_eq!(out.status.code(), Some(0), "sbatch: {}", both(&out));
    let job = text(&out.stdout)
        .trim()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let t0 = Instant::now();
    loop {
        let rack = run_dirs(&s.runs())
            .into_iter()
            .find(|p| p.join("nodes").is_dir());
        if let Some(rack) = rack {
            let nodes = node_dirs(&rack);
            let in_duty = |n: &PathBuf| {
                n.join("events.jsonl").is_file()
                    && starts(n).iter().any(|(l, _, _, _)| l.starts_with("swing/"))
            };
            if nodes.len() == 2 && nodes.iter().all(in_duty) {
                return (job, rack);
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "job {job}: the nodes never reached the duty rung; job output:\n{}",
            s.job_output()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

/// What a job's SIGTERM mid-rung must leave: every rank stopped its load
/// in the duty rung before Slurm's SIGKILL (`term_ns` + KillWait), recorded
/// why (the job named), flushed every sample its samplers took, and the
/// rack collates as incomplete, naming every node.
fn stopped_mid_rung(rack: &Path, job: &str, term_ns: i64) {
    let nodes = node_dirs(rack);
    assert_eq!(nodes.len(), 2, "{nodes:?}");
    for n in &nodes {
        let m = manifest(n);
        let reason = m["status"]["reason"].as_str().unwrap_or_default();
        assert_eq!(
            m["status"]["state"],
            "interrupted",
            "{}: not stopped cleanly (killed before it could record its end?): {m}",
            n.display()
        );
        assert!(
            reason.contains("SIGTERM received")
                && reason.contains(&format!("under Slurm, job {job}"))
                && reason.contains("time limit"),
            "{}: {reason}",
            n.display()
        );
        let ev = events(n);
        let last = starts(n).pop().unwrap();
        assert!(
            last.0.starts_with("swing/p1000ms/"),
            "{}: stopped in {}, not the duty rung",
            n.display(),
            last.0
        );
        let started = ev.iter().filter(|e| e["event"] == "rung_started").count();
        let ended = ev.iter().filter(|e| e["event"] == "rung_ended").count();
        assert_eq!(
            ended + 1,
            started,
            "{}: the stopped rung did not end",
            n.display()
        );
        assert!(
            ev.iter()
                .any(|e| e["event"] == "note" && e["topic"] == "stopped_in_rung"),
            "{}: no record of the rung it stopped in",
            n.display()
        );
        let end_ns = ev
            .iter()
            .find(|e| e["event"] == "run_ended")
            .and_then(|e| e["ts_ns"].as_i64())
            .unwrap_or_else(|| panic!("{}: no run_ended", n.display()));
        let after_s = (end_ns - term_ns) as f64 / 1e9;
        assert!(
            after_s < KILL_WAIT_S as f64,
            "{}: ended {after_s:.1} s after SIGTERM, past KillWait",
            n.display()
        );
        // Every row each sampler wrote is in its raw file, up to the stop.
        let samplers = ev
            .iter()
            .find(|e| e["event"] == "note" && e["topic"] == "samplers")
            .unwrap_or_else(|| panic!("{}: no sampler record", n.display()));
        let stats = samplers["detail"].as_array().unwrap();
        assert_eq!(stats.len(), 4, "{samplers}");
        for st in stats {
            let gpu = st["gpu"].as_str().unwrap();
            let raw = std::fs::read_to_string(n.join("raw").join(format!("{gpu}.csv"))).unwrap();
            let rows: Vec<&str> = raw.lines().skip(1).collect();
            assert_eq!(
                rows.len() as u64,
                st["rows"].as_u64().unwrap(),
                "{}: {gpu}'s raw file lost rows",
                n.display()
            );
            let last_ts: i64 = rows
                .last()
                .and_then(|r| r.split(',').next())
                .and_then(|t| t.parse().ok())
                .unwrap();
            assert!(
                last_ts > term_ns - 1_000_000_000,
                "{}: {gpu}'s samples stop {:.1} s before the SIGTERM",
                n.display(),
                (term_ns - last_ts) as f64 / 1e9
            );
        }
    }
    // The rack collates afterwards, marked incomplete, naming each node.
    let out = powerlab_output(["collate", rack.to_str().unwrap()]);
    assert_exit(&out, 0);
    let report = std::fs::read_to_string(rack.join("report/report.md")).unwrap();
    let head = report.lines().next().unwrap_or_default();
    assert!(
        head.starts_with("# ⚠ RACK RUN DID NOT COMPLETE on 2 of 2 nodes"),
        "{head}"
    );
    for n in &nodes {
        assert!(
            head.contains(&format!("{}: interrupted: SIGTERM received", label_of(n))),
            "{} is not named: {head}",
            label_of(n)
        );
    }
    let rows = summary(rack);
    assert!(
        rows.iter()
            .any(|r| r["label"] == "idle-0" && r["mean_w"].is_f64()),
        "the rung before the stop is summarised: {rows:?}"
    );
    // The stopped rung's rack row carries its nodes' marks of an incomplete
    // window, naming them (as a rack stopped under mpirun does).
    let stopped = starts(&nodes[0]).pop().unwrap().0;
    let all: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(rack.join("report/summary.json")).unwrap())
            .unwrap();
    let row = all["rungs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["label"] == stopped.as_str())
        .unwrap_or_else(|| panic!("no stopped rung {stopped} in the rack summary: {all}"));
    let inc = row["incomplete"].as_str().unwrap_or("");
    for n in &nodes {
        assert!(
            inc.contains(&format!("node {}", label_of(n))) && inc.contains("INCOMPLETE"),
            "{stopped}: {row}"
        );
    }
}

#[test]
fn scancel_mid_rung_stops_every_rank_with_its_samples_flushed() {
    if !slurm() {
        return;
    }
    let s = Setup::new(&campaign(60));
    let (job, rack) = start_long_job(&s, &[]);
    std::thread::sleep(Duration::from_millis(1500));
    let term_ns = now_ns();
    let out = output(slurm_cmd("scancel").arg(&job));
    assert_eq!(out.status.code(), Some(0), "scancel: {}", both(&out));
    let state = wait_job_end(&job, Duration::from_secs(KILL_WAIT_S as u64 + 20));
    assert_eq!(state, "CANCELLED", "job output:\n{}", s.job_output());
    stopped_mid_rung(&rack, &job, term_ns);
}

#[test]
fn a_job_past_its_time_limit_stops_every_rank_with_its_samples_flushed() {
    if !slurm() {
        return;
    }
    // --time=1: the shortest limit Slurm takes; the campaign is longer.
    let s = Setup::new(&campaign(120));
    let (job, rack) = start_long_job(&s, &["--time=1"]);
    let state = wait_job_end(&job, Duration::from_secs(150));
    assert_eq!(state, "TIMEOUT", "job output:\n{}", s.job_output());
    assert!(
        s.job_output().contains("DUE TO TIME LIMIT"),
        "{}",
        s.job_output()
    );
    // When Slurm sent SIGTERM: the first rank's record of it.
    let term_ns = node_dirs(&rack)
        .iter()
        .filter_map(|n| {
            events(n)
                .iter()
                .find(|e| e["event"] == "note" && e["topic"] == "stopped_in_rung")
                .and_then(|e| e["ts_ns"].as_i64())
        })
        .min()
        .expect("a rank recorded the rung it stopped in");
    let started_ns = manifest(&node_dirs(&rack)[0])["started_ns"]
        .as_i64()
        .expect("the manifest says when the run started");
    let ran_s = (term_ns - started_ns) as f64 / 1e9;
    assert!(
        (40.0..100.0).contains(&ran_s),
        "stopped {ran_s:.0} s into the run by a 1-minute limit"
    );
    stopped_mid_rung(&rack, &job, term_ns);
}

/// docs/slurm.md shows both batch scripts: its copies ask Slurm for the
/// same (`#SBATCH` lines) and run the same `srun` as the scripts CI submits.
#[test]
fn the_slurm_doc_shows_the_batch_scripts_ci_submits() {
    let doc = std::fs::read_to_string(repo().join("docs/slurm.md")).unwrap();
    let blocks: Vec<&str> = doc
        .split("```bash\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .collect();
    for name in ["node-8gpu.sbatch", "rack.sbatch"] {
        let script = std::fs::read_to_string(repo().join("docs/slurm").join(name)).unwrap();
        let want = (sbatch_lines(&script), srun_of(&script));
        assert!(
            blocks.iter().any(|b| (sbatch_lines(b), srun_of(b)) == want),
            "docs/slurm.md has no copy of docs/slurm/{name} asking {:?} and running {:?}",
            want.0,
            want.1
        );
    }
}

fn sbatch_lines(s: &str) -> Vec<&str> {
    s.lines().filter(|l| l.starts_with("#SBATCH")).collect()
}

/// The `exec srun …` command, continuation lines joined, spaces collapsed.
fn srun_of(s: &str) -> String {
    let from = s.find("exec srun").expect("an `exec srun` line");
    let mut cmd = String::new();
    for line in s[from..].lines() {
        let l = line.trim();
        cmd.push_str(l.trim_end_matches('\\'));
        cmd.push(' ');
        if !l.ends_with('\\') {
            break;
        }
    }
    cmd.split_whitespace().collect::<Vec<_>>().join(" ")
}
