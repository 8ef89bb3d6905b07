#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! The node's own power against real services (issue 16): the sushy-tools
//! Redfish emulators (`sushy-static` serving a chassis whose power
//! reading `scripts/ci/redfish_bmc.py` keeps up to date from the run's GPU
//! raw files plus 900 W of its own; `sushy-emulator` with basic auth for
//! refused credentials), over HTTP and HTTPS with a self-signed
//! certificate, and a small local Prometheus exporter. The emulators come
//! from PyPI: `scripts/ci/ci-redfish.sh` installs them and runs these tests
//! (`--ignored`), with `POWERLAB_SUSHY_BIN` naming the virtualenv's `bin/`.

use crate::util::*;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BASE_W: f64 = 900.0;

fn sushy_bin(name: &str) -> PathBuf {
    let dir = std::env::var("POWERLAB_SUSHY_BIN")
        .expect("POWERLAB_SUSHY_BIN must name the sushy-tools virtualenv's bin/ (scripts/ci/ci-redfish.sh sets it)");
    let p = Path::new(&dir).join(name);
    assert!(p.exists(), "{} is missing", p.display());
    p
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A child process killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_listening(port: u16) {
    let t0 = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "nothing listens on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The BMC: the feeder writing the mockup, and sushy-static serving it.
struct Bmc {
    port: u16,
    sushy: Proc,
    _feeder: Proc,
    _mock: tempfile::TempDir,
}

fn bmc(results: Option<&Path>, tls: Option<(&Path, &Path)>) -> Bmc {
    bmc_with(results, tls, "legacy")
}

fn bmc_with(results: Option<&Path>, tls: Option<(&Path, &Path)>, schema: &str) -> Bmc {
    let mock = tempfile::tempdir().unwrap();
    let mut feeder = Command::new(sushy_bin("python"));
    feeder.arg(repo().join("scripts/ci/redfish_bmc.py")).args([
        "--mockup",
        mock.path().to_str().unwrap(),
        "--base-w",
        &BASE_W.to_string(),
        "--update-s",
        "0.5",
        "--window-s",
        "0.5",
        "--schema",
        schema,
    ]);
    if let Some(r) = results {
        feeder.args(["--results", r.to_str().unwrap()]);
    }
    let feeder = Proc(feeder.stdout(Stdio::null()).spawn().unwrap());
    let t0 = Instant::now();
    while !mock.path().join("Chassis/1U/index.json").exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the feeder wrote no mockup"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let port = free_port();
    let mut cmd = Command::new(sushy_bin("sushy-static"));
    cmd.args(["-i", "127.0.0.1", "-p", &port.to_string(), "-m"])
        .arg(mock.path());
    if let Some((cert, key)) = tls {
        cmd.arg("-c").arg(cert).arg("-k").arg(key);
    }
    let sushy = Proc(
        cmd.stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_listening(port);
    Bmc {
        port,
        sushy,
        _feeder: feeder,
        _mock: mock,
    }
}

fn source(body: &str) -> String {
    format!("\n[[node_power]]\nname = \"bmc\"\n{body}\n")
}

const RUNGS: &str = "[sampling]\nflush_interval_ms = 200\n\
[[phase]]\nkind = \"idle\"\nname = \"idle\"\nduration_s = 4\n\
[[phase]]\nkind = \"sustained\"\nname = \"sustained\"\nduration_s = 5\n\
[[phase]]\nkind = \"duty\"\nname = \"slow\"\nperiods_ms = [4000]\nduty = 0.5\nduration_s = 12\nmodes = [\"in_phase\"]\n\
[[phase]]\nkind = \"duty\"\nname = \"fast\"\nperiods_ms = [200]\nduty = 0.5\nduration_s = 4\nmodes = [\"in_phase\"]\n";

/// Runs `campaign` on 2 simulated GPUs in real time into `root`, calling
/// `during` once the run directory exists.
fn run_realtime(
    campaign: &str,
    root: &Path,
    during: impl FnOnce(&Path),
) -> (std::process::Output, PathBuf) {
    let file = root.join("campaign.toml");
    std::fs::write(&file, campaign).unwrap();
    let runs = root.join("runs");
    let child = powerlab()
        .args([
            "run",
            file.to_str().unwrap(),
            "--backend",
            "sim",
            "--sim-gpus",
            "2",
        ])
        .args([
            "--sim-pace",
            "realtime",
            "--allow-programs",
            "--results",
            runs.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let dir = loop {
        if let Some(d) = run_dirs(&runs).into_iter().next() {
            break d;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no run directory appeared"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    during(&dir);
    (child.wait_with_output().unwrap(), dir)
}

fn num(row: &std::collections::HashMap<String, String>, k: &str) -> Option<f64> {
    row.get(k).and_then(|v| v.parse().ok())
}

#[test]
#[ignore = "needs sushy-tools: scripts/ci/ci-redfish.sh"]
fn a_redfish_bmc_over_http_is_joined_with_the_gpu_sum_per_rung() {
    let root = tempfile::tempdir().unwrap();
    let b = bmc(Some(&root.path().join("runs")), None);
    let c = campaign(&format!(
        "{RUNGS}{}",
        source(&format!(
            "kind = \"redfish\"\nurl = \"http://127.0.0.1:{}\"\nauth = \"none\"\ninterval_ms = 250\ntimeout_ms = 1000",
            b.port
        ))
    ));
    let (out, dir) = run_realtime(&c, root.path(), |_| {});
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("node_power bmc") && err.contains("pass"),
        "{err}"
    );
    let rows = csv_rows(&dir.join("report/node_power.csv"));
    let by = |label: &str| rows.iter().find(|r| r["rung"].starts_with(label)).unwrap();
    // The chassis minus the GPU sum is the BMC's own 900 W, in every rung
    // long enough for its averages (the simulated GPUs ramp and overshoot
    // inside the BMC's span, so within 5 %).
    for label in ["idle", "sustained", "slow"] {
        let r = by(label);
        let non_gpu = num(r, "non_gpu_w").unwrap();
        assert!((non_gpu - BASE_W).abs() < 0.05 * BASE_W, "{label}: {r:?}");
        assert!(num(r, "coverage").unwrap() >= 0.9, "{r:?}");
        let chassis = num(r, "chassis_mean_w").unwrap();
        let gpu = num(r, "gpu_sum_w").unwrap();
        assert!((chassis - gpu - non_gpu).abs() < 0.01, "{r:?}");
    }
    // The 4 s swing is visible to a 500 ms average; the 200 ms one is not,
    // and the table says so instead of printing a swing.
    assert!(num(by("slow"), "chassis_swing_w").unwrap() > 500.0);
    let fast = by("fast");
    assert_eq!(num(fast, "chassis_swing_w"), None);
    assert!(fast["verdict"].contains("cannot resolve"), "{fast:?}");
    let src = &csv_rows(&dir.join("report/node_power_sources.csv"))[0];
    let update = num(src, "update_ms").unwrap();
    assert!((400.0..=650.0).contains(&update), "{src:?}");
    // Raw files flushed every 200 ms, a 500 ms window, 500 ms updates:
    // the reading trails the GPUs by a few hundred ms.
    // Measured over 13 runs at several revisions: 100–350 ms, moved by
    // where the emulator's 500 ms update falls against the run (150 ms, the
    // bound until then, failed a clean CI run). Above 0 on the 50 ms grid:
    // the BMC trails the GPUs.
    let lag = num(src, "lag_ms").unwrap();
    assert!((50.0..=1500.0).contains(&lag), "{src:?}");
    assert_eq!(num(src, "failed"), Some(0.0));
    // Both power supplies of every reading are in the raw file.
    let raw = std::fs::read_to_string(dir.join("node_power/bmc.csv")).unwrap();
    assert!(raw.contains(",psu:PSU1,") && raw.contains(",psu:PSU2,"));
    let report = std::fs::read_to_string(dir.join("report/report.md")).unwrap();
    assert!(report.contains("## Node power"), "{report}");
    assert!(
        !report.lines().next().unwrap().contains("NODE POWER"),
        "{report}"
    );
    assert!(by("slow")["verdict"].contains("resolves a 4"), "{rows:?}");
    assert!(dir.join("report/plots/node_power.svg").is_file());
    // collate regenerates the same table from the run directory alone.
    let before = std::fs::read_to_string(dir.join("report/node_power.csv")).unwrap();
    let st = capture(powerlab().arg("collate").arg(&dir));
    assert_exit(&st, 0);
    assert_eq!(
        before,
        std::fs::read_to_string(dir.join("report/node_power.csv")).unwrap()
    );
    drop(b);
}

#[test]
#[ignore = "needs sushy-tools: scripts/ci/ci-redfish.sh"]
fn a_bmc_that_stops_or_hangs_mid_run_is_recorded_and_the_campaign_goes_on() {
    let root = tempfile::tempdir().unwrap();
    let mut b = bmc(Some(&root.path().join("runs")), None);
    let c = campaign(&format!(
        "{RUNGS}{}",
        source(&format!(
            "kind = \"redfish\"\nurl = \"http://127.0.0.1:{}\"\nauth = \"none\"\ninterval_ms = 250\ntimeout_ms = 400",
            b.port
        ))
    ));
    let pid = b.sushy.0.id() as i32;
    let (out, dir) = run_realtime(&c, root.path(), |_| {
        // Hung for 3 s in the slow rung (requests time out), then back;
        // then stopped for good during the fast rung. (The idle rung with
        // no context comes first: at least 5 s of settling, 4 s, 1 s.)
        std::thread::sleep(Duration::from_secs(22));
        let _ = Command::new("kill")
            .args(["-STOP", &pid.to_string()])
            .status();
        std::thread::sleep(Duration::from_secs(3));
        let _ = Command::new("kill")
            .args(["-CONT", &pid.to_string()])
            .status();
        std::thread::sleep(Duration::from_secs(9));
        let _ = b.sushy.0.kill();
    });
    let err = text(&out.stderr);
    assert!(out.status.success(), "the GPU campaign must go on: {err}");
    let raw = std::fs::read_to_string(dir.join("node_power/bmc.csv")).unwrap();
    assert!(raw.contains("timeout: no answer within 400 ms"), "{raw}");
    assert!(raw.contains("unreachable: "), "{raw}");
    // Backoff: far fewer failed reads than 250 ms slots while it was down.
    let src = &csv_rows(&dir.join("report/node_power_sources.csv"))[0];
    assert!(num(src, "failed").unwrap() >= 3.0, "{src:?}");
    assert!(
        src["errors"].contains("timeout") && src["errors"].contains("unreachable"),
        "{src:?}"
    );
    let rows = csv_rows(&dir.join("report/node_power.csv"));
    let slow = rows.iter().find(|r| r["rung"].starts_with("slow")).unwrap();
    assert!(slow["verdict"].contains("INCOMPLETE"), "{slow:?}");
    assert!(num(slow, "coverage").unwrap() < 0.9, "{slow:?}");
    let fast = rows.iter().find(|r| r["rung"].starts_with("fast")).unwrap();
    assert!(num(fast, "coverage").unwrap() < 0.5, "{fast:?}");
    let report = std::fs::read_to_string(dir.join("report/report.md")).unwrap();
    let first = report.lines().next().unwrap();
    assert!(first.contains("NODE POWER INCOMPLETE: bmc"), "{first}");
    // The GPU figures stand.
    let summary = std::fs::read_to_string(dir.join("report/summary.csv")).unwrap();
    assert_eq!(summary.lines().count(), 6, "{summary}");
}

/// A self-signed certificate for 127.0.0.1 (an end-entity one: a BMC's).
fn self_signed(dir: &Path) -> (PathBuf, PathBuf) {
    let (cert, key) = (dir.join("bmc.pem"), dir.join("bmc.key"));
    let st = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=bmc",
        ])
        .args([
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-addext",
            "basicConstraints=critical,CA:FALSE",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "openssl req failed");
    (cert, key)
}

/// `powerlab preflight --campaign` on a campaign with these sources: the
/// `node_power` array of its `--json` output, and its text output. (The
/// exit code says nothing here: CI has no GPU, so the GPU checks fail.)
fn preflight(campaign_text: &str, env: &[(&str, &str)]) -> (Vec<serde_json::Value>, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        campaign(&format!(
            "[[phase]]\nkind = \"idle\"\nduration_s = 1\n{campaign_text}"
        )),
    )
    .unwrap();
    let run = |json: bool| {
        let mut cmd = powerlab();
        cmd.args([
            "preflight",
            "--allow-programs",
            "--campaign",
            file.to_str().unwrap(),
            "--out",
        ])
        .arg(dir.path())
        .envs(env.iter().copied());
        if json {
            cmd.arg("--json");
        }
        capture(&mut cmd)
    };
    let j = run(true);
    let v: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    let out = run(false);
    let text = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_ne!(
        out.status.code(),
        Some(0),
        "no GPU here: the preflight must fail"
    );
    (v["node_power"].as_array().unwrap().clone(), text)
}

/// The one source's watts, or its error.
fn verdict(sources: &[serde_json::Value], name: &str) -> Result<f64, String> {
    let s = sources.iter().find(|s| s["name"] == name).unwrap();
    match s["node_w"].as_f64() {
        Some(w) => Ok(w),
        None => Err(s["error"].as_str().unwrap().to_string()),
    }
}

fn node_power_line(text: &str) -> String {
    text.lines()
        .filter(|l| l.contains("node_power") || l.contains("node power"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
#[ignore = "needs sushy-tools: scripts/ci/ci-redfish.sh"]
fn https_with_a_self_signed_certificate_is_opt_in() {
    let tmp = tempfile::tempdir().unwrap();
    let (cert, key) = self_signed(tmp.path());
    let b = bmc(None, Some((&cert, &key)));
    let url = format!("url = \"https://127.0.0.1:{}\"\nauth = \"none\"", b.port);
    // Verified against the public roots: refused, and said why.
    let (src, text) = preflight(&source(&format!("kind = \"redfish\"\n{url}")), &[]);
    let e = verdict(&src, "bmc").unwrap_err();
    assert!(e.to_lowercase().contains("certificate"), "{e}");
    assert!(node_power_line(&text).contains("FAIL"), "{text}");
    // The BMC's own certificate trusted: read.
    let (src, text) = preflight(
        &source(&format!(
            "kind = \"redfish\"\n{url}\nca_file = \"{}\"",
            cert.display()
        )),
        &[],
    );
    assert_eq!(verdict(&src, "bmc"), Ok(BASE_W));
    let line = node_power_line(&text);
    assert!(
        line.contains("pass") && line.contains("900.0 W, 2 power supplies"),
        "{text}"
    );
    // Any certificate accepted, by explicit choice: read.
    let (src, text) = preflight(
        &source(&format!("kind = \"redfish\"\n{url}\ninsecure_tls = true")),
        &[],
    );
    assert_eq!(verdict(&src, "bmc"), Ok(BASE_W), "{text}");
}

#[test]
#[ignore = "needs sushy-tools: scripts/ci/ci-redfish.sh"]
fn refused_credentials_are_a_preflight_error_naming_the_source() {
    // sushy-emulator with HTTP basic auth (an htpasswd file, bcrypt).
    let tmp = tempfile::tempdir().unwrap();
    let htpasswd = tmp.path().join("htpasswd");
    let st = Command::new(sushy_bin("python"))
        .args([
            "-c",
            "import bcrypt,sys; open(sys.argv[1],'w').write('admin:'+bcrypt.hashpw(b'right-pass', bcrypt.gensalt(4)).decode()+'\\n')",
        ])
        .arg(&htpasswd)
        .status()
        .unwrap();
    assert!(st.success());
    let conf = tmp.path().join("emulator.conf");
    std::fs::write(
        &conf,
        format!("SUSHY_EMULATOR_AUTH_FILE = '{}'\n", htpasswd.display()),
    )
    .unwrap();
    let port = free_port();
    let _emu = Proc(
        Command::new(sushy_bin("sushy-emulator"))
            .args(["-i", "127.0.0.1", "-p", &port.to_string(), "--config"])
            .arg(&conf)
            .args(["--fake"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_listening(port);
    let spec = |var: &str| {
        source(&format!(
            "kind = \"redfish\"\nurl = \"http://127.0.0.1:{port}\"\nuser = \"admin\"\npassword_env = \"{var}\""
        ))
    };
    let (src, text) = preflight(
        &spec("POWERLAB_SECRET_BMC_PW"),
        &[("POWERLAB_SECRET_BMC_PW", "wrong-pass")],
    );
    assert!(
        verdict(&src, "bmc")
            .unwrap_err()
            .contains("refused the credentials")
    );
    let line = node_power_line(&text);
    assert!(
        line.contains("`bmc`") && line.contains("refused the credentials"),
        "{text}"
    );
    assert!(line.contains("HTTP 401"), "{text}");
    assert!(
        !text.contains("wrong-pass"),
        "the password was printed: {text}"
    );
    // The right password gets past authentication: this emulator's chassis
    // has no power telemetry, and the preflight says that instead.
    let (src, text) = preflight(
        &spec("POWERLAB_SECRET_BMC_PW"),
        &[("POWERLAB_SECRET_BMC_PW", "right-pass")],
    );
    assert!(
        verdict(&src, "bmc")
            .unwrap_err()
            .contains("without a power reading")
    );
    let line = node_power_line(&text);
    assert!(line.contains("without a power reading"), "{text}");
    assert!(!line.contains("refused"), "{text}");
    // An unset variable is named, before any request.
    let (src, text) = preflight(&spec("POWERLAB_SECRET_UNSET"), &[]);
    assert!(
        verdict(&src, "bmc")
            .unwrap_err()
            .contains("POWERLAB_SECRET_UNSET")
    );
    assert!(
        text.contains("`POWERLAB_SECRET_UNSET` is not set"),
        "{text}"
    );
}

#[test]
#[ignore = "needs sushy-tools: scripts/ci/ci-redfish.sh"]
fn a_prometheus_exporter_and_a_command_are_read() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("metrics"),
        "# TYPE pdu_outlet_watts gauge\npdu_outlet_watts{pdu=\"a\",outlet=\"1\"} 812.5\npdu_outlet_watts{pdu=\"a\",outlet=\"2\"} 790\npdu_outlet_watts{pdu=\"b\",outlet=\"1\"} 50\n",
    )
    .unwrap();
    let port = free_port();
    // The exporter: Python's own HTTP server over the metrics page.
    let _exporter = Proc(
        Command::new(sushy_bin("python"))
            .args([
                "-m",
                "http.server",
                "--bind",
                "127.0.0.1",
                &port.to_string(),
                "--directory",
            ])
            .arg(tmp.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_listening(port);
    let (src, text) = preflight(
        &format!(
            "\n[[node_power]]\nname = \"pdu\"\nkind = \"prometheus\"\nurl = \"http://127.0.0.1:{port}/metrics\"\nmetric = \"pdu_outlet_watts\"\nlabels = {{ pdu = \"a\" }}\n\
             [[node_power]]\nname = \"meter\"\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"echo 1234.5 W\"]\n"
        ),
        &[],
    );
    assert_eq!(verdict(&src, "pdu"), Ok(1602.5));
    assert_eq!(verdict(&src, "meter"), Ok(1234.5));
    let lines = node_power_line(&text);
    assert!(
        lines.contains("pdu") && lines.contains("1602.5 W, 2 power supplies"),
        "{text}"
    );
    assert!(
        lines.contains("meter") && lines.contains("1234.5 W"),
        "{text}"
    );
    // A metric the exporter lacks is named.
    let (src, text) = preflight(
        &format!(
            "\n[[node_power]]\nname = \"pdu\"\nkind = \"prometheus\"\nurl = \"http://127.0.0.1:{port}/metrics\"\nmetric = \"pdu_inlet_watts\"\n"
        ),
        &[],
    );
    assert!(verdict(&src, "pdu").is_err());
    assert!(
        node_power_line(&text).contains("no sample of `pdu_inlet_watts`"),
        "{text}"
    );
}

#[test]
#[ignore = "needs sushy-tools: scripts/ci/ci-redfish.sh"]
fn the_chassis_power_is_found_wherever_the_bmc_keeps_it() {
    // EnvironmentMetrics (Redfish 2020.4) and a power Sensor (a PSU's
    // sensor and a temperature come first and must be passed over).
    for schema in ["environment", "sensors"] {
        let b = bmc_with(None, None, schema);
        let (src, text) = preflight(
            &source(&format!(
                "kind = \"redfish\"\nurl = \"http://127.0.0.1:{}\"\nauth = \"none\"",
                b.port
            )),
            &[],
        );
        assert_eq!(verdict(&src, "bmc"), Ok(BASE_W), "{schema}: {text}");
    }
}
