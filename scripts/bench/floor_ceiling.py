#!/usr/bin/env python3
"""Checks a collated run's composed duty figures against what its samples allow.

For every duty rung with composed figures, from the raw buffered samples
alone (its own reading, not the collator's code):
- floor   = the sum over GPUs of each GPU's lowest buffered sample in the
            rung's measured window;
- ceiling = the sum of each GPU's highest;
- step    = the summary's step_w (else ceiling - floor).
A composed p1 below the floor, or a p99 above the ceiling, by more than
2 % of the step is a figure the samples do not support (issue 31).

Usage: scripts/bench/floor_ceiling.py RUN_DIR [RUN_DIR ...]; exit 1 if any rung fails.
"""
import csv
import gzip
import json
import os
import sys


def raw_rows(run):
    raw = os.path.join(run, "raw")
    for name in sorted(os.listdir(raw)):
        path = os.path.join(raw, name)
        if name.endswith(".csv.gz"):
            f = gzip.open(path, "rt")
        elif name.endswith(".csv"):
            f = open(path)
        else:
            continue
        with f:
            for row in csv.DictReader(f):
                if row["instrument"] == "buffered_w":
                    yield row["gpu"], int(row["ts_ns"]), float(row["value"])


def main(runs):
    bad = 0
    for run in runs:
        windows = {}
        with open(os.path.join(run, "events.jsonl")) as f:
            for line in f:
                e = json.loads(line)
                if e.get("event") == "rung_started":
                    windows[e["rung"]["id"]] = (e["measure_from_ns"], e["end_ns"])
        by_gpu = {}
        for gpu, t, v in raw_rows(run):
            by_gpu.setdefault(gpu, []).append((t, v))
        rows = list(csv.DictReader(open(os.path.join(run, "report", "summary.csv"))))
        print(f"== {run}")
        print(f"{'rung':34} {'p1':>8} {'floor':>8} {'p99':>8} {'ceiling':>8} {'step':>7} {'below%':>7} {'above%':>7}")
        for r in rows:
            if r["kind"] != "duty" or not r["p1_w"]:
                continue
            lo, hi = windows[int(r["rung_id"])]
            floor = ceiling = 0.0
            for samples in by_gpu.values():
                vals = [v for t, v in samples if lo <= t < hi]
                floor += min(vals)
                ceiling += max(vals)
            step = float(r.get("step_w") or 0) or (ceiling - floor)
            p1, p99 = float(r["p1_w"]), float(r["p99_w"])
            below = 100 * max(0.0, floor - p1) / step
            above = 100 * max(0.0, p99 - ceiling) / step
            flag = "  FAIL" if below > 2 or above > 2 else ""
            bad += bool(flag)
            print(f"{r['label']:34} {p1:8.1f} {floor:8.1f} {p99:8.1f} {ceiling:8.1f} {step:7.1f} {below:7.2f} {above:7.2f}{flag}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
