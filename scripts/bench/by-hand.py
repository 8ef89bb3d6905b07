#!/usr/bin/env python3
"""Counts what issue 32 says must not be written by hand in crates/*/src
(code before a file's `#[cfg(test)]` module; comments left out):

1. a run-directory file name as a string literal outside crates/rundir;
2. a string comparison of a rung's kind or mode (`kind == "duty"`,
   `mode.as_str() != "staggered"`, `match kind.as_str() {`);
3. a `1e6` / `1.0e6` / `1_000_000` / `1e9` / `1_000_000_000` literal outside crates/core/src/units.rs
   (every one is listed: read them; a value of a million that is not a
   unit conversion, such as a made-up offset or a formatting range, is
   counted too).

usage: python3 scripts/bench/by-hand.py   (from the root of a checkout)
Prints each hit and the three counts; exits 1 when there is any hit, 0
when there is none."""
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from rust_source import code_lines  # noqa: E402

NAMES = re.compile(
    r'"[A-Za-z0-9_.{}:/-]*\.(json|jsonl|csv|parquet|md|html|lock|idx|svg|png|gz)"'
    r'|with_extension\("(json|jsonl|csv|parquet|md|html|svg|png|gz)"\)'
)
KINDS = "duty|idle|sustained|soak|nccl|ramp_up|calibration|bsp|in_phase|staggered"
KIND_CMP = re.compile(
    rf'(kind|mode)(\(\))?(\.as_str\(\))?\s*[!=]=\s*"({KINDS})"'
    rf'|"({KINDS})"\s*[!=]=\s*[\w.]*(kind|mode)'
    r'|match\s+[\w.]*(kind|mode)(\(\))?\.as_str\(\)\s*\{'
)
MEGA = re.compile(
    r"(?:(?<![\w.])|(?<=\.\.))(1(?:\.0*)?e[69]|1_000_000(?:_000)?(?:\.0*)?)(?:i64|u64|f64)?(?![\w])"
)


def code(path):
    return code_lines(path.read_text())


def main():
    counts = [0, 0, 0]
    for p in sorted(pathlib.Path("crates").glob("*/src/**/*.rs")):
        if p.name == "tests.rs":  # a `#[cfg(test)] mod tests;` file
            continue
        for n, line in enumerate(code(p), 1):
            where = f"{p}:{n}: {line.strip()}"
            if "crates/rundir/" not in str(p) and NAMES.search(line):
                counts[0] += 1
                print("file name:", where)
            if KIND_CMP.search(line):
                counts[1] += 1
                print("kind/mode:", where)
            if str(p) != "crates/core/src/units.rs" and MEGA.search(line):
                counts[2] += 1
                print("1e6:", where)
    print(f"file-name literals outside rundir: {counts[0]}")
    print(f"string comparisons of a rung's kind or mode: {counts[1]}")
    print(f"1e6/1e9 literals outside core::units: {counts[2]}")
    return 1 if any(counts) else 0


if __name__ == "__main__":
    sys.exit(main())
