//! The third hardware seam: a meter of the node's own power (a BMC over
//! Redfish, IPMI DCMI, a PDU's exporter, a site meter). Unlike a GPU's
//! [`crate::PowerSource`], such a meter is slow, answers over a network
//! with its own latency, and reports an average over a window it does not
//! state; the runner records when each request was sent and when its answer
//! came, and the collator works out the rest.

use serde::{Deserialize, Serialize};

/// What one read of a node meter returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeReading {
    /// The node's (chassis') power, W.
    pub node_w: f64,
    /// Per power-supply readings where the meter has them: (supply name, W).
    pub supplies_w: Vec<(String, f64)>,
}

/// Why a read of a node meter failed. The message names the meter's
/// address (never its credentials) and what to check.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
pub enum MeterError {
    /// No answer within the meter's timeout.
    #[error("no answer within {timeout_ms} ms from {target}")]
    Timeout {
        /// Where the request went.
        target: String,
        /// The timeout, ms.
        timeout_ms: u64,
    },
    /// The meter refused the credentials (HTTP 401/403, IPMI authentication).
    #[error(
        "{target} refused the credentials ({detail}): check the user name and the password variable or file named in the campaign"
    )]
    Auth {
        /// Where the request went.
        target: String,
        /// What it answered.
        detail: String,
    },
    /// The meter could not be reached or answered with an error.
    #[error("{target}: {detail}")]
    Unreachable {
        /// Where the request went.
        target: String,
        /// What failed.
        detail: String,
    },
    /// The meter answered, but with no power reading in it.
    #[error("{target} answered without a power reading: {detail}")]
    NoReading {
        /// Where the request went.
        target: String,
        /// What was missing or malformed.
        detail: String,
    },
    /// The meter's configuration cannot work (a missing credential
    /// variable, an unreadable certificate file).
    #[error("{0}")]
    Config(String),
}

impl MeterError {
    /// A short class name for raw rows and tables (`timeout`, `auth`, …).
    pub fn class(&self) -> &'static str {
        match self {
            MeterError::Timeout { .. } => "timeout",
            MeterError::Auth { .. } => "auth",
            MeterError::Unreachable { .. } => "unreachable",
            MeterError::NoReading { .. } => "no_reading",
            MeterError::Config(_) => "config",
        }
    }
}

/// The most a node meter may read, W: a 1 MW node is no node.
pub const MAX_NODE_W: f64 = crate::units::W_PER_MW;

/// Whether `w` can be a running node's power: finite, above zero (a meter
/// that answers 0 W has no reading, whatever it says), at most
/// [`MAX_NODE_W`]. The meters refuse other readings and the collator drops
/// them from a file.
pub fn is_plausible_node_w(w: f64) -> bool {
    w.is_finite() && w > 0.0 && w <= MAX_NODE_W
}

/// A meter of the node's power, read by a blocking call (its own thread).
pub trait NodeMeter: Send {
    /// The source's name from the campaign (`bmc`, `pdu-a`, …).
    fn name(&self) -> &str;
    /// Its kind (`redfish`, `ipmi`, `command`, `prometheus`).
    fn kind(&self) -> &'static str;
    /// Where it reads from, without credentials (for messages and the manifest).
    fn target(&self) -> String;
    /// One reading. Every request carries the meter's timeout.
    ///
    /// # Errors
    ///
    /// Returns a [`MeterError`] naming the cause: timeout, refused
    /// credentials, unreachable, or an answer without a reading.
    fn read(&mut self) -> Result<NodeReading, MeterError>;
}
