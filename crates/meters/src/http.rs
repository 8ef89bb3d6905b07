//! The one HTTP client of the meters (ureq, blocking, rustls): an agent
//! with a timeout on every request and the source's TLS choice, and the
//! mapping of its errors onto [`MeterError`].

use powerlab_core::MeterError;
use std::time::Duration;
use ureq::tls::{Certificate, RootCerts, TlsConfig};

/// How to treat the server's certificate.
pub(crate) enum Tls<'a> {
    /// The public roots (the default).
    Verify,
    /// Trust this PEM file (a BMC's self-signed certificate).
    CaFile(&'a str),
    /// Accept any certificate (opt-in per source).
    Insecure,
}

pub(crate) fn agent(timeout: Duration, tls: Tls<'_>) -> Result<ureq::Agent, MeterError> {
    let tls_config = match tls {
        Tls::Verify => TlsConfig::builder().build(),
        Tls::Insecure => TlsConfig::builder().disable_verification(true).build(),
        Tls::CaFile(path) => {
            let pem = std::fs::read(path).map_err(|e| {
                MeterError::Config(format!("cannot read the certificate file `{path}`: {e}"))
            })?;
            let cert = Certificate::from_pem(&pem).map_err(|e| {
                MeterError::Config(format!("`{path}` holds no PEM certificate: {e}"))
            })?;
            TlsConfig::builder()
                .root_certs(RootCerts::Specific(std::sync::Arc::new(vec![cert])))
                .build()
        }
    };
    Ok(ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(true)
        // A redirect is said, not followed: following one drops the
        // credentials (to another host, rightly), which would then read
        // as refused credentials.
        .max_redirects(0)
        .tls_config(tls_config)
        .build()
        .new_agent())
}

/// A ureq error as a meter error about `target`.
pub(crate) fn meter_error(e: ureq::Error, target: &str, timeout: Duration) -> MeterError {
    let target = target.to_string();
    match e {
        ureq::Error::StatusCode(c @ (401 | 403)) => MeterError::Auth {
            target,
            detail: format!("HTTP {c}"),
        },
        ureq::Error::Timeout(_) => MeterError::Timeout {
            target,
            timeout_ms: timeout.as_millis() as u64,
        },
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => MeterError::Timeout {
            target,
            timeout_ms: timeout.as_millis() as u64,
        },
        ureq::Error::StatusCode(c) => MeterError::Unreachable {
            target,
            detail: format!("HTTP {c}"),
        },
        ureq::Error::ConnectionFailed => MeterError::Unreachable {
            target,
            detail: "connection refused or failed".into(),
        },
        ureq::Error::HostNotFound => MeterError::Unreachable {
            target,
            detail: "host not found".into(),
        },
        other => MeterError::Unreachable {
            target,
            detail: other.to_string(),
        },
    }
}

/// GET a page as text.
pub(crate) fn get_text(
    agent: &ureq::Agent,
    url: &str,
    headers: &[(&str, String)],
    timeout: Duration,
) -> Result<String, MeterError> {
    let mut req = agent.get(url);
    for (k, v) in headers {
        req = req.header(*k, v.as_str());
    }
    let mut resp = req.call().map_err(|e| meter_error(e, url, timeout))?;
    if resp.status().is_redirection() {
        let to = resp
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("?")
            .to_string();
        return Err(MeterError::Unreachable {
            target: url.to_string(),
            detail: format!(
                "HTTP {} redirects to {to}: put the address it redirects to in the campaign's url",
                resp.status().as_u16()
            ),
        });
    }
    resp.body_mut()
        .read_to_string()
        .map_err(|e| meter_error(e, url, timeout))
}
