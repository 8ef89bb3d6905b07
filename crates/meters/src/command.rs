//! A command that prints the node's watts, and the process runner under
//! the IPMI meter. Each run has the source's timeout: the command runs in
//! its own process group, its output is read on threads (any amount), and
//! when the timeout passes — also when a background child still holds the
//! output open — the whole group is killed, so nothing is left behind.

use powerlab_core::units::{W_PER_KW, W_PER_MW};
use powerlab_core::{MeterError, NodeMeter, NodeReading};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use wait_timeout::ChildExt;

/// Most output kept from one run (the rest is read and dropped).
const MAX_OUTPUT: usize = 1 << 20;

/// A command meter.
pub struct CommandMeter {
    name: String,
    argv: Vec<String>,
    timeout: Duration,
}

impl CommandMeter {
    /// From a `command` source (`argv[0]` is the program).
    pub fn new(name: &str, argv: &[String], timeout: Duration) -> Self {
        CommandMeter {
            name: name.to_string(),
            argv: argv.to_vec(),
            timeout,
        }
    }
}

/// What a finished command printed.
pub(crate) struct Output {
    pub stdout: String,
    pub stderr: String,
}

fn reader(mut r: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = [0u8; 8192];
        while let Ok(n) = r.read(&mut buf) {
            if n == 0 {
                break;
            }
            if kept.len() < MAX_OUTPUT {
                kept.extend_from_slice(&buf[..n.min(MAX_OUTPUT - kept.len())]);
            }
        }
        let _ = tx.send(String::from_utf8_lossy(&kept).into_owned());
    });
    rx
}

/// Starts `argv` in its own process group. A program file still open for
/// writing somewhere (ETXTBSY: a script just written, its descriptor held
/// for a moment by a process another thread is forking) is tried again a
/// few times before the error stands.
fn spawn(argv: &[String]) -> std::io::Result<std::process::Child> {
    const ETXTBSY: i32 = 26;
    let mut tries = 0;
    loop {
        let r = Command::new(argv.first().map_or("", String::as_str))
            .args(argv.get(1..).unwrap_or_default())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn();
        match r {
            Err(e) if e.raw_os_error() == Some(ETXTBSY) && tries < 5 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            r => return r,
        }
    }
}

/// Runs `argv` with a timeout; a non-zero exit is an error carrying the
/// last lines of its standard error.
pub(crate) fn run(argv: &[String], timeout: Duration) -> Result<Output, MeterError> {
    let target = argv.first().cloned().unwrap_or_default();
    let deadline = Instant::now() + timeout;
    let timed_out = || MeterError::Timeout {
        target: target.clone(),
        timeout_ms: timeout.as_millis() as u64,
    };
    let mut child = spawn(argv).map_err(|e| MeterError::Unreachable {
        target: target.clone(),
        detail: format!("cannot start it: {e}"),
    })?;
    let group = rustix::process::Pid::from_child(&child);
    let kill_group = || {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    };
    let out = child.stdout.take().map(reader);
    let err = child.stderr.take().map(reader);
    let status = match child.wait_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(Some(s)) => s,
        Ok(None) => {
            kill_group();
            let _ = child.wait();
            return Err(timed_out());
        }
        Err(e) => {
            kill_group();
            let _ = child.wait();
            return Err(MeterError::Unreachable {
                target,
                detail: format!("cannot wait for it: {e}"),
            });
        }
    };
    // The output ends when every process holding it has ended: a child
    // left in the background must not hold the read past the timeout.
    let collect = |rx: Option<mpsc::Receiver<String>>| -> Option<String> {
        match rx {
            None => Some(String::new()),
            Some(rx) => rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .ok(),
        }
    };
    let (stdout, stderr) = match (collect(out), collect(err)) {
        (Some(o), Some(e)) => (o, e),
        _ => {
            kill_group();
            return Err(timed_out());
        }
    };
    if !status.success() {
        let lines: Vec<&str> = stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let tail = lines[lines.len().saturating_sub(3)..].join(" / ");
        return Err(MeterError::Unreachable {
            target,
            detail: if tail.is_empty() {
                format!("exited with {status}")
            } else {
                format!("exited with {status}: {tail}")
            },
        });
    }
    Ok(Output { stdout, stderr })
}

/// The node's watts in a command's output: the first number with a power
/// unit (`W`, `kW`, `MW`, `watts`), else the first bare number. A number
/// with a comma is refused (a thousands separator or a decimal comma:
/// either reading could be wrong by 1000×).
///
/// # Errors
///
/// A message when there is no number, or it is ambiguous.
pub fn parse_watts(text: &str) -> Result<f64, String> {
    let tokens: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ';' || c == '=' || c == ':')
        .filter(|t| !t.is_empty())
        .collect();
    let mut bare = None;
    for (i, t) in tokens.iter().enumerate() {
        let split = t
            .find(|c: char| {
                !(c.is_ascii_digit()
                    || c == '.'
                    || c == '-'
                    || c == '+'
                    || c == 'e'
                    || c == 'E'
                    || c == ',')
            })
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        if num.is_empty() || !num.chars().any(|c| c.is_ascii_digit()) {
            continue;
        }
        if num.contains(',') {
            return Err(format!(
                "`{t}` has a comma: print the watts without separators (1234.5)"
            ));
        }
        let Ok(x) = num.trim_end_matches(['e', 'E']).parse::<f64>() else {
            continue;
        };
        let unit = if unit.is_empty() {
            tokens.get(i + 1).copied().unwrap_or("")
        } else {
            unit
        };
        let scale = match unit.to_ascii_lowercase().as_str() {
            "w" | "watt" | "watts" => Some(1.0),
            "kw" => Some(W_PER_KW),
            "mw" if unit.starts_with('M') => Some(W_PER_MW),
            _ => None,
        };
        match scale {
            Some(s) => return Ok(x * s),
            None => {
                if bare.is_none() {
                    bare = Some(x);
                }
            }
        }
    }
    bare.ok_or_else(|| "no number on its output".to_string())
}

impl NodeMeter for CommandMeter {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> &'static str {
        "command"
    }

    fn target(&self) -> String {
        self.argv.first().cloned().unwrap_or_default()
    }

    fn read(&mut self) -> Result<NodeReading, MeterError> {
        let out = run(&self.argv, self.timeout)?;
        let node_w = parse_watts(&out.stdout).map_err(|e| MeterError::NoReading {
            target: self.target(),
            detail: format!(
                "{e} ({:?})",
                out.stdout.chars().take(80).collect::<String>()
            ),
        })?;
        crate::plausible(node_w, &self.target())?;
        Ok(NodeReading {
            node_w,
            supplies_w: vec![],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_watts_with_their_unit() {
        assert_eq!(parse_watts("1234.5\n"), Ok(1234.5));
        assert_eq!(parse_watts("power: 812 W"), Ok(812.0));
        assert_eq!(parse_watts("watts=640W"), Ok(640.0));
        assert_eq!(parse_watts("1.8 kW"), Ok(1800.0));
        assert_eq!(parse_watts("230 V 3.5 A 805 W"), Ok(805.0));
        assert_eq!(parse_watts("outlet 3: 230 V"), Ok(3.0));
        assert!(parse_watts("1,234 W").unwrap_err().contains("comma"));
        assert!(parse_watts("none here").is_err());
        assert_eq!(parse_watts("NaN 3"), Ok(3.0));
    }

    #[test]
    fn runs_with_a_timeout_and_names_failures() {
        let sh = |s: &str| vec!["sh".to_string(), "-c".to_string(), s.to_string()];
        let mut m = CommandMeter::new("m", &sh("echo 1500.25"), Duration::from_secs(5));
        assert_eq!(m.read().unwrap().node_w, 1500.25);
        let mut slow = CommandMeter::new("m", &sh("sleep 5; echo 1"), Duration::from_millis(200));
        let t = Instant::now();
        assert!(matches!(slow.read(), Err(MeterError::Timeout { .. })));
        assert!(t.elapsed() < Duration::from_secs(3));
        // A child left in the background holds the output open: the read
        // still ends at the timeout.
        let mut bg = CommandMeter::new("m", &sh("sleep 5 & echo 800"), Duration::from_millis(300));
        let t = Instant::now();
        assert!(matches!(bg.read(), Err(MeterError::Timeout { .. })));
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        // Output beyond a pipe's buffer is read whole.
        let mut big = CommandMeter::new(
            "m",
            &sh("echo 812; yes 1 | head -c 200000"),
            Duration::from_secs(5),
        );
        assert_eq!(big.read().unwrap().node_w, 812.0);
        let mut bad = CommandMeter::new("m", &sh("echo nope >&2; exit 3"), Duration::from_secs(5));
        let e = bad.read().unwrap_err().to_string();
        assert!(e.contains("nope") && e.contains('3'), "{e}");
        let mut quiet = CommandMeter::new("m", &sh("exit 4"), Duration::from_secs(5));
        let e = quiet.read().unwrap_err().to_string();
        assert!(!e.trim_end().ends_with(':'), "{e}");
        let mut missing = CommandMeter::new(
            "m",
            &["/nonexistent/meter".to_string()],
            Duration::from_secs(5),
        );
        assert!(matches!(
            missing.read(),
            Err(MeterError::Unreachable { .. })
        ));
        let mut empty = CommandMeter::new("m", &sh("echo hello"), Duration::from_secs(5));
        assert!(matches!(empty.read(), Err(MeterError::NoReading { .. })));
        for v in ["0", "-250", "1e300", "inf"] {
            let mut m = CommandMeter::new("m", &sh(&format!("echo {v}")), Duration::from_secs(5));
            assert!(matches!(m.read(), Err(MeterError::NoReading { .. })), "{v}");
        }
    }
}
