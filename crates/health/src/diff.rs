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

/// The verdict of every check, by id.
fn check_statuses(v: &Value) -> std::collections::BTreeMap<String, String> {
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

fn diff_checks(a: &Value, b: &Value) -> Vec<String> {
    let (ca, cb) = (check_statuses(a), check_statuses(b));
    let mut ids: Vec<&String> = ca.keys().chain(cb.keys()).collect();
    ids.sort();
    ids.dedup();
    let missing = "(absent)".to_string();
    ids.into_iter()
        .filter_map(|id| {
            let (x, y) = (
                ca.get(id).unwrap_or(&missing),
                cb.get(id).unwrap_or(&missing),
            );
            (x != y).then(|| format!("check {id}: {x} -> {y}"))
        })
        .collect()
}

fn diff_facts(a: &Value, b: &Value) -> Vec<String> {
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
