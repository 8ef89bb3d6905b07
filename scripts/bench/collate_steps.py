#!/usr/bin/env python3
"""Reads a collation's step log (`POWERLAB_LOG=info powerlab collate RUN`
on stderr: lines `collate: STEP done at T s`) and `/usr/bin/time -v`'s
report, prints every step's own time beside the total, peak memory and the
DuckDB floor measured on the same files, and checks them against absolute
budgets.

    python3 scripts/bench/collate_steps.py --log collate.err --time time.txt \
        --duckdb duckdb.json [--max-floor-ratio 4] [--max-step-share 0.5] \
        [--max-rss-mib 1536] [--label "4 h x 8 GPUs"]

Exit 1 when a budget is broken, naming it; 2 when an input is unreadable.
"""
import argparse
import json
import math
import re
import sys

STEP = re.compile(r"collate: (.+?) done at ([0-9.]+) s")


def steps_of(text: str):
    out, last = [], 0.0
    for m in STEP.finditer(text):
        t = float(m.group(2))
        out.append((m.group(1), t - last, t))
        last = t
    return out


def time_v(text: str):
    wall = rss = None
    for line in text.splitlines():
        if "Elapsed (wall clock)" in line:
            parts = line.rsplit(" ", 1)[-1].split(":")
            secs = 0.0
            for p in parts:
                secs = secs * 60 + float(p)
            wall = secs
        elif "Maximum resident set size" in line:
            rss = int(line.rsplit(" ", 1)[-1]) / 1024
        elif "Exit status" in line and not line.strip().endswith(" 0"):
            raise ValueError("the collation failed: " + line.strip())
    if wall is None or rss is None:
        raise ValueError("no wall time or peak memory in /usr/bin/time -v's report")
    return wall, rss


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--time", required=True)
    ap.add_argument("--duckdb", required=True)
    ap.add_argument("--max-floor-ratio", type=float)
    ap.add_argument("--max-step-share", type=float,
                    help="the largest share of the total any step after reading the raw files may take")
    ap.add_argument("--max-rss-mib", type=float)
    ap.add_argument("--label", default="")
    a = ap.parse_args()
    try:
        steps = steps_of(open(a.log, encoding="utf-8", errors="replace").read())
        wall, rss = time_v(open(a.time).read())
        floor = json.load(open(a.duckdb))
    except (OSError, ValueError, json.JSONDecodeError) as e:
        print(f"collate_steps: {e}", file=sys.stderr)
        return 2
    for name in ("max_floor_ratio", "max_step_share", "max_rss_mib"):
        v = getattr(a, name)
        if v is not None and not (math.isfinite(v) and v > 0):
            print(f"collate_steps: --{name.replace('_', '-')} must be a positive number, not {v}", file=sys.stderr)
            return 2
    if not (isinstance(floor.get("seconds"), (int, float)) and floor["seconds"] > 0):
        print(f"collate_steps: DuckDB's time in {a.duckdb} is not a positive number of seconds", file=sys.stderr)
        return 2
    if not steps:
        print(f"collate_steps: no 'collate: … done at' lines in {a.log} (was POWERLAB_LOG=info set?)", file=sys.stderr)
        return 2
    total = steps[-1][2]
    print(f"collation {a.label}: {floor['rows']:,} raw rows")
    print(f"  {'step':<40} {'own s':>8} {'share':>6} {'done at':>8}")
    for name, own, at in steps:
        print(f"  {name:<40} {own:8.2f} {100 * own / total:5.1f}% {at:8.2f}")
    ratio = wall / floor["seconds"]
    print(f"  whole process {wall:.2f} s (steps {total:.2f} s), peak memory {rss:.0f} MiB")
    print(f"  DuckDB floor (duckdb {floor['duckdb']}, {floor['threads']} threads, same files): {floor['seconds']:.2f} s; collation = {ratio:.2f}x the floor")
    broken = []
    if a.max_floor_ratio is not None:
        verdict = "ok" if ratio <= a.max_floor_ratio else "OVER"
        print(f"  budget: whole collation <= {a.max_floor_ratio:g}x DuckDB's read = {a.max_floor_ratio * floor['seconds']:.2f} s: {verdict}")
        if ratio > a.max_floor_ratio:
            broken.append(f"the collation took {wall:.2f} s, {ratio:.1f}x DuckDB's {floor['seconds']:.2f} s read of the same files (budget {a.max_floor_ratio:g}x)")
    if a.max_step_share is not None:
        # Reading the raw files is the floor's own work, held by the
        # ratio above; every later step is the collator's analysis.
        name, own, _ = max(steps[1:] or steps, key=lambda s: s[1])
        share = own / total
        verdict = "ok" if share <= a.max_step_share else "OVER"
        print(f"  budget: no step after reading over {100 * a.max_step_share:g}% of the total: largest '{name}' {100 * share:.1f}%: {verdict}")
        if share > a.max_step_share:
            broken.append(f"step '{name}' took {own:.2f} s, {100 * share:.0f}% of the collation's {total:.2f} s (budget {100 * a.max_step_share:g}%)")
    if a.max_rss_mib is not None:
        verdict = "ok" if rss <= a.max_rss_mib else "OVER"
        print(f"  budget: peak memory <= {a.max_rss_mib:.0f} MiB: {rss:.0f} MiB: {verdict}")
        if rss > a.max_rss_mib:
            broken.append(f"peak memory {rss:.0f} MiB over the {a.max_rss_mib:.0f} MiB budget")
    sys.stdout.flush()
    for b in broken:
        print(f"COLLATION BUDGET BROKEN: {b}", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
