//! `health-diff`: what changed between two captures (idle vs under load, or
//! a fast run vs a slow one) — every differing fact, by path.

use serde_json::Value;

/// Flattens JSON into `path = value` pairs.
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                flatten(&format!("{prefix}.{k}"), x, out);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), x, out);
            }
        }
        other => out.push((
            prefix.trim_start_matches('.').to_string(),
            other.to_string(),
        )),
    }
}

/// Lines `path: a -> b` for every fact that differs between two health files.
pub fn diff(a: &Value, b: &Value) -> Vec<String> {
    let (mut fa, mut fb) = (Vec::new(), Vec::new());
    flatten("", &a["facts"], &mut fa);
    flatten("", &b["facts"], &mut fb);
    let ma: std::collections::BTreeMap<_, _> = fa.into_iter().collect();
    let mb: std::collections::BTreeMap<_, _> = fb.into_iter().collect();
    let mut keys: Vec<&String> = ma.keys().chain(mb.keys()).collect();
    keys.sort();
    keys.dedup();
    let missing = "(absent)".to_string();
    keys.into_iter()
        .filter_map(|k| {
            let (x, y) = (ma.get(k).unwrap_or(&missing), mb.get(k).unwrap_or(&missing));
            (x != y).then(|| format!("{k}: {x} -> {y}"))
        })
        .collect()
}
