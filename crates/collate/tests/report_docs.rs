#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! Every column of every report CSV committed under `results/` is
//! described in `docs/report.md`: the file has a section (a `## ` heading
//! naming it in backticks; a prediction's file `## predict: `name``, else
//! the node report's section of the same name), and each column is the
//! first cell of a table row in that section (`| `column` | … |`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The repository's root (two levels above this crate).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.csv` under `dir`, recursively.
fn csv_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            csv_files(&p, out);
        } else if kind.is_file() && p.extension().is_some_and(|x| x == "csv") {
            out.push(p);
        }
    }
}

/// Which documented output a CSV under `results/` belongs to: `Some(false)`
/// for a collation's `report/`, `Some(true)` for a prediction's output
/// directory (a folder named `predict…`), None for a run's own files.
fn output_kind(path: &Path, results: &Path) -> Option<bool> {
    let rel = path.strip_prefix(results).ok()?;
    let dirs: Vec<String> = rel
        .parent()?
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    // The innermost match decides (a prediction kept inside a run's folder).
    dirs.iter().rev().find_map(|d| {
        if d == "report" {
            Some(false)
        } else if d.starts_with("predict") {
            Some(true)
        } else {
            None
        }
    })
}

/// The sections of `docs/report.md`: heading → the first cells of its
/// table rows (the backticked names).
fn sections(doc: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in doc.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            current = Some(h.trim().to_string());
            out.entry(h.trim().to_string()).or_default();
        } else if let (Some(h), Some(row)) = (&current, line.strip_prefix("| `"))
            && let Some(end) = row.find("` |")
        {
            out.entry(h.clone())
                .or_default()
                .insert(row[..end].to_string());
        }
    }
    out
}

/// The prediction study's waveform columns are one per scenario, named by
/// its label: `docs/report.md` describes them as one pattern.
fn pattern_of(file: &str, column: &str) -> Option<&'static str> {
    (file == "facility_mw.csv" && column.ends_with(" (MW)")).then_some("<scenario> (MW)")
}

#[test]
fn every_report_column_is_documented() {
    let root = repo();
    let results = root.join("results");
    let doc = std::fs::read_to_string(root.join("docs/report.md")).expect("docs/report.md exists");
    let sections = sections(&doc);
    let mut files = Vec::new();
    csv_files(&results, &mut files);
    files.sort();
    let mut seen = 0usize;
    let mut missing: BTreeSet<String> = BTreeSet::new();
    for path in &files {
        let Some(predicted) = output_kind(path, &results) else {
            continue;
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        seen += 1;
        // A table without rows is an empty file: no header to check.
        let Some(header) = text.lines().next().filter(|h| !h.trim().is_empty()) else {
            continue;
        };
        let node_heading = format!("`{name}`");
        let predict_heading = format!("predict: `{name}`");
        let section = if predicted {
            sections
                .get(&predict_heading)
                .or_else(|| sections.get(&node_heading))
        } else {
            sections.get(&node_heading)
        };
        let shown = if predicted {
            &predict_heading
        } else {
            &node_heading
        };
        let Some(rows) = section else {
            missing.insert(format!("{name}: no section `## {shown}`"));
            continue;
        };
        for column in header.split(',') {
            let column = column.trim().trim_matches('"');
            let documented = rows.contains(column)
                || pattern_of(&name, column).is_some_and(|p| rows.contains(p));
            if !documented {
                missing.insert(format!("{name}: column `{column}` (section `## {shown}`)"));
            }
        }
    }
    assert!(
        seen >= 20,
        "saw only {seen} report CSV files under {}: the walk found too few to check",
        results.display()
    );
    assert!(
        missing.is_empty(),
        "{} report column(s) or file(s) are not described: describe it in docs/report.md (a `## \
         `file.csv`` section, a `| `column` | unit | meaning |` row):\n  {}",
        missing.len(),
        missing.into_iter().collect::<Vec<_>>().join("\n  ")
    );
}
