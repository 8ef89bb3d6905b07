#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Issue 59: a campaign is code. Nothing it names (a workload's command, a
//! node power command or IPMI tool, an address, a secret) starts without
//! the user's consent (`--allow-programs`); `validate` and `plan` list all
//! of it with control characters escaped; a secret comes only from a
//! source declared for powerlab, and never goes over unverified TLS. Each
//! test runs the real binary on the simulated node (in real time where
//! the sources would be read), against listeners on 127.0.0.1 only.

use crate::util::{capture, powerlab, run_dirs, text};
use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A listener on 127.0.0.1 (an https port: a client's TLS handshake, or
/// a request, would be its first bytes) that counts every connection and
/// keeps every byte received.
struct Listener {
    port: u16,
    connections: Arc<AtomicUsize>,
    received: Arc<Mutex<Vec<u8>>>,
}

impl Listener {
    fn start() -> Listener {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let received = Arc::new(Mutex::new(Vec::new()));
        let (c, r) = (connections.clone(), received.clone());
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { continue };
                c.fetch_add(1, Ordering::SeqCst);
                let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
                let mut buf = [0u8; 4096];
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    r.lock().unwrap().extend_from_slice(&buf[..n]);
                }
            }
        });
        Listener {
            port,
            connections,
            received,
        }
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    fn received(&self) -> Vec<u8> {
        self.received.lock().unwrap().clone()
    }
}

const IDLE: &str = "[campaign]\nname = \"c\"\n[defaults]\nwarmup_s = 0.5\ncooldown_s = 0.2\n\
[[phase]]\nkind = \"idle\"\nname = \"idle\"\nduration_s = 1\n";

/// `powerlab ARGS FILE …` with the campaign written into `dir`, run there
/// with `env` added.
fn in_dir(dir: &Path, campaign: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let file = dir.join("c.toml");
    std::fs::write(&file, campaign).unwrap();
    let mut cmd = powerlab();
    cmd.current_dir(dir)
        .args(args)
        .arg(&file)
        .envs(env.iter().copied());
    capture(&mut cmd)
}

/// `run` on one simulated GPU in real time, results under `dir/runs`.
fn run_realtime(dir: &Path, campaign: &str, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let runs = dir.join("runs");
    let mut args = vec![
        "run",
        "--backend",
        "sim",
        "--sim-pace",
        "realtime",
        "--sim-gpus",
        "1",
        "--results",
        runs.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    in_dir(dir, campaign, &args, env)
}

fn redfish(port: u16, auth: &str) -> String {
    format!(
        "{IDLE}[[node_power]]\nname = \"bmc\"\nkind = \"redfish\"\nurl = \"https://127.0.0.1:{port}\"\n{auth}"
    )
}

/// Fault 1: a Redfish source named any variable and any file as its
/// password and sent it, with `insecure_tls`, to any https listener, on a
/// simulated run with no opt-in. The listener must receive nothing: not
/// without consent, not with it from an undeclared variable or file, not
/// over unverified TLS; and `preflight --campaign` neither.
#[test]
fn fault1_a_credential_leaves_for_no_listener_without_consent_and_a_declared_source() {
    let tmp = tempfile::tempdir().unwrap();
    let listener = Listener::start();
    let secret_file = tmp.path().join("cloud-credentials");
    std::fs::write(&secret_file, "file-secret-59\n").unwrap();
    let env = [
        ("CLOUD_TOKEN", "cloud-token-59"),
        ("POWERLAB_SECRET_BMC", "declared-59"),
    ];
    let attacks = [
        // The issue's own: any variable, any certificate.
        "user = \"admin\"\npassword_env = \"CLOUD_TOKEN\"\ninsecure_tls = true\n".to_string(),
        format!(
            "user = \"admin\"\npassword_file = \"{}\"\ninsecure_tls = true\n",
            secret_file.display()
        ),
        // A declared variable, but unverified TLS.
        "user = \"admin\"\npassword_env = \"POWERLAB_SECRET_BMC\"\ninsecure_tls = true\n".into(),
        // A file the command line does not name.
        format!(
            "user = \"admin\"\npassword_file = \"{}\"\n",
            secret_file.display()
        ),
    ];
    for auth in &attacks {
        let c = redfish(listener.port, auth);
        for consent in [&[][..], &["--allow-programs"][..]] {
            let out = run_realtime(tmp.path(), &c, consent, &env);
            assert_ne!(out.status.code(), Some(0), "{auth}: {}", text(&out.stderr));
            let out = in_dir(
                tmp.path(),
                &c,
                &[
                    &["preflight", "--out", tmp.path().to_str().unwrap()],
                    consent,
                    &["--campaign"],
                ]
                .concat(),
                &env,
            );
            assert_ne!(out.status.code(), Some(0), "{auth}: {}", text(&out.stderr));
        }
        assert_eq!(
            listener.connections(),
            0,
            "{auth}: the listener was reached; it received {:?}",
            String::from_utf8_lossy(&listener.received())
        );
    }
    // What the refusals said: the variable's rule, TLS, the file's flag.
    let out = in_dir(
        tmp.path(),
        &redfish(listener.port, &attacks[0]),
        &["validate"],
        &env,
    );
    assert!(
        text(&out.stderr).contains("POWERLAB_SECRET_"),
        "{}",
        text(&out.stderr)
    );
    let out = in_dir(
        tmp.path(),
        &redfish(listener.port, &attacks[2]),
        &["validate"],
        &env,
    );
    assert!(
        text(&out.stderr).contains("unverified TLS"),
        "{}",
        text(&out.stderr)
    );
    let out = run_realtime(
        tmp.path(),
        &redfish(listener.port, &attacks[3]),
        &["--allow-programs"],
        &env,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("--secret-file"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(listener.connections(), 0);
    // The listener does hear a source the user consented to (no
    // credential): it can fail.
    let c = format!(
        "{IDLE}[[node_power]]\nname = \"pdu\"\nkind = \"prometheus\"\nurl = \"http://127.0.0.1:{}/metrics\"\nmetric = \"w\"\ntimeout_ms = 300\n",
        listener.port
    );
    let _ = in_dir(
        tmp.path(),
        &c,
        &[
            "preflight",
            "--out",
            tmp.path().to_str().unwrap(),
            "--allow-programs",
            "--campaign",
        ],
        &env,
    );
    assert!(listener.connections() >= 1, "the listener heard nothing");
    let heard = String::from_utf8_lossy(&listener.received()).into_owned();
    assert!(heard.starts_with("GET /metrics"), "{heard}");
    for secret in ["cloud-token-59", "file-secret-59", "declared-59"] {
        assert!(!heard.contains(secret), "{heard}");
    }
}

/// Fault 2: a node power command, and an IPMI source whose `ipmitool` is
/// `/bin/sh`, ran on `--backend sim --sim-pace realtime` with no opt-in.
#[test]
fn fault2_node_power_programs_never_start_on_the_simulated_node_without_consent() {
    let tmp = tempfile::tempdir().unwrap();
    let c = format!(
        "{IDLE}[[node_power]]\nname = \"meter\"\nkind = \"command\"\ncommand = [\"sh\", \"-c\", \"touch ran-command; echo 500\"]\n\
         [[node_power]]\nname = \"ipmi\"\nkind = \"ipmi\"\nipmitool = \"/bin/sh\"\nargs = [\"-c\", \"touch ran-ipmi; echo 'Instantaneous power reading: 400 Watts'\"]\n"
    );
    let out = run_realtime(tmp.path(), &c, &[], &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--allow-programs"), "{err}");
    // The refusal shows what would have run.
    assert!(
        err.contains("node_power command \"meter\"")
            && err.contains("\"touch ran-command; echo 500\""),
        "{err}"
    );
    assert!(
        err.contains("node_power ipmi \"ipmi\"") && err.contains("\"/bin/sh\""),
        "{err}"
    );
    for f in ["ran-command", "ran-ipmi"] {
        assert!(
            !tmp.path().join(f).exists(),
            "{f}: a program ran without consent"
        );
    }
    assert!(run_dirs(&tmp.path().join("runs")).is_empty());
    // preflight --campaign: the same.
    let out = in_dir(
        tmp.path(),
        &c,
        &[
            "preflight",
            "--out",
            tmp.path().to_str().unwrap(),
            "--campaign",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    for f in ["ran-command", "ran-ipmi"] {
        assert!(
            !tmp.path().join(f).exists(),
            "{f}: preflight ran it without consent"
        );
    }
    // With consent they run (the markers can appear).
    let out = run_realtime(tmp.path(), &c, &["--allow-programs"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for f in ["ran-command", "ran-ipmi"] {
        assert!(tmp.path().join(f).exists(), "{f} did not run with consent");
    }
}

/// The workload of fault 3: a program whose arguments hide a carriage
/// return and an ANSI sequence that repaint the line, an `LD_PRELOAD`
/// and a directory of its own.
fn disguised() -> String {
    format!(
        "{IDLE}[[phase]]\nkind = \"workload\"\nname = \"train\"\nduration_s = 1\nstop_grace_s = 1\n\
         command = [\"sh\", \"-c\", \"touch ran-disguised; sleep 30\", \"\\r\\u001b[2Kpython3 train.py --steps 100\"]\n\
         env = {{ LD_PRELOAD = \"/tmp/evil.so\" }}\ncwd = \".\"\n"
    )
}

/// Fault 3: `validate` said only "ok"; `plan` printed the command's CR
/// and ANSI codes raw (a terminal showed `python3 train.py --steps 100`
/// while `sh -c touch …` ran), never its `env` or `cwd`; and `run` asked
/// for nothing.
#[test]
fn fault3_validate_and_plan_show_every_program_escaped_and_run_asks_first() {
    let tmp = tempfile::tempdir().unwrap();
    for verb in ["validate", "plan"] {
        let out = in_dir(tmp.path(), &disguised(), &[verb], &[]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let shown = text(&out.stdout);
        assert!(
            !out.stdout.iter().any(|b| *b == b'\r' || *b == 0x1b),
            "{verb} printed a control character raw:\n{shown}"
        );
        for want in [
            "workload \"train\": runs",
            "program: [\"sh\", \"-c\", \"touch ran-disguised; sleep 30\", \"\\r\\u{1b}[2Kpython3 train.py --steps 100\"]",
            "env: \"LD_PRELOAD\"=\"/tmp/evil.so\"",
            "cwd: \".\"",
            "--allow-programs",
        ] {
            assert!(shown.contains(want), "{verb} lacks `{want}`:\n{shown}");
        }
    }
    // Asked to run the command on the simulated node: refused without
    // consent, the command shown escaped, nothing started.
    let out = run_realtime(tmp.path(), &disguised(), &["--sim-run-command"], &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("\\u{1b}[2Kpython3") && !err.contains('\u{1b}'),
        "{err}"
    );
    assert!(
        !tmp.path().join("ran-disguised").exists(),
        "it ran without consent"
    );
    assert!(run_dirs(&tmp.path().join("runs")).is_empty());
}

/// The campaign the note shows `validate` and `plan` on: a
/// workload, a node power command and a Redfish source.
pub const SHOWN: &str = "[campaign]\nname = \"shared\"\n\
[[phase]]\nkind = \"idle\"\nname = \"idle\"\nduration_s = 5\n\
[[phase]]\nkind = \"workload\"\nname = \"train\"\nduration_s = 60\n\
command = [\"python3\", \"train.py\", \"--steps\", \"1000\"]\nenv = { NCCL_DEBUG = \"WARN\" }\ncwd = \"/work/job\"\n\
[[node_power]]\nname = \"meter\"\nkind = \"command\"\ncommand = [\"/usr/local/bin/node-watts\", \"--once\"]\n\
[[node_power]]\nname = \"bmc\"\nkind = \"redfish\"\nurl = \"https://10.0.0.5\"\nuser = \"admin\"\npassword_env = \"POWERLAB_SECRET_BMC\"\nca_file = \"/etc/powerlab/bmc.pem\"\n";

#[test]
fn validate_and_plan_list_a_workload_a_command_and_a_redfish_source() {
    let tmp = tempfile::tempdir().unwrap();
    for verb in ["validate", "plan"] {
        let out = in_dir(tmp.path(), SHOWN, &[verb], &[]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let s = text(&out.stdout);
        for want in [
            "runs 2 program(s), reads 1 address(es) and 1 secret source(s)",
            "program: [\"python3\", \"train.py\", \"--steps\", \"1000\"]",
            "env: \"NCCL_DEBUG\"=\"WARN\"",
            "cwd: \"/work/job\"",
            "node_power command \"meter\": runs",
            "program: [\"/usr/local/bin/node-watts\", \"--once\"]",
            "node_power redfish \"bmc\": reads",
            "url: \"https://10.0.0.5\"",
            "tls: verified against the certificate in /etc/powerlab/bmc.pem",
            "secret: the variable \"POWERLAB_SECRET_BMC\" (sent to the url)",
        ] {
            assert!(s.contains(want), "{verb} lacks `{want}`:\n{s}");
        }
    }
    let out = in_dir(tmp.path(), SHOWN, &["validate", "--json"], &[]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let reaches = v["reaches"].as_array().unwrap();
    assert_eq!(reaches.len(), 3, "{v}");
    assert_eq!(
        reaches[2]["secrets"][0]["name"], "POWERLAB_SECRET_BMC",
        "{v}"
    );
}

/// Fault 7, first two items: a NUL byte in a workload's `env` passed
/// `validate` (and failed the run at that rung, after the others had
/// spent their time); `command = ["env", "CUDA_VISIBLE_DEVICES=…", …]`
/// passed the refusal of that key in `env`.
#[test]
fn fault7_a_nul_byte_and_a_widened_gpu_set_are_refused_by_validate() {
    let tmp = tempfile::tempdir().unwrap();
    let job = |extra: &str| {
        format!("{IDLE}[[phase]]\nkind = \"workload\"\nname = \"train\"\nduration_s = 1\n{extra}")
    };
    let cases = [
        (
            job("command = [\"python3\", \"train.py\"]\nenv = { X = \"a\\u0000b\" }\n"),
            "phase[1].env",
            "NUL",
        ),
        (
            job("command = [\"python3\", \"train\\u0000.py\"]\n"),
            "phase[1].command",
            "NUL",
        ),
        (
            job(
                "command = [\"env\", \"CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7\", \"python3\", \"train.py\"]\n",
            ),
            "phase[1].command",
            "CUDA_VISIBLE_DEVICES",
        ),
        (
            job(
                "command = [\"sh\", \"-c\", \"export CUDA_VISIBLE_DEVICES=0,1; python3 train.py\"]\n",
            ),
            "phase[1].command",
            "CUDA_VISIBLE_DEVICES",
        ),
        (
            job(
                "command = [\"python3\", \"train.py\"]\nenv = { NVIDIA_VISIBLE_DEVICES = \"all\" }\n",
            ),
            "phase[1].env",
            "NVIDIA_VISIBLE_DEVICES",
        ),
    ];
    for (c, field, word) in cases {
        let out = in_dir(tmp.path(), &c, &["validate"], &[]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{c}\n{err}");
        assert!(err.contains(field) && err.contains(word), "{c}\n{err}");
    }
}
