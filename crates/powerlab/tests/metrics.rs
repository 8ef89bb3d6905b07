#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr
)]
// a test that unwraps reports its failure by panicking; it prints the scrapes compared and the worst error
//! `run --metrics-listen`: a simulated run in real time scraped at 10 Hz
//! (and, under scripts/ci/ci-prometheus.sh, by a real Prometheus), checked
//! against the run's own raw files and events.

use crate::util::{campaign, powerlab, run_dirs, text};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A short campaign: a sustained rung and a 200 ms square wave.
const BODY: &str = "[[phase]]\nkind = \"sustained\"\nname = \"s\"\nduration_s = 1\n\
[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiod_ms = 200\nduration_s = 2\n";

/// The node curve's hold of a buffered reading (crates/collate/src/curve.rs).
const HOLD_NS: i64 = 60_000_000;

/// One sample line of a scrape.
#[derive(Debug, Clone)]
struct Series {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Parses the text exposition format strictly: every line is a `# HELP`,
/// a `# TYPE` (gauge or counter, before its samples) or a sample of the
/// family last typed.
fn parse(body: &str) -> Vec<Series> {
    let mut out = Vec::new();
    let mut typed: Option<String> = None;
    for line in body.lines().filter(|l| !l.is_empty()) {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            assert!(
                rest.split_once(' ').is_some(),
                "a HELP without text: {line}"
            );
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, ty) = rest.split_once(' ').expect(line);
            assert!(matches!(ty, "gauge" | "counter"), "type {ty}: {line}");
            assert!(ty != "counter" || name.ends_with("_total"), "{line}");
            typed = Some(name.to_string());
            continue;
        }
        assert!(!line.starts_with('#'), "unknown comment: {line}");
        let (head, value) = line.rsplit_once(' ').expect(line);
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("value of {line}"));
        let (name, labels) = match head.split_once('{') {
            Some((n, rest)) => {
                let inner = rest.strip_suffix('}').expect(line);
                let mut labels = BTreeMap::new();
                for pair in inner.split("\",").filter(|p| !p.is_empty()) {
                    let (k, v) = pair.split_once("=\"").expect(line);
                    labels.insert(k.to_string(), v.trim_end_matches('"').to_string());
                }
                (n.to_string(), labels)
            }
            None => (head.to_string(), BTreeMap::new()),
        };
        assert!(
            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "{line}"
        );
        assert_eq!(typed.as_deref(), Some(name.as_str()), "untyped: {line}");
        out.push(Series {
            name,
            labels,
            value,
        });
    }
    out
}

fn find<'a>(s: &'a [Series], name: &str, labels: &[(&str, &str)]) -> Vec<&'a Series> {
    s.iter()
        .filter(|x| {
            x.name == name
                && labels
                    .iter()
                    .all(|(k, v)| x.labels.get(*k).map(String::as_str) == Some(*v))
        })
        .collect()
}

fn one(s: &[Series], name: &str, labels: &[(&str, &str)]) -> f64 {
    let f = find(s, name, labels);
    assert_eq!(f.len(), 1, "{name}{labels:?}: {f:?}");
    f[0].value
}

/// `GET path` over HTTP/1.0; the body of a 200 answer.
fn http_get(addr: SocketAddr, path: &str) -> Option<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.")
        .then(|| head.split(' ').nth(1) == Some("200"))
        .filter(|ok| *ok)
        .map(|_| body.to_string())
}

/// A free loopback port (free when asked; another process may take it).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A simulated run in real time with its metrics endpoint.
struct LiveRun {
    child: Reaped,
    addr: SocketAddr,
    stderr: Arc<Mutex<String>>,
    results: tempfile::TempDir,
}

impl LiveRun {
    fn start(body: &str, linger_s: &str) -> LiveRun {
        Self::start_with(body, linger_s, &["--sim-gpus", "2", "--no-collate"])
    }

    fn start_with(body: &str, linger_s: &str, more: &[&str]) -> LiveRun {
        let results = tempfile::tempdir().unwrap();
        let file = results.path().join("campaign.toml");
        std::fs::write(&file, campaign(body)).unwrap();
        let root = results.path().join("runs");
        let mut child = powerlab()
            .args(["run", file.to_str().unwrap(), "--backend", "sim"])
            .args(["--results", root.to_str().unwrap()])
            .args(["--sim-pace", "realtime"])
            .args(more)
            .args(["--metrics-listen", "127.0.0.1:0"])
            .args(["--metrics-linger-s", linger_s])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let pipe = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("metrics: serving http://") {
                    let _ = tx.send(url.trim_end_matches("/metrics").to_string());
                }
                sink.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| {
                panic!(
                    "no `metrics: serving` line; stderr:\n{}",
                    stderr.lock().unwrap()
                )
            });
        LiveRun {
            child: Reaped(child),
            addr: addr.parse().unwrap(),
            stderr,
            results,
        }
    }

    /// Sends `signal` (`-TERM`, …) and waits at most `limit` for the end:
    /// its status and stderr.
    fn signal_and_wait(&mut self, signal: &str, limit: Duration) -> (ExitStatus, String) {
        let sent = Instant::now();
        let killed = std::process::Command::new("kill")
            .args([signal, &self.child.0.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = loop {
            if let Some(s) = self.child.0.try_wait().unwrap() {
                break s;
            }
            assert!(
                sent.elapsed() < limit,
                "{signal}: still running {limit:?} after it (lingering?); stderr:\n{}",
                self.stderr.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        // The reader thread has the last lines once the pipe closes.
        std::thread::sleep(Duration::from_millis(100));
        let err = self.stderr.lock().unwrap().clone();
        (status, err)
    }

    /// Waits for the end; the run directory.
    fn wait(mut self) -> (PathBuf, tempfile::TempDir) {
        let status = self.child.0.wait().unwrap();
        // The reader thread has the last lines once the pipe closes.
        std::thread::sleep(Duration::from_millis(100));
        let err = self.stderr.lock().unwrap().clone();
        assert!(status.success(), "{status}; stderr:\n{err}");
        let dir = run_dirs(&self.results.path().join("runs"))
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("no run directory; stderr:\n{err}"));
        (dir, self.results)
    }
}

/// A child process killed when dropped: a failed test leaves no run
/// behind (one may linger for minutes).
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One GPU's raw file, as the tests need it.
struct GpuRaw {
    key: String,
    uuid: String,
    index: String,
    model: String,
    /// Buffered readings (ts ns, W), in file order.
    buffered: Vec<(i64, f64)>,
    /// Rows per instrument.
    rows: BTreeMap<String, u64>,
}

fn read_raw(dir: &Path) -> Vec<GpuRaw> {
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    manifest["backend"]["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let key = g["key"].as_str().unwrap().to_string();
            let text = std::fs::read_to_string(dir.join(format!("raw/{key}.csv"))).unwrap();
            let mut buffered = Vec::new();
            let mut rows = BTreeMap::new();
            for line in text.lines().skip(1).filter(|l| !l.starts_with('#')) {
                let f: Vec<&str> = line.split(',').collect();
                *rows.entry(f[3].to_string()).or_insert(0) += 1;
                if f[3] == "buffered_w" {
                    buffered.push((f[0].parse().unwrap(), f[4].parse().unwrap()));
                }
            }
            GpuRaw {
                key,
                uuid: g["uuid"].as_str().unwrap().to_string(),
                index: g["nvml_index"].to_string(),
                model: g["name"].as_str().unwrap().to_string(),
                buffered,
                rows,
            }
        })
        .collect()
}

/// The node curve from the raw files at `t` (Unix seconds): each GPU's
/// latest buffered reading at or before it (within the float's rounding
/// of a ns timestamp), held at most `HOLD_NS`.
fn node_at(raw: &[GpuRaw], t_s: f64) -> Option<f64> {
    let t = (t_s * 1e9).round() as i64 + 1_000;
    raw.iter()
        .map(|g| {
            g.buffered
                .iter()
                .rev()
                .find(|(ts, _)| *ts <= t)
                .filter(|(ts, _)| t - ts <= HOLD_NS + 2_000)
                .map(|r| r.1)
        })
        .sum()
}

fn events(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The rung ids in the order their windows started.
fn rung_sequence(ev: &[serde_json::Value]) -> Vec<u64> {
    ev.iter()
        .filter(|e| e["event"] == "rung_started")
        .map(|e| e["rung"]["id"].as_u64().unwrap())
        .collect()
}

/// The sampler's own figures of a GPU (the `samplers` note).
fn sampler_stats<'a>(ev: &'a [serde_json::Value], key: &str) -> &'a serde_json::Value {
    let note = ev
        .iter()
        .find(|e| e["event"] == "note" && e["topic"] == "samplers")
        .expect("samplers note");
    note["detail"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["gpu"] == key)
        .unwrap()
}

/// Every `powerlab_…` name a text mentions.
fn names_in(text: &str) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("powerlab_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        out.insert(tail[..end].to_string());
        rest = &tail[end..];
    }
    out
}

fn repo_file(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn a_run_scraped_at_10_hz_serves_what_its_raw_files_hold() {
    let run = LiveRun::start(BODY, "1.5");
    let addr = run.addr;
    let done = Arc::new(AtomicBool::new(false));
    let stop = Arc::clone(&done);
    let scraper = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut next = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            if let Some(body) = http_get(addr, "/metrics") {
                got.push(body);
            }
            next += Duration::from_millis(100);
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
        }
        got
    });
    let (dir, _results) = run.wait();
    done.store(true, Ordering::Relaxed);
    let bodies = scraper.join().unwrap();
    let scrapes: Vec<Vec<Series>> = bodies.iter().map(|b| parse(b)).collect();
    assert!(scrapes.len() >= 30, "{} scrapes", scrapes.len());

    let raw = read_raw(&dir);
    let ev = events(&dir);
    // Node power: every scrape's value against the raw files' sum at its instant.
    let (mut compared, mut worst) = (0, 0.0f64);
    for s in &scrapes {
        let (w, t) = match (
            find(s, "powerlab_node_power_watts", &[]).first(),
            find(s, "powerlab_node_power_timestamp_seconds", &[]).first(),
        ) {
            (Some(w), Some(t)) => (w.value, t.value),
            (None, None) => continue,
            other => panic!("node power without its instant: {other:?}"),
        };
        let expect = node_at(&raw, t).unwrap_or_else(|| panic!("no raw node value at {t}"));
        let err = (w - expect).abs() / expect.abs().max(1.0);
        assert!(
            err <= 0.01,
            "node power {w} W at {t}: raw files give {expect} W"
        );
        worst = worst.max(err);
        compared += 1;
    }
    assert!(compared >= 20, "{compared} node values compared");
    println!(
        "metrics: {} scrapes, {compared} node values compared, worst relative error {worst:.2e}",
        scrapes.len()
    );

    // The final scrape: every count is the raw files' and the samplers' own.
    let last = scrapes
        .iter()
        .rev()
        .find(|s| {
            find(s, "powerlab_run_finished", &[])
                .first()
                .is_some_and(|x| x.value == 1.0)
        })
        .expect("a scrape after the run ended (--metrics-linger-s)");
    for g in &raw {
        let id = [("gpu", g.index.as_str()), ("UUID", g.uuid.as_str())];
        for (inst, col) in [
            ("buffered", "buffered_w"),
            ("instant", "instant_w"),
            ("average", "average_w"),
        ] {
            let lab = [id[0], id[1], ("instrument", inst)];
            let rows = g.rows.get(col).copied().unwrap_or(0);
            assert!(rows > 0, "{}: no {col} rows", g.key);
            assert_eq!(
                one(last, "powerlab_samples_total", &lab),
                rows as f64,
                "{} {inst}",
                g.key
            );
        }
        let stats = sampler_stats(&ev, &g.key);
        let buffered = [id[0], id[1], ("instrument", "buffered")];
        assert_eq!(
            stats["buffered_samples"].as_u64(),
            Some(g.buffered.len() as u64)
        );
        // Captured whole: no gap by the collator's rule, the same largest
        // spacing as the sampler's own figure.
        assert_eq!(
            one(last, "powerlab_sample_gaps_total", &buffered),
            0.0,
            "{}",
            g.key
        );
        let max_gap_s = stats["max_buffered_gap_ns"].as_f64().unwrap() / 1e9;
        assert!((one(last, "powerlab_sample_gap_max_seconds", &buffered) - max_gap_s).abs() < 1e-9);
        assert!(one(last, "powerlab_sampler_drains_total", &id) >= 1.0);
        // The latest readings are the raw files' last (written there to
        // a few decimals).
        let full = [
            id[0],
            id[1],
            ("Hostname", "sim-node-0"),
            ("modelName", g.model.as_str()),
            ("instrument", "buffered"),
        ];
        let latest = one(last, "powerlab_gpu_power_watts", &full);
        let raw_last = g.buffered.last().unwrap().1;
        assert!(
            (latest - raw_last).abs() < 0.01,
            "{}: served {latest} W, raw {raw_last} W",
            g.key
        );
    }
    let ended = ev.iter().filter(|e| e["event"] == "rung_ended").count();
    assert_eq!(
        one(last, "powerlab_rungs_completed_total", &[]),
        ended as f64
    );
    assert_eq!(one(last, "powerlab_run_progress_ratio", &[]), 1.0);
    assert_eq!(one(last, "powerlab_stop_requested", &[]), 0.0);
    assert_eq!(find(last, "powerlab_interlock_tripped", &[]).len(), 4);
    assert!(
        find(last, "powerlab_interlock_tripped", &[])
            .iter()
            .all(|s| s.value == 0.0)
    );
    assert!(
        find(last, "powerlab_rung_info", &[]).is_empty(),
        "no rung after the run"
    );

    // The rungs seen, in order, are the run's.
    let mut seen: Vec<u64> = Vec::new();
    for s in &scrapes {
        for r in find(s, "powerlab_rung_info", &[]) {
            let keys: Vec<&str> = r.labels.keys().map(String::as_str).collect();
            assert_eq!(
                keys,
                ["kind", "label", "mode", "phase", "repeat", "rung_id"]
            );
            let id: u64 = r.labels["rung_id"].parse().unwrap();
            if seen.last() != Some(&id) {
                seen.push(id);
            }
            let p = one(s, "powerlab_rung_progress_ratio", &[]);
            assert!((0.0..=1.0).contains(&p));
        }
    }
    assert_eq!(seen, rung_sequence(&ev), "rungs seen by the scraper");

    // Every name served is documented, and every name the docs and the
    // dashboard use is served.
    let served: std::collections::BTreeSet<String> =
        scrapes.iter().flatten().map(|s| s.name.clone()).collect();
    let docs = repo_file("docs/metrics.md");
    let dashboard = repo_file("docs/grafana/powerlab.json");
    let _: serde_json::Value = serde_json::from_str(&dashboard).expect("the dashboard is JSON");
    for n in &served {
        assert!(
            docs.contains(n.as_str()),
            "{n} is served but not in docs/metrics.md"
        );
    }
    for n in names_in(&docs).into_iter().chain(names_in(&dashboard)) {
        assert!(
            served.contains(&n),
            "{n} is named in the docs or dashboard but never served"
        );
    }
    // The address is in the run's events.
    let note = ev
        .iter()
        .find(|e| e["event"] == "note" && e["topic"] == "metrics")
        .expect("metrics note");
    assert_eq!(note["detail"]["listen"], addr.to_string());
}

/// A short sustained rung: the run is over in about a second.
const SHORT: &str = "[[phase]]\nkind = \"sustained\"\nname = \"s\"\nduration_s = 1\n";

/// Waits until the run's stderr holds `what` (up to 30 s).
fn wait_for_line(run: &LiveRun, what: &str) {
    let t = Instant::now();
    while !run.stderr.lock().unwrap().contains(what) {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "no `{what}` on stderr:\n{}",
            run.stderr.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_signal_ends_the_linger_at_once_whatever_the_clients_do() {
    for (signal, code) in [("-INT", 130), ("-TERM", 143)] {
        let mut run = LiveRun::start(SHORT, "600");
        wait_for_line(&run, "serving the final values");
        // A client that sent half a request and one that never reads.
        let mut half = TcpStream::connect(run.addr).unwrap();
        write!(half, "GET /metrics HTTP/1.1\r\nHo").unwrap();
        let mut mute = TcpStream::connect(run.addr).unwrap();
        write!(mute, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert!(
            http_get(run.addr, "/metrics").is_some(),
            "a scrape while lingering"
        );
        let (status, err) = run.signal_and_wait(signal, Duration::from_secs(5));
        assert_eq!(
            status.code(),
            Some(code),
            "{signal}: {status}; stderr:\n{err}"
        );
        assert!(err.contains("stopped serving early"), "{err}");
        // The run itself had ended well: its directory is complete.
        let dir = run_dirs(&run.results.path().join("runs"))
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("no run directory; stderr:\n{err}"));
        assert!(
            !read_raw(&dir).is_empty(),
            "no raw samples in {}",
            dir.display()
        );
    }
}

#[test]
fn a_signal_between_the_run_and_the_linger_is_not_lost() {
    // Eight GPUs and the collation: the signal lands after the run ended,
    // while the report is made, before the linger starts.
    let mut run = LiveRun::start_with(SHORT, "600", &["--sim-gpus", "8"]);
    let t = Instant::now();
    let ended = loop {
        let dirs = run_dirs(&run.results.path().join("runs"));
        let ended = dirs.first().is_some_and(|d| {
            std::fs::read_to_string(d.join("events.jsonl"))
                .is_ok_and(|e| e.contains("\"run_ended\""))
        });
        if ended {
            break true;
        }
        if t.elapsed() > Duration::from_secs(60) || run.child.0.try_wait().unwrap().is_some() {
            break false;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(
        ended,
        "no run_ended; stderr:\n{}",
        run.stderr.lock().unwrap()
    );
    let (status, err) = run.signal_and_wait("-TERM", Duration::from_secs(60));
    assert_eq!(status.code(), Some(143), "{status}; stderr:\n{err}");
    assert!(
        !err.contains("serving the final values"),
        "it lingered:\n{err}"
    );
}

#[test]
fn a_taken_port_refuses_the_run_before_anything_is_made() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("c.toml");
    std::fs::write(&file, campaign(BODY)).unwrap();
    let root = tmp.path().join("runs");
    let out = powerlab()
        .args(["run", file.to_str().unwrap(), "--backend", "sim"])
        .args([
            "--results",
            root.to_str().unwrap(),
            "--metrics-listen",
            &addr,
        ])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("cannot listen on {addr}")), "{err}");
    assert!(err.contains("no load was started"), "{err}");
    assert!(run_dirs(&root).is_empty(), "a run directory was made");
    // A value that is no address is a usage error naming what is allowed.
    let out = powerlab()
        .args([
            "run",
            file.to_str().unwrap(),
            "--backend",
            "sim",
            "--metrics-listen",
            "localhost:9464",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("allowed: PORT"),
        "{}",
        text(&out.stderr)
    );
}

/// Percent-encodes a query parameter.
fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A PromQL query's result through Prometheus's HTTP API.
fn prom_query(addr: SocketAddr, q: &str) -> Vec<serde_json::Value> {
    let body = http_get(addr, &format!("/api/v1/query?query={}", encode(q)))
        .unwrap_or_else(|| panic!("Prometheus did not answer {q}"));
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["status"], "success", "{body}");
    v["data"]["result"].as_array().unwrap().clone()
}

/// A range vector's samples: (Prometheus time s, value).
fn points(series: &serde_json::Value) -> Vec<(f64, f64)> {
    series["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p[0].as_f64().unwrap(),
                p[1].as_str().unwrap().parse().unwrap(),
            )
        })
        .collect()
}

/// Under scripts/ci/ci-prometheus.sh: a real Prometheus scrapes a run;
/// the series it recorded are checked against the run's raw files.
#[test]
#[ignore = "needs Prometheus: scripts/ci/ci-prometheus.sh (POWERLAB_PROMETHEUS names its binary)"]
fn prometheus_scrapes_a_simulated_run() {
    let bin = std::env::var("POWERLAB_PROMETHEUS").expect(
        "POWERLAB_PROMETHEUS must name the prometheus binary (scripts/ci/ci-prometheus.sh sets it)",
    );
    assert!(
        Path::new(&bin).is_file(),
        "POWERLAB_PROMETHEUS={bin}: no such file"
    );
    let body = "[[phase]]\nkind = \"sustained\"\nname = \"s\"\nduration_s = 2\n\
[[phase]]\nkind = \"duty\"\nname = \"d\"\nperiod_ms = 200\nduration_s = 3\n";
    let run = LiveRun::start(body, "3");
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 100ms\n  scrape_timeout: 100ms\nscrape_configs:\n  - job_name: powerlab\n    static_configs:\n      - targets: ['{}']\n",
            run.addr
        ),
    )
    .unwrap();
    let web: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let log = std::fs::File::create(tmp.path().join("prometheus.log")).unwrap();
    let mut prom = std::process::Command::new(&bin)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            tmp.path().join("data").display()
        ))
        .arg(format!("--web.listen-address={web}"))
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("starting {bin}: {e}"));
    let (dir, _results) = run.wait();
    let promtool = Path::new(&bin).with_file_name("promtool");
    let result = std::panic::catch_unwind(|| {
        check_prometheus(web, &dir);
        check_dashboard_node_expr_when_a_rank_goes(&promtool);
    });
    let _ = prom.kill();
    let _ = prom.wait();
    if let Err(e) = result {
        let log = std::fs::read_to_string(tmp.path().join("prometheus.log")).unwrap_or_default();
        eprintln!("prometheus log:\n{log}");
        std::panic::resume_unwind(e);
    }
}

/// The dashboard's node-power expression, for every host.
fn dashboard_node_expr() -> String {
    let dashboard: serde_json::Value =
        serde_json::from_str(&repo_file("docs/grafana/powerlab.json")).unwrap();
    dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["expr"].as_str().map(str::to_string))
        .find(|e| e.contains("powerlab_node_power_watts"))
        .expect("a dashboard panel draws the node power")
        .replace("$Hostname", ".*")
}

/// The dashboard's node-power expression, as Prometheus evaluates it over
/// the run, gives the node power wherever it gives a value.
fn check_dashboard_node_expr(web: SocketAddr) {
    let expr = dashboard_node_expr();
    let diff = prom_query(
        web,
        &format!("(({expr}) - on (Hostname) powerlab_node_power_watts)[1h:250ms]"),
    );
    assert_eq!(diff.len(), 1, "the dashboard's node expression: {diff:?}");
    let values = points(&diff[0]);
    assert!(values.len() >= 10, "{} evaluations", values.len());
    assert!(values.iter().all(|(_, v)| *v == 0.0), "{values:?}");
}

/// Two ranks serve one node; one's endpoint goes away (its series go
/// stale): the dashboard's node expression gives the sum while both are
/// there and nothing after, never the survivor's share alone. Evaluated
/// by `promtool test rules` (Prometheus's own engine) on stated series.
fn check_dashboard_node_expr_when_a_rank_goes(promtool: &Path) {
    let expr = dashboard_node_expr().replace('\'', "''");
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("node-panel.test.yml");
    let series = |name: &str, inst: &str, values: &str| {
        format!(
            "      - series: '{name}{{Hostname=\"h\", instance=\"{inst}\"}}'\n        values: '{values}'\n"
        )
    };
    let test = format!(
        "rule_files: []\nevaluation_interval: 1s\ntests:\n  - interval: 1s\n    input_series:\n{}{}{}{}    promql_expr_test:\n      - expr: '{expr}'\n        eval_time: 2s\n        exp_samples:\n          - labels: '{{Hostname=\"h\"}}'\n            value: 300\n      - expr: '{expr}'\n        eval_time: 4s\n        exp_samples: []\n",
        series("powerlab_node_power_watts", "a", "100 100 100 stale"),
        series("powerlab_node_power_watts", "b", "200 200 200 200 200 200"),
        series("powerlab_node_ranks", "a", "2 2 2 stale"),
        series("powerlab_node_ranks", "b", "2 2 2 2 2 2"),
    );
    std::fs::write(&file, test).unwrap();
    let out = std::process::Command::new(promtool)
        .args(["test", "rules"])
        .arg(&file)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", promtool.display()));
    assert!(
        out.status.success(),
        "the dashboard's node expression with a rank gone:\n{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

fn check_prometheus(web: SocketAddr, dir: &Path) {
    let t0 = Instant::now();
    while http_get(web, "/-/ready").is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "Prometheus never became ready"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let raw = read_raw(dir);
    let ev = events(dir);
    let up = prom_query(web, "up[1h]");
    assert!(!up.is_empty(), "Prometheus has no scrape of the run");
    // Node power: each scrape's value and instant, recorded together.
    let w = prom_query(web, "powerlab_node_power_watts[1h]");
    let t = prom_query(web, "powerlab_node_power_timestamp_seconds[1h]");
    assert_eq!((w.len(), t.len()), (1, 1), "{w:?} {t:?}");
    assert_eq!(w[0]["metric"]["Hostname"], "sim-node-0");
    let (w, t) = (points(&w[0]), points(&t[0]));
    let at: BTreeMap<i64, f64> = t
        .iter()
        .map(|(s, v)| ((s * 1000.0).round() as i64, *v))
        .collect();
    let (mut compared, mut worst) = (0, 0.0f64);
    for (scrape, watts) in &w {
        let instant = at[&((scrape * 1000.0).round() as i64)];
        let expect =
            node_at(&raw, instant).unwrap_or_else(|| panic!("no raw node value at {instant}"));
        let err = (watts - expect).abs() / expect.abs().max(1.0);
        assert!(
            err <= 0.01,
            "Prometheus recorded {watts} W at {instant}; the raw files give {expect} W"
        );
        worst = worst.max(err);
        compared += 1;
    }
    assert!(compared >= 20, "{compared} scrapes compared");
    // Samples: the last value Prometheus recorded is the raw row count.
    for g in &raw {
        let s = prom_query(
            web,
            &format!(
                "powerlab_samples_total{{UUID=\"{}\",instrument=\"buffered\"}}[1h]",
                g.uuid
            ),
        );
        assert_eq!(s.len(), 1, "{s:?}");
        let last = points(&s[0]).last().unwrap().1;
        assert_eq!(
            last,
            g.buffered.len() as f64,
            "{}: Prometheus's last samples_total",
            g.key
        );
        assert_eq!(s[0]["metric"]["gpu"], g.index.as_str());
    }
    // The rungs, in the order Prometheus first saw each.
    let mut rungs: Vec<(f64, u64)> = prom_query(web, "powerlab_rung_info[1h]")
        .iter()
        .map(|s| {
            (
                points(s)[0].0,
                s["metric"]["rung_id"].as_str().unwrap().parse().unwrap(),
            )
        })
        .collect();
    rungs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let seen: Vec<u64> = rungs.iter().map(|r| r.1).collect();
    assert_eq!(
        seen,
        rung_sequence(&ev),
        "rung_info as Prometheus recorded it"
    );
    check_dashboard_node_expr(web);
    let scrapes = points(&prom_query(web, "up[1h]")[0]).len();
    println!(
        "prometheus: {scrapes} scrapes, {compared} node values compared, worst relative error {worst:.2e}, rungs {seen:?}"
    );
}
