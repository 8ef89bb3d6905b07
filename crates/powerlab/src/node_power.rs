//! The node's own power meters at the command line: the preflight's check
//! of every `[[node_power]]` source (reachable, authenticated, returns a
//! number), and opening them for the run.

use powerlab_campaign::{NodePowerKind, NodePowerSpec};
use powerlab_core::NodeMeter;
use powerlab_core::units::s_to_ms;
use serde::Serialize;

/// One source's preflight result.
#[derive(Debug, Clone, Serialize)]
pub struct SourceCheck {
    /// Source name.
    pub name: String,
    /// Its kind.
    pub kind: &'static str,
    /// Where it reads (no credentials).
    pub target: String,
    /// The reading, W (None: failed).
    pub node_w: Option<f64>,
    /// Power supplies in the answer.
    pub supplies: usize,
    /// How long the answer took, ms.
    pub answer_ms: f64,
    /// Why it failed.
    pub error: Option<String>,
}

/// The sources as this node reads them: `{node}` (the node id: a rack
/// label, or the host) and `{host}` (the host name) replaced in addresses,
/// commands and ipmitool arguments, so that one campaign serves every node
/// of a rack (`url = "https://{host}-bmc"`).
pub fn for_node(specs: &[NodePowerSpec], node: &str, host: &str) -> Vec<NodePowerSpec> {
    let sub = |s: &str| s.replace("{node}", node).replace("{host}", host);
    specs
        .iter()
        .map(|spec| {
            let mut out = spec.clone();
            match &mut out.kind {
                NodePowerKind::Redfish { url, .. } | NodePowerKind::Prometheus { url, .. } => {
                    *url = sub(url);
                }
                NodePowerKind::Ipmi { args, .. } => args.iter_mut().for_each(|a| *a = sub(a)),
                NodePowerKind::Command { command } => {
                    command.iter_mut().for_each(|a| *a = sub(a));
                }
            }
            out
        })
        .collect()
}

/// Reads every source once, all at once (the slowest source's timeout
/// bounds the wait).
pub fn check_all(specs: &[NodePowerSpec]) -> Vec<SourceCheck> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = specs.iter().map(|s| scope.spawn(|| check(s))).collect();
        handles
            .into_iter()
            .zip(specs)
            .map(|(h, s)| {
                h.join().unwrap_or_else(|_| SourceCheck {
                    name: s.name.clone(),
                    kind: s.kind.as_str(),
                    target: String::new(),
                    node_w: None,
                    supplies: 0,
                    answer_ms: 0.0,
                    error: Some("the check failed unexpectedly".into()),
                })
            })
            .collect()
    })
}

fn check(spec: &NodePowerSpec) -> SourceCheck {
    let t0 = std::time::Instant::now();
    let mut out = SourceCheck {
        name: spec.name.clone(),
        kind: spec.kind.as_str(),
        target: String::new(),
        node_w: None,
        supplies: 0,
        answer_ms: 0.0,
        error: None,
    };
    match powerlab_meters::open(spec) {
        Err(e) => out.error = Some(e.to_string()),
        Ok(mut m) => {
            out.target = m.target();
            match m.read() {
                Ok(r) => {
                    out.node_w = Some(r.node_w);
                    out.supplies = r.supplies_w.len();
                }
                Err(e) => out.error = Some(e.to_string()),
            }
        }
    }
    out.answer_ms = s_to_ms(t0.elapsed().as_secs_f64());
    out
}

/// One line per source, for the terminal.
pub fn lines(checks: &[SourceCheck]) -> Vec<String> {
    checks
        .iter()
        .map(|c| match (&c.node_w, &c.error) {
            (Some(w), _) => format!(
                "  node_power {:<12} pass     {} {}: {w:.1} W{} in {:.0} ms",
                c.name,
                c.kind,
                c.target,
                if c.supplies > 0 {
                    format!(", {} power supplies", c.supplies)
                } else {
                    String::new()
                },
                c.answer_ms
            ),
            (None, e) => format!(
                "  node_power {:<12} FAIL     {}: {}",
                c.name,
                c.kind,
                e.as_deref().unwrap_or("no reading")
            ),
        })
        .collect()
}

/// The failing sources, named, with what to do; None when all passed.
pub fn failure(checks: &[SourceCheck]) -> Option<String> {
    let bad: Vec<String> = checks
        .iter()
        .filter(|c| c.node_w.is_none())
        .map(|c| {
            format!(
                "`{}` ({}): {}",
                c.name,
                c.kind,
                c.error.as_deref().unwrap_or("no reading")
            )
        })
        .collect();
    (!bad.is_empty()).then(|| {
        format!(
            "preflight: node power source failed: {}. Fix the address or credentials, or remove the [[node_power]] table from the campaign; --allow-unhealthy runs with the source failing (its failures are recorded)",
            bad.join("; ")
        )
    })
}

/// Opens every source for the run.
///
/// # Errors
///
/// The first source whose configuration cannot work, named.
pub fn open_all(specs: &[NodePowerSpec]) -> Result<Vec<Box<dyn NodeMeter>>, String> {
    specs
        .iter()
        .map(|s| {
            powerlab_meters::open(s).map_err(|e| format!("node power source `{}`: {e}", s.name))
        })
        .collect()
}
