#![allow(clippy::unwrap_used, clippy::expect_used)] // a test that unwraps reports its failure by panicking
//! The reader's first hour (issue 49): README.md stays short, opens with
//! the two commands CI and a newcomer run, and every picture and document
//! it links is in the repository.

use std::path::{Path, PathBuf};

/// The repository's root (two levels above this crate).
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_readme_is_short_opens_with_the_two_commands_and_links_what_exists() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    assert!(
        readme.len() <= 12_000,
        "README.md is {} bytes: keep it under 12,000 and move detail to docs/",
        readme.len()
    );
    let block = readme
        .split("```sh\n")
        .nth(1)
        .unwrap()
        .split("```")
        .next()
        .unwrap();
    let commands: Vec<&str> = block
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect();
    assert_eq!(
        commands,
        [
            "cargo run --release -- run campaigns/demo.toml --backend sim",
            "cargo test --workspace --locked"
        ],
        "README.md's first block must be the demo and the tests"
    );
    let mut missing = Vec::new();
    let mut links = 0;
    for part in readme.split("](").skip(1) {
        let target = part.split(')').next().unwrap();
        if target.starts_with("http") || target.starts_with('#') {
            continue;
        }
        links += 1;
        let path = target.split('#').next().unwrap();
        if !repo().join(path).exists() {
            missing.push(target.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "README.md links what is not there: {missing:?}"
    );
    for picture in ["docs/img/report.png", "docs/img/predict.png"] {
        assert!(
            readme.contains(&format!("]({picture})")),
            "README.md does not show {picture}"
        );
    }
    assert!(links >= 5, "README.md links {links} files");
    assert!(
        readme.contains("<!-- demo-answer-excerpt -->\n| spec item |"),
        "README.md's excerpt does not open with the verdict table"
    );
}
