#!/usr/bin/env python3
"""Issue 57's counts over the workspace's non-test source.

    scripts/bench/house-counts.py [ROOT]

Counts, in `crates/*/src/**/*.rs` less test code (files named `tests.rs`
or under a `tests/` folder, and everything from a file's first
`#[cfg(test)]` on):
- files naming `spread_w` (a per-rung figure declared in many places);
- `join("; ")` calls (prose assembled from parts);
- deciding matches on verdict text: a substring, prefix or equality test
  on the words of a verdict, note, flag or clock-event list (the patterns
  issue 57 names, those an independent count found beside them, and any `.contains("`/`.starts_with("`/`.strip_prefix("`
  or `== "` on a receiver named verdict, flag, note, notes or events);
- uses of collate's exporter internals outside collate
  (`export::markdown`, `export::csv`, `export::html`).
Prints each count and the lines behind the last two.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()

NAMED = [
    'contains("CHASSIS BELOW THE GPU SUM")',
    'contains("its enforced limit is")',
    'contains("hw_")',
    'contains("sw_thermal")',
    'strip_prefix("not reached: ")',
    'strip_prefix("not judged: ")',
    'starts_with("not judged")',
    '== "aliased"',
    'Some("aliased")',
    'starts_with("Compute fraction 1:")',
    'starts_with("Time-domain playback")',
    'starts_with("none measured")',
    'starts_with("collated now")',
    'replace("**", "")',
]
RECEIVER = re.compile(
    r'\b(verdict|flag|note|notes|events)(\(\))?\s*\.\s*(contains|starts_with|strip_prefix|ends_with)\("'
    r'|\b(verdict|flag|note|notes|events)\s*==\s*"'
)
INTERNALS = re.compile(r"export::(markdown|csv|html)\b")


def source_files():
    for p in sorted(ROOT.glob("crates/*/src/**/*.rs")):
        rel = p.relative_to(ROOT)
        if p.name == "tests.rs" or "tests" in rel.parts[3:-1]:
            continue
        text = p.read_text()
        cut = text.find("#[cfg(test)]")
        yield rel, text if cut < 0 else text[:cut]


def main():
    spread_files, joins, deciding, internals = 0, 0, [], []
    for rel, text in source_files():
        spread_files += "spread_w" in text
        joins += text.count('join("; ")')
        crate = rel.parts[1]
        for n, line in enumerate(text.splitlines(), 1):
            # A test named in NAMED may also match RECEIVER: the larger count.
            hits = max(sum(line.count(pat) for pat in NAMED), len(RECEIVER.findall(line)))
            deciding.extend([f"{rel}:{n}: {line.strip()}"] * hits)
            if crate != "collate" and INTERNALS.search(line):
                internals.append(f"{rel}:{n}: {line.strip()}")
    print(f"non-test files naming spread_w: {spread_files}")
    print(f'join("; ") calls: {joins}')
    print(f"deciding matches on verdict text: {len(deciding)}")
    for d in deciding:
        print(f"    {d}")
    print(f"uses of collate's exporter internals outside collate: {len(internals)}")
    for i in internals:
        print(f"    {i}")


if __name__ == "__main__":
    main()
