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
    let mut merged =
        serde_json::to_value(T::default()).map_err(|e| unreadable(path, key, &e.to_string()))?;
    if let (Some(into), Some(from)) = (
        merged.as_object_mut(),
        resolved.get(key).and_then(|v| v.as_object()),
    ) {
        for (k, v) in from {
            into.insert(k.clone(), v.clone());
        }
    }
    read_table(&merged, key, path)
}

/// The table `key`, None where the campaign does not declare it.
fn declared<T: Serialize + DeserializeOwned>(
    resolved: &serde_json::Value,
    key: &str,
    path: &std::path::Path,
) -> Result<Option<T>, CollateError> {
    match resolved.get(key) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(v) => read_table(v, key, path).map(Some),
    }
}

/// `table` read as a `T`; an error names the key that does not read, and
/// any key this version does not know (a limit under a name it does not
/// know would otherwise go unjudged).
fn read_table<T: Serialize + DeserializeOwned>(
    table: &serde_json::Value,
    key: &str,
    path: &std::path::Path,
) -> Result<T, CollateError> {
    // Read from its pretty text, so that an error has a line: the line
    // names the key.
    let text = serde_json::to_string_pretty(table).unwrap_or_default();
    let value: T = serde_json::from_str(&text).map_err(|e| {
        let at = key_at_line(&text, e.line()).map_or(String::new(), |k| format!(".{k}"));
        unreadable(path, &format!("{key}{at}"), &e.to_string())
    })?;
    let unknown = unknown_keys(table, &serde_json::to_value(&value).unwrap_or_default());
    if !unknown.is_empty() {
        let what = format!(
            "has key(s) this version does not know: {}",
            unknown.join(", ")
        );
        return Err(unreadable(path, key, &what));
    }
    Ok(value)
}

/// The key on or above line `line` (1-based) of pretty-printed JSON.
fn key_at_line(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().take(line).collect();
    lines.iter().rev().find_map(|l| {
        let l = l.trim_start().strip_prefix('"')?;
        let end = l.find("\":")?;
        Some(l[..end].to_string())
    })
}

/// The keys of an object table (of every object of an array table) that
/// the type read back does not hold, where their value says something (a
/// null or empty value of a key the type skips is not a key it lacks).
fn unknown_keys(table: &serde_json::Value, read: &serde_json::Value) -> Vec<String> {
    let pairs: Vec<(&serde_json::Value, &serde_json::Value)> = match (table, read) {
        (serde_json::Value::Array(a), serde_json::Value::Array(b)) => a.iter().zip(b).collect(),
        _ => vec![(table, read)],
    };
    let mut out = Vec::new();
    for (given, kept) in pairs {
        let (Some(given), Some(kept)) = (given.as_object(), kept.as_object()) else {
            continue;
        };
        for (k, v) in given {
            let says = !(v.is_null() || v.as_array().is_some_and(Vec::is_empty));
            if says && !kept.contains_key(k) && !out.contains(k) {
                out.push(k.clone());
            }
        }
    }
    out
}

fn unreadable(path: &std::path::Path, key: &str, what: &str) -> CollateError {
    CollateError::BadRaw {
        path: path.to_path_buf(),
        message: format!(
            "the resolved campaign's `{key}` cannot be read by this version ({what}): \
             restore the manifest if it was edited, or collate with the version that \
             ran the run (the manifest's `tool` names it)"
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
    fn an_unreadable_key_is_named_not_taken_as_undeclared() {
        let err = |v: serde_json::Value| {
            RunCampaign::of(&v, Path::new("m.json"))
                .unwrap_err()
                .to_string()
        };
        let e = err(serde_json::json!({"grid": {"band_hz": "fast"}}));
        assert!(e.contains("`grid.band_hz`") && e.contains("m.json"), "{e}");
        let e = err(serde_json::json!({"sampling": {"poll_interval_ms": 20.0, "grid_ms": null}}));
        assert!(e.contains("`sampling.grid_ms`"), "{e}");
        let e = err(serde_json::json!({"limits": {"edge_p99_us": "5"}}));
        assert!(e.contains("`limits.edge_p99_us`"), "{e}");
    }

    #[test]
    fn a_key_this_version_does_not_know_is_refused_by_name() {
        let e = RunCampaign::of(
            &serde_json::json!({"grid": {"ramp_up_w_per_s": 200000.0, "band_hz": [0.1, 20.0]}}),
            Path::new("m.json"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("`grid`") && e.contains("ramp_up_w_per_s"), "{e}");
        // A declared null is no key at all.
        let c = RunCampaign::of(
            &serde_json::json!({"grid": {"ramp_up_mw_per_s": null, "band_hz": [0.1, 20.0]}}),
            Path::new("m.json"),
        )
        .unwrap();
        assert!(c.grid.is_some_and(|g| g.ramp_up_mw_per_s.is_none()));
    }
}
