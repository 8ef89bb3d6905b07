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

/// Lines `path: a -> b` for every fact that differs between two health
/// files, then `check <id>: a -> b` for every check whose verdict differs
/// (a check that passed in one and failed in the other is a difference
/// even when no fact it names changed, e.g. under another threshold).
pub fn diff(a: &Value, b: &Value) -> Vec<String> {
    let mut lines = diff_facts(a, b);
    lines.extend(diff_checks(a, b));
    lines
}

type Table = std::collections::BTreeMap<String, String>;

/// The verdict of every check, by id.
fn check_statuses(v: &Value) -> Table {
    v["checks"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| {
                    Some((
                        c["id"].as_str()?.to_string(),
                        c["status"].as_str().unwrap_or("?").to_string(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `label(key): a -> b` for every key of either table whose values differ
/// (a key one table lacks reads `(absent)`), in key order.
fn changed(a: &Table, b: &Table, label: impl Fn(&str) -> String) -> Vec<String> {
    let missing = "(absent)".to_string();
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter_map(|k| {
            let (x, y) = (a.get(k).unwrap_or(&missing), b.get(k).unwrap_or(&missing));
            (x != y).then(|| format!("{}: {x} -> {y}", label(k)))
        })
        .collect()
}

fn diff_checks(a: &Value, b: &Value) -> Vec<String> {
    changed(&check_statuses(a), &check_statuses(b), |id| {
        format!("check {id}")
    })
}

fn diff_facts(a: &Value, b: &Value) -> Vec<String> {
    let facts = |v: &Value| {
        let mut out = Vec::new();
        flatten("", &v["facts"], &mut out);
        out.into_iter().collect::<Table>()
    };
    changed(&facts(a), &facts(b), str::to_string)
}

#[cfg(test)]
mod tests {
    use super::diff;
    use serde_json::json;

    #[test]
    fn a_check_whose_verdict_changed_is_a_difference_even_with_equal_facts() {
        let a = json!({"facts": {"host": "n1"}, "checks": [{"id": "ecc", "status": "pass"}, {"id": "fabric", "status": "skipped"}]});
        let b = json!({"facts": {"host": "n1"}, "checks": [{"id": "ecc", "status": "fail"}, {"id": "fabric", "status": "skipped"}]});
        assert_eq!(diff(&a, &b), vec!["check ecc: pass -> fail".to_string()]);
        assert!(diff(&a, &a).is_empty());
        let c = json!({"facts": {"host": "n2"}, "checks": []});
        let d = diff(&a, &c);
        assert_eq!(d[0], "host: \"n1\" -> \"n2\"");
        assert!(
            d.contains(&"check ecc: pass -> (absent)".to_string()),
            "{d:?}"
        );
    }
}
