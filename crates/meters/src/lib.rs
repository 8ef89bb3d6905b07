//! Meters of the node's own power, the campaign's `[[node_power]]` sources:
//! a BMC over Redfish (chassis and power supplies, discovered from the
//! service root), `ipmitool dcmi power reading`, a command that prints
//! watts, and a Prometheus text endpoint (a PDU's exporter). Each is a
//! [`NodeMeter`]: one blocking read with a timeout on every request.
//! This crate owns the protocols and their parsing; when to read and
//! where the rows go belong to the runner. Credentials come from an
//! environment variable or a file, are held in memory only, and never
//! appear in a target, a message or a row.

mod command;
mod http;
mod ipmi;
mod prometheus;
mod redfish;
mod secret;

pub use command::{CommandMeter, parse_watts};
pub use ipmi::{IpmiMeter, parse_dcmi_reading};
pub use prometheus::{PrometheusMeter, parse_metric};
pub use redfish::RedfishMeter;

use powerlab_campaign::{NodePowerKind, NodePowerSpec};
use powerlab_core::{MeterError, NodeMeter};
use std::time::Duration;

/// Opens the meter a campaign declares. Nothing is read yet: a
/// configuration that cannot work (a credential variable that is unset,
/// an unreadable certificate file) fails here.
///
/// # Errors
///
/// Returns [`MeterError::Config`] naming the source and what to fix.
pub fn open(spec: &NodePowerSpec) -> Result<Box<dyn NodeMeter>, MeterError> {
    let timeout = Duration::from_secs_f64(spec.timeout_ms / 1000.0);
    Ok(match &spec.kind {
        NodePowerKind::Redfish { .. } => {
            Box::new(RedfishMeter::new(&spec.name, &spec.kind, timeout)?)
        }
        NodePowerKind::Ipmi { ipmitool, args } => {
            Box::new(IpmiMeter::new(&spec.name, ipmitool, args, timeout))
        }
        NodePowerKind::Command { command } => {
            Box::new(CommandMeter::new(&spec.name, command, timeout))
        }
        NodePowerKind::Prometheus {
            url,
            metric,
            labels,
        } => Box::new(PrometheusMeter::new(
            &spec.name, url, metric, labels, timeout,
        )),
    })
}

/// A reading that can be a running node's power
/// ([`powerlab_core::meter::is_plausible_node_w`]).
///
/// # Errors
///
/// [`MeterError::NoReading`] naming the value.
pub fn plausible(w: f64, target: &str) -> Result<f64, MeterError> {
    if powerlab_core::meter::is_plausible_node_w(w) {
        Ok(w)
    } else {
        Err(MeterError::NoReading {
            target: target.to_string(),
            detail: format!(
                "{w} W is not the power of a running node (allowed: above 0, at most {} W)",
                powerlab_core::meter::MAX_NODE_W
            ),
        })
    }
}

/// Opens and reads a source once: the preflight's check that it is
/// reachable, accepts its credentials and returns a number.
///
/// # Errors
///
/// Returns the [`MeterError`] of the open or of the read.
pub fn probe(spec: &NodePowerSpec) -> Result<powerlab_core::NodeReading, MeterError> {
    let mut m = open(spec)?;
    m.read()
}
