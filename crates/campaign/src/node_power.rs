//! `[[node_power]]` tables → validated [`NodePowerSpec`]s: one flat table
//! per source, its `kind` deciding which keys it may have. A password is
//! never accepted here, only the variable or file that holds it.

use crate::ctx::Ctx;
use crate::error::CampaignError;
use crate::model::{NodePowerKind, NodePowerSpec, RedfishAuth};
use crate::reach::SECRET_ENV_PREFIX;
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

const KINDS: &str = "redfish, ipmi, command, prometheus";

/// One `[[node_power]]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawNodePower {
    name: Spanned<String>,
    kind: Spanned<String>,
    interval_ms: Option<Spanned<f64>>,
    timeout_ms: Option<Spanned<f64>>,
    url: Option<Spanned<String>>,
    chassis: Option<Spanned<String>>,
    auth: Option<Spanned<String>>,
    user: Option<Spanned<String>>,
    password: Option<Spanned<toml::Value>>,
    password_env: Option<Spanned<String>>,
    password_file: Option<Spanned<String>>,
    insecure_tls: Option<Spanned<bool>>,
    ca_file: Option<Spanned<String>>,
    ipmitool: Option<Spanned<String>>,
    args: Option<Spanned<Vec<String>>>,
    command: Option<Spanned<Vec<String>>>,
    metric: Option<Spanned<String>>,
    labels: Option<Spanned<BTreeMap<String, String>>>,
}

/// Validates every source; names must be unique.
pub(crate) fn validate_all(
    ctx: &Ctx<'_>,
    raw: Vec<Spanned<RawNodePower>>,
) -> Result<Vec<NodePowerSpec>, CampaignError> {
    let mut out: Vec<NodePowerSpec> = Vec::new();
    for r in raw {
        let r = r.into_inner();
        let spec = validate(ctx, &r)?;
        if out.iter().any(|s| s.name == spec.name) {
            return Err(ctx.err(
                r.name.span(),
                "node_power.name",
                format!("two node_power sources are named `{}`", spec.name),
                Some("a unique name per source"),
            ));
        }
        out.push(spec);
    }
    Ok(out)
}

fn validate(ctx: &Ctx<'_>, r: &RawNodePower) -> Result<NodePowerSpec, CampaignError> {
    let name = r.name.get_ref().trim().to_string();
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(ctx.err(
            r.name.span(),
            "node_power.name",
            format!("`{name}` cannot name a source file"),
            Some("1 to 64 letters, digits, '-' and '_'"),
        ));
    }
    if let Some(p) = &r.password {
        return Err(ctx.err(
            p.span(),
            "node_power.password",
            "a password is never read from the campaign file (it would be copied into every run directory)",
            Some("password_env = \"VARIABLE\" or password_file = \"/path\""),
        ));
    }
    let interval_ms = ctx.ranged(
        &r.interval_ms,
        "node_power.interval_ms",
        1000.0,
        (50.0, 60_000.0),
        false,
    )?;
    let timeout_ms = ctx.ranged(
        &r.timeout_ms,
        "node_power.timeout_ms",
        2000.0,
        (10.0, 60_000.0),
        false,
    )?;
    let kind_name = r.kind.get_ref().as_str();
    let present = present_keys(r);
    let allowed: &[&str] = match kind_name {
        "redfish" => &[
            "url",
            "chassis",
            "auth",
            "user",
            "password_env",
            "password_file",
            "insecure_tls",
            "ca_file",
        ],
        "ipmi" => &["ipmitool", "args"],
        "command" => &["command"],
        "prometheus" => &["url", "metric", "labels"],
        other => {
            return Err(ctx.err(
                r.kind.span(),
                "node_power.kind",
                format!("unknown node power kind `{other}`"),
                Some(KINDS),
            ));
        }
    };
    if let Some((key, span)) = present.iter().find(|(k, _)| !allowed.contains(k)) {
        return Err(ctx.err(
            span.clone(),
            format!("node_power.{key}"),
            format!("`{key}` is not allowed in a `{kind_name}` source"),
            Some(&allowed.join(", ")),
        ));
    }
    no_nul(ctx, r)?;
    let kind = match kind_name {
        "redfish" => redfish(ctx, r)?,
        "ipmi" => ipmi(ctx, r)?,
        "command" => NodePowerKind::Command {
            command: non_empty_list(ctx, &r.command, "node_power.command", &r.kind)?,
        },
        _ => NodePowerKind::Prometheus {
            url: url(ctx, &r.url, &r.kind)?,
            metric: required(ctx, &r.metric, "node_power.metric", &r.kind)?,
            labels: r
                .labels
                .as_ref()
                .map(|l| l.get_ref().clone().into_iter().collect())
                .unwrap_or_default(),
        },
    };
    Ok(NodePowerSpec {
        name,
        interval_ms,
        timeout_ms,
        kind,
    })
}

fn redfish(ctx: &Ctx<'_>, r: &RawNodePower) -> Result<NodePowerKind, CampaignError> {
    let auth = match r.auth.as_ref().map(|a| a.get_ref().as_str()) {
        None | Some("basic") => RedfishAuth::Basic,
        Some("session") => RedfishAuth::Session,
        Some("none") => RedfishAuth::None,
        Some(other) => {
            let span = r.auth.as_ref().map(|a| a.span()).unwrap_or_default();
            return Err(ctx.err(
                span,
                "node_power.auth",
                format!("unknown authentication `{other}`"),
                Some("basic, session, none"),
            ));
        }
    };
    let has_password = r.password_env.is_some() || r.password_file.is_some();
    if r.password_env.is_some() && r.password_file.is_some() {
        let span = r
            .password_file
            .as_ref()
            .map(|a| a.span())
            .unwrap_or_default();
        return Err(ctx.err(
            span,
            "node_power.password_file",
            "give the password one way: password_env or password_file",
            None,
        ));
    }
    if auth != RedfishAuth::None && (r.user.is_none() || !has_password) {
        return Err(ctx.err(
            r.kind.span(),
            "node_power.user",
            format!(
                "`{}` authentication needs `user` and `password_env` or `password_file`",
                if auth == RedfishAuth::Basic {
                    "basic"
                } else {
                    "session"
                }
            ),
            Some("auth = \"none\" for a service without credentials"),
        ));
    }
    let url = url(ctx, &r.url, &r.kind)?;
    credential_checks(ctx, r, auth)?;
    let insecure_tls = r
        .insecure_tls
        .as_ref()
        .map(|b| *b.get_ref())
        .unwrap_or(false);
    let tls_key = r
        .insecure_tls
        .as_ref()
        .filter(|b| *b.get_ref())
        .map(|b| b.span())
        .or_else(|| r.ca_file.as_ref().map(|c| c.span()));
    if let Some(span) = tls_key
        && !url.starts_with("https://")
    {
        return Err(ctx.err(
            span,
            "node_power.url",
            "insecure_tls and ca_file only apply to an https:// address",
            None,
        ));
    }
    if insecure_tls && r.ca_file.is_some() {
        let span = r.ca_file.as_ref().map(|c| c.span()).unwrap_or_default();
        return Err(ctx.err(
            span,
            "node_power.ca_file",
            "ca_file verifies the certificate; insecure_tls skips verification: choose one",
            None,
        ));
    }
    Ok(NodePowerKind::Redfish {
        url,
        chassis: r.chassis.as_ref().map(|c| c.get_ref().clone()),
        auth,
        user: r.user.as_ref().map(|u| u.get_ref().clone()),
        password_env: r.password_env.as_ref().map(|u| u.get_ref().clone()),
        password_file: r.password_file.as_ref().map(|u| u.get_ref().clone()),
        insecure_tls,
        ca_file: r.ca_file.as_ref().map(|u| u.get_ref().clone()),
    })
}

/// A password only from a variable declared for powerlab, and never
/// over unverified TLS.
fn credential_checks(
    ctx: &Ctx<'_>,
    r: &RawNodePower,
    auth: RedfishAuth,
) -> Result<(), CampaignError> {
    if let Some(var) = &r.password_env
        && !var.get_ref().starts_with(SECRET_ENV_PREFIX)
    {
        return Err(ctx.err(
            var.span(),
            "node_power.password_env",
            format!(
                "`{}` is not a variable declared for powerlab: a campaign reads a password only from a variable named {SECRET_ENV_PREFIX}* (so a shared campaign cannot send another variable's value, a cloud token, to its address)",
                powerlab_core::words::shown(var.get_ref())
            ),
            Some(&format!("password_env = \"{SECRET_ENV_PREFIX}BMC\", with `export {SECRET_ENV_PREFIX}BMC=…` before the run")),
        ));
    }
    if auth != RedfishAuth::None
        && let Some(b) = r.insecure_tls.as_ref().filter(|b| *b.get_ref())
    {
        return Err(ctx.err(
            b.span(),
            "node_power.insecure_tls",
            "a password is never sent over unverified TLS: whoever answers at the address would receive it",
            Some("ca_file = \"/path/bmc.pem\" (the BMC's own certificate, which then is verified), or auth = \"none\""),
        ));
    }
    Ok(())
}

fn ipmi(ctx: &Ctx<'_>, r: &RawNodePower) -> Result<NodePowerKind, CampaignError> {
    let args = r
        .args
        .as_ref()
        .map(|a| a.get_ref().clone())
        .unwrap_or_default();
    // -P<password>, -k<Kg key>, -y<hex Kg key>: secrets on the command
    // line, in the campaign file and in every run directory's manifest.
    if let Some(a) = &r.args
        && a.get_ref()
            .iter()
            .any(|x| ["-P", "-k", "-y"].iter().any(|f| x.starts_with(f)))
    {
        return Err(ctx.err(
            a.span(),
            "node_power.args",
            "-P, -k and -y would put an IPMI secret in the campaign file, every run's manifest and the process list",
            Some("-E (password from IPMI_PASSWORD), -f <password file>, -K (Kg key from IPMI_KGKEY)"),
        ));
    }
    Ok(NodePowerKind::Ipmi {
        ipmitool: r
            .ipmitool
            .as_ref()
            .map(|i| i.get_ref().clone())
            .unwrap_or_else(|| "ipmitool".into()),
        args,
    })
}

fn url(
    ctx: &Ctx<'_>,
    v: &Option<Spanned<String>>,
    kind: &Spanned<String>,
) -> Result<String, CampaignError> {
    let u = required(ctx, v, "node_power.url", kind)?;
    if !(u.starts_with("http://") || u.starts_with("https://")) || u.contains('@') {
        let span = v.as_ref().map(|s| s.span()).unwrap_or_default();
        // Whatever sits before an '@' may be a password: never echoed.
        let shown = match u.rfind('@') {
            Some(i) => format!("…@{}", &u[i + 1..]),
            None => u.clone(),
        };
        return Err(ctx.err(
            span,
            "node_power.url",
            format!("`{shown}` is not an http:// or https:// address without credentials"),
            Some("http://host[:port][/path] or https://…; credentials go in user and password_env"),
        ));
    }
    Ok(u.trim_end_matches('/').to_string())
}

fn required(
    ctx: &Ctx<'_>,
    v: &Option<Spanned<String>>,
    field: &str,
    kind: &Spanned<String>,
) -> Result<String, CampaignError> {
    match v {
        Some(s) if !s.get_ref().trim().is_empty() => Ok(s.get_ref().trim().to_string()),
        Some(s) => Err(ctx.err(s.span(), field, "must not be empty", None)),
        None => Err(ctx.err(
            kind.span(),
            field,
            format!("a `{}` source needs `{}`", kind.get_ref(), &field[11..]),
            None,
        )),
    }
}

fn non_empty_list(
    ctx: &Ctx<'_>,
    v: &Option<Spanned<Vec<String>>>,
    field: &str,
    kind: &Spanned<String>,
) -> Result<Vec<String>, CampaignError> {
    match v {
        Some(s) if !s.get_ref().is_empty() && !s.get_ref()[0].is_empty() => Ok(s.get_ref().clone()),
        Some(s) => Err(ctx.err(s.span(), field, "needs a program name first", None)),
        None => Err(ctx.err(
            kind.span(),
            field,
            format!("a `{}` source needs `{}`", kind.get_ref(), &field[11..]),
            Some("command = [\"program\", \"arg\", …]"),
        )),
    }
}

/// The kind-specific keys present in a table, with their spans.
fn present_keys(r: &RawNodePower) -> Vec<(&'static str, std::ops::Range<usize>)> {
    let mut v = Vec::new();
    let mut add = |k: &'static str, s: Option<std::ops::Range<usize>>| {
        if let Some(s) = s {
            v.push((k, s));
        }
    };
    add("url", r.url.as_ref().map(|x| x.span()));
    add("chassis", r.chassis.as_ref().map(|x| x.span()));
    add("auth", r.auth.as_ref().map(|x| x.span()));
    add("user", r.user.as_ref().map(|x| x.span()));
    add("password_env", r.password_env.as_ref().map(|x| x.span()));
    add("password_file", r.password_file.as_ref().map(|x| x.span()));
    add("insecure_tls", r.insecure_tls.as_ref().map(|x| x.span()));
    add("ca_file", r.ca_file.as_ref().map(|x| x.span()));
    add("ipmitool", r.ipmitool.as_ref().map(|x| x.span()));
    add("args", r.args.as_ref().map(|x| x.span()));
    add("command", r.command.as_ref().map(|x| x.span()));
    add("metric", r.metric.as_ref().map(|x| x.span()));
    add("labels", r.labels.as_ref().map(|x| x.span()));
    v
}

/// Refuses a key whose text holds a NUL byte.
fn no_nul(ctx: &Ctx<'_>, r: &RawNodePower) -> Result<(), CampaignError> {
    match nul_key(r) {
        Some((key, span)) => Err(ctx.err(
            span,
            format!("node_power.{key}"),
            "holds a NUL byte, which no program or address can be given",
            None,
        )),
        None => Ok(()),
    }
}

/// The first key whose text holds a NUL byte.
fn nul_key(r: &RawNodePower) -> Option<(&'static str, std::ops::Range<usize>)> {
    let nul = |s: &str| s.contains('\0');
    let one =
        |v: &Option<Spanned<String>>| v.as_ref().filter(|s| nul(s.get_ref())).map(|s| s.span());
    let many = |v: &Option<Spanned<Vec<String>>>| {
        v.as_ref()
            .filter(|s| s.get_ref().iter().any(|w| nul(w)))
            .map(|s| s.span())
    };
    [
        ("url", one(&r.url)),
        ("password_env", one(&r.password_env)),
        ("password_file", one(&r.password_file)),
        ("ca_file", one(&r.ca_file)),
        ("ipmitool", one(&r.ipmitool)),
        ("args", many(&r.args)),
        ("command", many(&r.command)),
    ]
    .into_iter()
    .find_map(|(k, s)| s.map(|s| (k, s)))
}
