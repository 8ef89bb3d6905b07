//! A command that prints the node's watts: the first number on its
//! standard output. Also the process runner under the IPMI meter: every
//! run has the source's timeout and is killed when it passes it.

use powerlab_core::{MeterError, NodeMeter, NodeReading};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;
use wait_timeout::ChildExt;

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

/// Runs `argv` with a timeout; a non-zero exit is an error carrying the
/// last line of its standard error.
pub(crate) fn run(argv: &[String], timeout: Duration) -> Result<Output, MeterError> {
    let target = argv.first().cloned().unwrap_or_default();
    let mut child = Command::new(&target)
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| MeterError::Unreachable {
            target: target.clone(),
            detail: format!("cannot start it: {e}"),
        })?;
    let status = match child.wait_timeout(timeout) {
        Ok(Some(s)) => s,
        Ok(None) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(MeterError::Timeout {
                target,
                timeout_ms: timeout.as_millis() as u64,
            });
        }
        Err(e) => {
            let _ = child.kill();
            return Err(MeterError::Unreachable {
                target,
                detail: format!("cannot wait for it: {e}"),
            });
        }
    };
    let mut stdout = String::new();
    let mut stderr = String::new();
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut stdout);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    if !status.success() {
        // The last few lines of its standard error say why.
        let lines: Vec<&str> = stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let tail = lines[lines.len().saturating_sub(3)..].join(" / ");
        return Err(MeterError::Unreachable {
            target,
            detail: format!("exited with {status}: {tail}"),
        });
    }
    Ok(Output { stdout, stderr })
}

/// The first number in `text` (a token that parses as a finite float).
pub fn first_number(text: &str) -> Option<f64> {
    text.split(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == '=')
        .filter_map(|t| t.trim_end_matches('W').parse::<f64>().ok())
        .find(|x| x.is_finite())
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
        let node_w = first_number(&out.stdout).ok_or_else(|| MeterError::NoReading {
            target: self.target(),
            detail: format!(
                "no number on its output ({:?})",
                out.stdout.chars().take(80).collect::<String>()
            ),
        })?;
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
    fn finds_the_first_number() {
        assert_eq!(first_number("1234.5\n"), Some(1234.5));
        assert_eq!(first_number("power: 812 W"), Some(812.0));
        assert_eq!(first_number("watts=640W"), Some(640.0));
        assert_eq!(first_number("none here"), None);
        assert_eq!(first_number("NaN 3"), Some(3.0));
    }

    #[test]
    fn runs_with_a_timeout_and_names_failures() {
        let sh = |s: &str| vec!["sh".to_string(), "-c".to_string(), s.to_string()];
        let mut m = CommandMeter::new("m", &sh("echo 1500.25"), Duration::from_secs(5));
        assert_eq!(m.read().unwrap().node_w, 1500.25);
        let mut slow = CommandMeter::new("m", &sh("sleep 5; echo 1"), Duration::from_millis(200));
        let t = std::time::Instant::now();
        assert!(matches!(slow.read(), Err(MeterError::Timeout { .. })));
        assert!(t.elapsed() < Duration::from_secs(3));
        let mut bad = CommandMeter::new("m", &sh("echo nope >&2; exit 3"), Duration::from_secs(5));
        let e = bad.read().unwrap_err().to_string();
        assert!(e.contains("nope") && e.contains('3'), "{e}");
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
    }
}
