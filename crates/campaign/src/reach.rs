//! What a campaign reaches outside the harness: every program it starts
//! (a workload phase's command, a `[[node_power]]` command, the IPMI
//! tool), with its environment and directory, every address it reads and
//! every secret it reads (the variable or file, never the value). `validate`
//! and `plan` list it; `run` and `preflight` start none of it without the
//! user's consent. Every string is shown with its control characters
//! escaped ([`powerlab_core::words::shown`]), so a carriage return or an
//! ANSI sequence cannot show one command while another runs.

use crate::model::{Campaign, NodePowerKind, PhaseKind, RedfishAuth};
use serde::Serialize;

/// The prefix of every variable a campaign may read a secret from: a
/// variable the user named for powerlab, never one that merely exists
/// (a cloud token, a CI secret).
pub const SECRET_ENV_PREFIX: &str = "POWERLAB_SECRET_";

/// Who in the campaign reaches out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReachKind {
    /// A workload phase's command.
    Workload,
    /// A `[[node_power]]` source of kind `command`.
    NodePowerCommand,
    /// A `[[node_power]]` source of kind `ipmi`: the IPMI tool it runs.
    Ipmi,
    /// A `[[node_power]]` source of kind `redfish`.
    Redfish,
    /// A `[[node_power]]` source of kind `prometheus`.
    Prometheus,
}

impl ReachKind {
    /// As `plan` shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            ReachKind::Workload => "workload",
            ReachKind::NodePowerCommand => "node_power command",
            ReachKind::Ipmi => "node_power ipmi",
            ReachKind::Redfish => "node_power redfish",
            ReachKind::Prometheus => "node_power prometheus",
        }
    }

    /// Whether it starts a program (rather than reading an address).
    pub fn is_program(self) -> bool {
        matches!(
            self,
            ReachKind::Workload | ReachKind::NodePowerCommand | ReachKind::Ipmi
        )
    }
}

/// Where a secret is read from: its name, never its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "from", content = "name")]
pub enum SecretSource {
    /// An environment variable powerlab reads.
    Env(String),
    /// A file whose first line powerlab reads.
    File(String),
    /// A variable the program itself reads (`ipmitool -E`, `-K`).
    ProgramEnv(String),
    /// A file the program itself reads (`ipmitool -f FILE`).
    ProgramFile(String),
}

/// One thing the campaign reaches: a program or an address.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Reach {
    /// Who.
    pub kind: ReachKind,
    /// The phase or source that names it.
    pub name: String,
    /// The program and its arguments (programs only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Variables added to the program's environment (a workload's `env`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<(String, String)>,
    /// Its working directory (None: powerlab's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The address it reads (sources over HTTP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// How the server's certificate is checked, in words (https only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<String>,
    /// Where its secrets come from.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub secrets: Vec<SecretSource>,
}

impl Reach {
    fn new(kind: ReachKind, name: &str) -> Reach {
        Reach {
            kind,
            name: name.to_string(),
            command: Vec::new(),
            env: Vec::new(),
            cwd: None,
            url: None,
            tls: None,
            secrets: Vec::new(),
        }
    }

    /// The files powerlab itself reads a password from.
    pub fn secret_files(&self) -> impl Iterator<Item = &str> {
        self.secrets.iter().filter_map(|s| match s {
            SecretSource::File(f) => Some(f.as_str()),
            _ => None,
        })
    }
}

/// Every program the campaign's workload phases start, and every node
/// power source (programs and addresses), in the file's order.
pub fn reaches(c: &Campaign) -> Vec<Reach> {
    let mut out: Vec<Reach> = workloads(c);
    out.extend(node_power(c));
    out
}

/// The workload phases' commands.
pub fn workloads(c: &Campaign) -> Vec<Reach> {
    c.phases
        .iter()
        .filter(|p| p.kind == PhaseKind::Workload)
        .filter_map(|p| {
            let w = p.workload.as_ref()?;
            let mut r = Reach::new(ReachKind::Workload, &p.name);
            r.command = w.command.clone();
            r.env = w.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            r.cwd = w.cwd.clone();
            Some(r)
        })
        .collect()
}

/// The `[[node_power]]` sources.
pub fn node_power(c: &Campaign) -> Vec<Reach> {
    c.node_power
        .iter()
        .map(|s| match &s.kind {
            NodePowerKind::Command { command } => {
                let mut r = Reach::new(ReachKind::NodePowerCommand, &s.name);
                r.command = command.clone();
                r
            }
            NodePowerKind::Ipmi { ipmitool, args } => {
                let mut r = Reach::new(ReachKind::Ipmi, &s.name);
                r.command = std::iter::once(ipmitool.clone())
                    .chain(args.iter().cloned())
                    .chain(["dcmi", "power", "reading"].map(String::from))
                    .collect();
                r.secrets = ipmi_secrets(args);
                r
            }
            NodePowerKind::Redfish {
                url,
                auth,
                password_env,
                password_file,
                insecure_tls,
                ca_file,
                ..
            } => {
                let mut r = Reach::new(ReachKind::Redfish, &s.name);
                r.url = Some(url.clone());
                r.tls = tls_words(url, *insecure_tls, ca_file.as_deref());
                if *auth != RedfishAuth::None {
                    r.secrets
                        .extend(password_env.clone().map(SecretSource::Env));
                    r.secrets
                        .extend(password_file.clone().map(SecretSource::File));
                }
                r
            }
            NodePowerKind::Prometheus { url, .. } => {
                let mut r = Reach::new(ReachKind::Prometheus, &s.name);
                r.url = Some(url.clone());
                r.tls = tls_words(url, false, None);
                r
            }
        })
        .collect()
}

fn tls_words(url: &str, insecure: bool, ca_file: Option<&str>) -> Option<String> {
    if !url.starts_with("https://") {
        return url
            .starts_with("http://")
            .then(|| "none (plain http: readable on the network)".to_string());
    }
    Some(match (insecure, ca_file) {
        (true, _) => "NOT VERIFIED (insecure_tls = true)".into(),
        (false, Some(f)) => format!("verified against the certificate in {f}"),
        (false, None) => "verified against the system's public roots".into(),
    })
}

/// The secrets `ipmitool`'s own options make it read.
fn ipmi_secrets(args: &[String]) -> Vec<SecretSource> {
    let mut out = Vec::new();
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-E" => out.push(SecretSource::ProgramEnv("IPMI_PASSWORD".into())),
            "-K" => out.push(SecretSource::ProgramEnv("IPMI_KGKEY".into())),
            "-f" => {
                if let Some(f) = it.next() {
                    out.push(SecretSource::ProgramFile(f.clone()));
                }
            }
            x if x.starts_with("-f") && x.len() > 2 => {
                out.push(SecretSource::ProgramFile(x[2..].to_string()));
            }
            _ => {}
        }
    }
    out
}

/// A string as `plan` shows it: quoted, its control characters escaped.
pub fn quoted(s: &str) -> String {
    format!(
        "\"{}\"",
        powerlab_core::words::shown(s).replace('"', "\\\"")
    )
}

/// The list in words, one line per program, address, variable or secret
/// (indented under its first line), every string [`quoted`].
pub fn lines(list: &[Reach]) -> Vec<String> {
    let mut out = Vec::new();
    for r in list {
        let what = if r.kind.is_program() { "runs" } else { "reads" };
        out.push(format!("{} {}: {what}", r.kind.as_str(), quoted(&r.name)));
        if !r.command.is_empty() {
            let words: Vec<String> = r.command.iter().map(|w| quoted(w)).collect();
            out.push(format!("    program: [{}]", words.join(", ")));
        }
        for (k, v) in &r.env {
            out.push(format!("    env: {}={}", quoted(k), quoted(v)));
        }
        if r.kind.is_program() {
            out.push(format!(
                "    cwd: {}",
                r.cwd
                    .as_deref()
                    .map_or_else(|| "(powerlab's own)".to_string(), quoted)
            ));
        }
        if let Some(u) = &r.url {
            out.push(format!("    url: {}", quoted(u)));
        }
        if let Some(t) = &r.tls {
            out.push(format!("    tls: {}", powerlab_core::words::shown(t)));
        }
        for s in &r.secrets {
            out.push(match s {
                SecretSource::Env(v) => {
                    format!("    secret: the variable {} (sent to the url)", quoted(v))
                }
                SecretSource::File(f) => format!(
                    "    secret: the first line of the file {} (sent to the url)",
                    quoted(f)
                ),
                SecretSource::ProgramEnv(v) => {
                    format!(
                        "    secret: the variable {} (read by the program)",
                        quoted(v)
                    )
                }
                SecretSource::ProgramFile(f) => {
                    format!("    secret: the file {} (read by the program)", quoted(f))
                }
            });
        }
    }
    out
}

/// The heading of [`lines`]: what the campaign reaches, and how `run` and
/// `preflight` are allowed to start it. None when it reaches nothing.
pub fn heading(list: &[Reach]) -> Option<String> {
    if list.is_empty() {
        return None;
    }
    let programs = list.iter().filter(|r| r.kind.is_program()).count();
    let addresses = list.iter().filter(|r| r.url.is_some()).count();
    let secrets: usize = list.iter().map(|r| r.secrets.len()).sum();
    Some(format!(
        "this campaign runs {programs} program(s), reads {addresses} address(es) and {secrets} secret source(s); `run` and `preflight` start them only with --allow-programs (or a yes typed on a terminal), and read a password file only if --secret-file names it:"
    ))
}
