//! A BMC over Redfish. The chassis power is discovered once from the
//! service root (`/redfish/v1` → `Chassis` → the chassis → its legacy
//! `Power` resource, `PowerControl[].PowerConsumedWatts`; its
//! `EnvironmentMetrics`, `PowerWatts.Reading`; or the chassis power sensor
//! of its `Sensors` collection), then read with one GET per reading. Power supplies come with the legacy resource where present.

use crate::http::{Tls, agent, get_text, meter_error};
use crate::secret::Secret;
use base64::Engine;
use powerlab_campaign::{NodePowerKind, RedfishAuth};
use powerlab_core::{MeterError, NodeMeter, NodeReading};
use serde_json::Value;
use std::time::Duration;

/// Where the chassis power is read, once discovered.
#[derive(Debug, Clone, PartialEq)]
enum PowerPath {
    /// The legacy `Power` resource.
    Legacy(String),
    /// `EnvironmentMetrics` (Redfish 2020.4 and later).
    Environment(String),
    /// One power `Sensor` of the chassis' `Sensors` collection.
    Sensor(String),
}

enum Auth {
    None,
    Basic(String),
    Session {
        user: String,
        password: Secret,
        token: Option<String>,
        location: Option<String>,
    },
}

/// A Redfish chassis power meter.
pub struct RedfishMeter {
    name: String,
    base: String,
    chassis: Option<String>,
    agent: ureq::Agent,
    timeout: Duration,
    auth: Auth,
    path: Option<PowerPath>,
}

impl RedfishMeter {
    /// From a `redfish` source.
    ///
    /// # Errors
    ///
    /// [`MeterError::Config`] when the password cannot be loaded or the
    /// certificate file cannot be read.
    pub fn new(name: &str, kind: &NodePowerKind, timeout: Duration) -> Result<Self, MeterError> {
        let NodePowerKind::Redfish {
            url,
            chassis,
            auth,
            user,
            password_env,
            password_file,
            insecure_tls,
            ca_file,
        } = kind
        else {
            return Err(MeterError::Config("not a redfish source".into()));
        };
        let tls = match (insecure_tls, ca_file) {
            (true, _) => Tls::Insecure,
            (false, Some(f)) => Tls::CaFile(f),
            (false, None) => Tls::Verify,
        };
        let user = user.clone().unwrap_or_default();
        let auth = match auth {
            RedfishAuth::None => Auth::None,
            RedfishAuth::Basic => {
                let p = Secret::load(password_env.as_deref(), password_file.as_deref())?;
                let token = base64::engine::general_purpose::STANDARD
                    .encode(format!("{user}:{}", p.expose()));
                Auth::Basic(format!("Basic {token}"))
            }
            RedfishAuth::Session => Auth::Session {
                user,
                password: Secret::load(password_env.as_deref(), password_file.as_deref())?,
                token: None,
                location: None,
            },
        };
        Ok(RedfishMeter {
            name: name.to_string(),
            base: url.clone(),
            chassis: chassis.clone(),
            agent: agent(timeout, tls)?,
            timeout,
            auth,
            path: None,
        })
    }

    fn url(&self, odata_id: &str) -> String {
        format!("{}{}", self.base, odata_id)
    }

    fn headers(&mut self) -> Result<Vec<(&'static str, String)>, MeterError> {
        match &self.auth {
            Auth::None => Ok(vec![]),
            Auth::Basic(h) => Ok(vec![("Authorization", h.clone())]),
            Auth::Session { token: Some(t), .. } => Ok(vec![("X-Auth-Token", t.clone())]),
            Auth::Session { token: None, .. } => {
                self.login()?;
                match &self.auth {
                    Auth::Session { token: Some(t), .. } => Ok(vec![("X-Auth-Token", t.clone())]),
                    _ => Err(MeterError::Auth {
                        target: self.base.clone(),
                        detail: "the session service returned no token".into(),
                    }),
                }
            }
        }
    }

    fn login(&mut self) -> Result<(), MeterError> {
        let url = self.url("/redfish/v1/SessionService/Sessions");
        let Auth::Session {
            user,
            password,
            token,
            location,
        } = &mut self.auth
        else {
            return Ok(());
        };
        let body = serde_json::json!({"UserName": user, "Password": password.expose()});
        let resp = self
            .agent
            .post(&url)
            .header("Content-Type", "application/json")
            .send(body.to_string())
            .map_err(|e| meter_error(e, &url, self.timeout))?;
        let header = |n: &str| {
            resp.headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        *token = header("X-Auth-Token");
        *location = header("Location");
        if token.is_none() {
            return Err(MeterError::Auth {
                target: url,
                detail: "the session service answered without an X-Auth-Token".into(),
            });
        }
        Ok(())
    }

    fn get_json(&mut self, odata_id: &str) -> Result<Value, MeterError> {
        let url = self.url(odata_id);
        let mut headers = self.headers()?;
        let mut text = get_text(&self.agent, &url, &headers, self.timeout);
        if let (Err(MeterError::Auth { .. }), Auth::Session { token, .. }) = (&text, &mut self.auth)
        {
            // An expired session: log in again, once.
            *token = None;
            headers = self.headers()?;
            text = get_text(&self.agent, &url, &headers, self.timeout);
        }
        serde_json::from_str(&text?).map_err(|e| MeterError::NoReading {
            target: url,
            detail: format!("not JSON: {e}"),
        })
    }

    /// Finds the chassis power resource from the service root.
    fn discover(&mut self) -> Result<PowerPath, MeterError> {
        let root = self.get_json("/redfish/v1")?;
        let coll_id = link(&root, "Chassis").ok_or_else(|| MeterError::NoReading {
            target: self.url("/redfish/v1"),
            detail: "the service root links no Chassis collection".into(),
        })?;
        let coll = self.get_json(&coll_id)?;
        let members: Vec<String> = coll["Members"]
            .as_array()
            .map(|m| m.iter().filter_map(odata_id).collect())
            .unwrap_or_default();
        let mut tried = Vec::new();
        for member in members {
            let id = member
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or("")
                .to_string();
            if let Some(want) = &self.chassis
                && *want != id
            {
                continue;
            }
            let chassis = self.get_json(&member)?;
            let mut why = "no Power or EnvironmentMetrics link";
            if let Some(p) = link(&chassis, "Power") {
                let power = self.get_json(&p)?;
                if parse_legacy_power(&power).is_some() {
                    return Ok(PowerPath::Legacy(p));
                }
                why = "its Power resource has no PowerConsumedWatts number (null or absent)";
            }
            if let Some(p) = link(&chassis, "EnvironmentMetrics") {
                let env = self.get_json(&p)?;
                if parse_environment(&env).is_some() {
                    return Ok(PowerPath::Environment(p));
                }
                why = "its EnvironmentMetrics has no PowerWatts.Reading number";
            }
            if let Some(p) = link(&chassis, "Sensors") {
                if let Some(sensor) = self.find_power_sensor(&p)? {
                    return Ok(PowerPath::Sensor(sensor));
                }
                why = "its Sensors collection has no chassis power sensor (ReadingType Power, PhysicalContext Chassis)";
            }
            tried.push(format!("{id}: {why}"));
        }
        Err(MeterError::NoReading {
            target: self.url(&coll_id),
            detail: match (&self.chassis, tried.is_empty()) {
                (Some(c), true) => format!("no chassis `{c}` in the collection"),
                _ => format!(
                    "no chassis with PowerControl[].PowerConsumedWatts, EnvironmentMetrics PowerWatts.Reading or a chassis power Sensor (tried: {})",
                    tried.join("; ")
                ),
            },
        })
    }
}

impl RedfishMeter {
    /// The chassis' total power sensor: `ReadingType` `Power` with a
    /// `PhysicalContext` of the whole chassis (`Chassis`, `SystemBoard` or
    /// none), found once among the collection's members.
    fn find_power_sensor(&mut self, collection: &str) -> Result<Option<String>, MeterError> {
        let coll = self.get_json(collection)?;
        let members: Vec<String> = coll["Members"]
            .as_array()
            .map(|m| m.iter().filter_map(odata_id).collect())
            .unwrap_or_default();
        for m in members {
            let sensor = self.get_json(&m)?;
            let whole = matches!(
                sensor["PhysicalContext"].as_str(),
                None | Some("Chassis") | Some("SystemBoard")
            );
            if sensor["ReadingType"].as_str() == Some("Power")
                && whole
                && parse_sensor(&sensor).is_some()
            {
                return Ok(Some(m));
            }
        }
        Ok(None)
    }
}

impl NodeMeter for RedfishMeter {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> &'static str {
        "redfish"
    }

    fn target(&self) -> String {
        self.base.clone()
    }

    fn read(&mut self) -> Result<NodeReading, MeterError> {
        let path = match &self.path {
            Some(p) => p.clone(),
            None => {
                let p = self.discover()?;
                self.path = Some(p.clone());
                p
            }
        };
        let (id, reading) = match &path {
            PowerPath::Legacy(id) => (id, parse_legacy_power(&self.get_json(id)?)),
            PowerPath::Environment(id) => (id, parse_environment(&self.get_json(id)?)),
            PowerPath::Sensor(id) => (id, parse_sensor(&self.get_json(id)?)),
        };
        let mut r = reading.ok_or_else(|| MeterError::NoReading {
            target: self.url(id),
            detail: "the power resource has no reading now".into(),
        })?;
        crate::plausible(r.node_w, &self.url(id))?;
        // A supply without a plausible reading is left out, not guessed.
        r.supplies_w
            .retain(|(_, w)| w.is_finite() && (0.0..=powerlab_core::meter::MAX_NODE_W).contains(w));
        Ok(r)
    }
}

impl Drop for RedfishMeter {
    fn drop(&mut self) {
        // A session holds one of the BMC's few slots: give it back (best
        // effort, within the timeout; nothing to do on failure).
        if let Auth::Session {
            token: Some(t),
            location: Some(loc),
            ..
        } = &self.auth
        {
            let url = if loc.starts_with("http") {
                loc.clone()
            } else {
                self.url(loc)
            };
            let _ = self.agent.delete(&url).header("X-Auth-Token", t).call();
        }
    }
}

fn odata_id(v: &Value) -> Option<String> {
    v.get("@odata.id")?.as_str().map(str::to_string)
}

fn link(v: &Value, key: &str) -> Option<String> {
    odata_id(v.get(key)?)
}

/// The chassis reading of a legacy `Power` resource: the first
/// `PowerControl` entry with a `PowerConsumedWatts`, and every power
/// supply's input (else output) watts.
pub(crate) fn parse_legacy_power(v: &Value) -> Option<NodeReading> {
    let node_w = v["PowerControl"]
        .as_array()?
        .iter()
        .find_map(|c| c["PowerConsumedWatts"].as_f64())?;
    let supplies_w = v["PowerSupplies"]
        .as_array()
        .map(|s| {
            s.iter()
                .enumerate()
                .filter_map(|(i, p)| {
                    let w = p["PowerInputWatts"]
                        .as_f64()
                        .or_else(|| p["PowerOutputWatts"].as_f64())
                        .or_else(|| p["LastPowerOutputWatts"].as_f64())?;
                    let name = p["Name"]
                        .as_str()
                        .or_else(|| p["MemberId"].as_str())
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("psu{i}"));
                    Some((name, w))
                })
                .collect()
        })
        .unwrap_or_default();
    Some(NodeReading { node_w, supplies_w })
}

/// The reading of a `Sensor` resource.
pub(crate) fn parse_sensor(v: &Value) -> Option<NodeReading> {
    Some(NodeReading {
        node_w: v["Reading"].as_f64()?,
        supplies_w: vec![],
    })
}

/// The chassis reading of an `EnvironmentMetrics` resource.
pub(crate) fn parse_environment(v: &Value) -> Option<NodeReading> {
    Some(NodeReading {
        node_w: v["PowerWatts"]["Reading"].as_f64()?,
        supplies_w: vec![],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_legacy_resource_and_its_supplies() {
        let v: Value = serde_json::from_str(
            r#"{"PowerControl":[{"Name":"x"},{"PowerConsumedWatts":3120.5}],
                "PowerSupplies":[{"Name":"PSU1","PowerInputWatts":1600},
                                 {"MemberId":"1","LastPowerOutputWatts":1490},
                                 {"Name":"PSU3"}]}"#,
        )
        .unwrap();
        let r = parse_legacy_power(&v).unwrap();
        assert_eq!(r.node_w, 3120.5);
        assert_eq!(
            r.supplies_w,
            vec![("PSU1".to_string(), 1600.0), ("1".to_string(), 1490.0)]
        );
        assert!(parse_legacy_power(&serde_json::json!({"PowerControl": [{}]})).is_none());
        assert!(parse_legacy_power(&serde_json::json!({})).is_none());
    }

    #[test]
    fn reads_environment_metrics() {
        let v = serde_json::json!({"PowerWatts": {"Reading": 812.0}});
        assert_eq!(parse_environment(&v).unwrap().node_w, 812.0);
        assert!(parse_environment(&serde_json::json!({"PowerWatts": {}})).is_none());
    }
}
