#!/usr/bin/env python3
"""Counts what issue 32 says must not be written by hand in crates/*/src
(code before a file's `#[cfg(test)]` module; comments left out):

1. a run-directory file name as a string literal outside crates/rundir;
2. a string comparison of a rung's kind or mode (`kind == "duty"`,
   `"in_phase" =>` in a match on a rung's mode, …);
3. a `1e6` / `1_000_000` unit conversion outside crates/core/src/units.rs.

usage: python3 scripts/bench/by-hand.py   (from the root of a checkout)
Prints each hit and the three counts."""
import pathlib
import re

NAMES = re.compile(r'"[A-Za-z0-9_.{}-]+\.(json|jsonl|csv|parquet|md|html|lock|idx|svg|png)"')
KINDS = "duty|idle|sustained|soak|nccl|ramp_up|calibration|bsp|in_phase|staggered"
KIND_CMP = re.compile(rf'(kind|mode)(\(\))?(\.as_str\(\))?\s*[!=]=\s*"({KINDS})"|"({KINDS})"\s*[!=]=\s*\w*(kind|mode)')
MEGA = re.compile(r"(?<![\w.])(1e6|1_000_000)(?![\w.])")


def code(path):
    text = path.read_text()
    i = text.find("#[cfg(test)]")
    text = text if i < 0 else text[:i]
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return [re.sub(r"//.*", "", l) for l in text.splitlines()]


def main():
    counts = [0, 0, 0]
    for p in sorted(pathlib.Path("crates").glob("*/src/**/*.rs")):
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
    print(f"1e6/1_000_000 outside core::units: {counts[2]}")


if __name__ == "__main__":
    main()
