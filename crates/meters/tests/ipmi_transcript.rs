#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! The IPMI path against recorded `ipmitool dcmi power reading` output
//! (`tests/transcripts/`), played back by a stand-in `ipmitool` that also
//! records the arguments it was given.

use powerlab_core::{MeterError, NodeMeter};
use powerlab_meters::{IpmiMeter, parse_dcmi_reading};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn transcript(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/transcripts")
        .join(name)
}

/// A stand-in ipmitool: prints `stdout`, prints `stderr` to standard
/// error, exits with `code`, and writes its arguments to `args.txt`.
fn fake_ipmitool(dir: &Path, stdout: &str, stderr: Option<&str>, code: i32) -> String {
    let script = dir.join("ipmitool");
    let err = stderr
        .map(|e| format!("cat '{}' >&2\n", transcript(e).display()))
        .unwrap_or_default();
    let out = if stdout.is_empty() {
        String::new()
    } else {
        format!("cat '{}'\n", transcript(stdout).display())
    };
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$@\" > '{}'\n{out}{err}exit {code}\n",
            dir.join("args.txt").display()
        ),
    )
    .unwrap();
    let mut perm = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&script, perm).unwrap();
    script.display().to_string()
}

#[test]
fn reads_the_instantaneous_power_of_a_recorded_answer() {
    let text = std::fs::read_to_string(transcript("dcmi-activated.txt")).unwrap();
    assert_eq!(parse_dcmi_reading(&text), Ok(3412.0));
    let dir = tempfile::tempdir().unwrap();
    let tool = fake_ipmitool(dir.path(), "dcmi-activated.txt", None, 0);
    let args: Vec<String> = ["-I", "lanplus", "-H", "10.0.0.5", "-U", "admin", "-E"]
        .map(String::from)
        .to_vec();
    let mut m = IpmiMeter::new("bmc", &tool, &args, Duration::from_secs(5));
    let r = m.read().unwrap();
    assert_eq!(r.node_w, 3412.0);
    let called = std::fs::read_to_string(dir.path().join("args.txt")).unwrap();
    assert_eq!(
        called.trim(),
        "-I lanplus -H 10.0.0.5 -U admin -E dcmi power reading"
    );
}

#[test]
fn a_deactivated_reading_is_an_error_not_zero_watts() {
    let text = std::fs::read_to_string(transcript("dcmi-deactivated.txt")).unwrap();
    let e = parse_dcmi_reading(&text).unwrap_err();
    assert!(e.contains("deactivated"), "{e}");
    let dir = tempfile::tempdir().unwrap();
    let tool = fake_ipmitool(dir.path(), "dcmi-deactivated.txt", None, 0);
    let mut m = IpmiMeter::new("bmc", &tool, &[], Duration::from_secs(5));
    assert!(matches!(m.read(), Err(MeterError::NoReading { .. })));
}

#[test]
fn refused_credentials_are_named_as_such() {
    for stderr in ["lanplus-bad-user.stderr", "lanplus-bad-password.stderr"] {
        let dir = tempfile::tempdir().unwrap();
        let tool = fake_ipmitool(dir.path(), "", Some(stderr), 1);
        let mut m = IpmiMeter::new("bmc", &tool, &[], Duration::from_secs(5));
        let e = m.read().unwrap_err();
        // "unauthorized name" is an authentication failure; a bare
        // "Unable to establish … session" may be the network as well.
        if stderr.contains("user") {
            assert!(matches!(e, MeterError::Auth { .. }), "{e:?}");
        } else {
            assert!(matches!(e, MeterError::Unreachable { .. }), "{e:?}");
        }
        assert!(e.to_string().contains("RMCP+"), "{e}");
    }
}
