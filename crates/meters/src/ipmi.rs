//! `ipmitool … dcmi power reading`: the lowest common denominator of BMC
//! power, in-band (`/dev/ipmi0`) or over LAN (`-I lanplus -H …`). The
//! password reaches ipmitool through `-E` (`IPMI_PASSWORD`) or `-f file`,
//! never through the campaign.

use crate::command::run;
use powerlab_core::{MeterError, NodeMeter, NodeReading};
use std::time::Duration;

/// An IPMI DCMI meter.
pub struct IpmiMeter {
    name: String,
    argv: Vec<String>,
    timeout: Duration,
}

impl IpmiMeter {
    /// From an `ipmi` source: `ipmitool <args> dcmi power reading`.
    pub fn new(name: &str, ipmitool: &str, args: &[String], timeout: Duration) -> Self {
        let mut argv = vec![ipmitool.to_string()];
        argv.extend(args.iter().cloned());
        argv.extend(["dcmi", "power", "reading"].map(String::from));
        IpmiMeter {
            name: name.to_string(),
            argv,
            timeout,
        }
    }
}

/// The instantaneous reading of `dcmi power reading`, W.
///
/// # Errors
///
/// A message when the output has no instantaneous reading or says the
/// reading is deactivated.
pub fn parse_dcmi_reading(text: &str) -> Result<f64, String> {
    let field = |label: &str| {
        text.lines()
            .find(|l| l.trim_start().to_ascii_lowercase().starts_with(label))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    if let Some(state) = field("power reading state is")
        && state.eq_ignore_ascii_case("deactivated")
    {
        return Err("the BMC's DCMI power reading is deactivated (ipmitool dcmi power activate enables it; the harness does not)".into());
    }
    let v = field("instantaneous power reading")
        .ok_or_else(|| "no `Instantaneous power reading` line".to_string())?;
    let watts = v
        .split_whitespace()
        .next()
        .and_then(|n| n.parse::<f64>().ok())
        .filter(|w| w.is_finite())
        .ok_or_else(|| format!("`{v}` is not a number of watts"))?;
    Ok(watts)
}

impl NodeMeter for IpmiMeter {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> &'static str {
        "ipmi"
    }

    fn target(&self) -> String {
        // The program and its interface/host arguments; a password is never
        // among them (`-P` is refused by the campaign parser).
        self.argv.join(" ")
    }

    fn read(&mut self) -> Result<NodeReading, MeterError> {
        let out = run(&self.argv, self.timeout).map_err(|e| match e {
            MeterError::Unreachable { target, detail }
                if ["rakp", "unauthorized", "password", "authentication"]
                    .iter()
                    .any(|k| detail.to_ascii_lowercase().contains(k)) =>
            {
                MeterError::Auth { target, detail }
            }
            other => other,
        })?;
        let node_w = parse_dcmi_reading(&out.stdout).map_err(|detail| MeterError::NoReading {
            target: self.target(),
            detail: format!("{detail}; stderr: {}", out.stderr.trim()),
        })?;
        crate::plausible(node_w, &self.target())?;
        Ok(NodeReading {
            node_w,
            supplies_w: vec![],
        })
    }
}
