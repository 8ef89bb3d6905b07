//! The run's campaign as the collator reads it: the resolved campaign of
//! the manifest deserialized once, when the run is loaded, into the
//! campaign crate's own types. No analysis reads the manifest's JSON: a
//! key missing from an older run takes the type's own default (one
//! default per key, the campaign crate's), and a table this version cannot
//! read is an error that names it, never a table taken as undeclared.

use crate::error::CollateError;
use powerlab_campaign::{Grid, Limits, NodePowerSpec, Sampling, Supply};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The resolved campaign's tables the collator uses.
#[derive(Debug, Clone, PartialEq)]
pub struct RunCampaign {
    /// `[sampling]`: the poll interval (the instant readings' as-of
    /// tolerance) and the node curve's grid.
    pub sampling: Sampling,
    /// `[limits]`: the edge tolerances the edge figures are judged by.
    pub limits: Limits,
    /// `[supply]`, where declared.
    pub supply: Option<Supply>,
    /// `[grid]`, where declared.
    pub grid: Option<Grid>,
    /// `[[node_power]]`: the node's own meters, by name.
    pub node_power: Vec<NodePowerSpec>,
}

impl RunCampaign {
    /// Reads the tables from `resolved` (the manifest's
    /// `campaign_resolved`); `path` names the manifest in errors.
    ///
    /// # Errors
    ///
    /// [`CollateError::BadRaw`] naming the table when a declared table
    /// cannot be read as this version's type.
    pub fn of(resolved: &serde_json::Value, path: &std::path::Path) -> Result<Self, CollateError> {
        Ok(RunCampaign {
            sampling: over_default(resolved, "sampling", path)?,
            limits: over_default(resolved, "limits", path)?,
            supply: declared(resolved, "supply", path)?,
            grid: declared(resolved, "grid", path)?,
            node_power: declared(resolved, "node_power", path)?.unwrap_or_default(),
        })
    }

    /// The declared read interval of the node meter `name`, ms.
    pub fn node_power_interval_ms(&self, name: &str) -> Option<f64> {
        self.node_power
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.interval_ms)
    }
}

/// The table `key` laid over `T::default()` key by key: a key the run's
/// campaign lacks keeps the type's default.
fn over_default<T: Default + Serialize + DeserializeOwned>(
    resolved: &serde_json::Value,
    key: &str,
    path: &std::path::Path,
) -> Result<T, CollateError> {
    let mut merged = serde_json::to_value(T::default()).map_err(|e| unreadable(path, key, &e))?;
    if let (Some(into), Some(from)) = (
        merged.as_object_mut(),
        resolved.get(key).and_then(|v| v.as_object()),
    ) {
        for (k, v) in from {
            into.insert(k.clone(), v.clone());
        }
    }
    serde_json::from_value(merged).map_err(|e| unreadable(path, key, &e))
}

/// The table `key`, None where the campaign does not declare it.
fn declared<T: DeserializeOwned>(
    resolved: &serde_json::Value,
    key: &str,
    path: &std::path::Path,
) -> Result<Option<T>, CollateError> {
    match resolved.get(key) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(v) => serde_json::from_value(v.clone())
            .map(Some)
            .map_err(|e| unreadable(path, key, &e)),
    }
}

fn unreadable(path: &std::path::Path, key: &str, e: &serde_json::Error) -> CollateError {
    CollateError::BadRaw {
        path: path.to_path_buf(),
        message: format!(
            "the resolved campaign's `{key}` cannot be read by this version ({e}); \
             collate the run with the version that ran it (its manifest names it)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_key_missing_from_an_older_run_takes_the_types_default() {
        let c = RunCampaign::of(
            &serde_json::json!({"sampling": {"grid_ms": 5.0}, "limits": {"edge_p99_us": 80.0}}),
            Path::new("manifest.json"),
        )
        .unwrap();
        assert_eq!(c.sampling.grid_ms, 5.0);
        assert_eq!(
            c.sampling.poll_interval_ms,
            Sampling::default().poll_interval_ms
        );
        assert_eq!(c.limits.edge_p99_us, 80.0);
        assert_eq!(c.limits.edge_max_us, Limits::default().edge_max_us);
        assert!(c.supply.is_none() && c.grid.is_none() && c.node_power.is_empty());
    }

    #[test]
    fn an_unreadable_table_is_named_not_taken_as_undeclared() {
        let e = RunCampaign::of(
            &serde_json::json!({"grid": {"band_hz": "fast"}}),
            Path::new("m.json"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`grid`") && e.contains("m.json"), "{e}");
        let e = RunCampaign::of(
            &serde_json::json!({"sampling": {"grid_ms": "ten"}}),
            Path::new("m.json"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`sampling`"), "{e}");
    }
}
