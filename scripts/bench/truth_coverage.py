#!/usr/bin/env python3
"""Composed duty figures of simulated runs against the simulator's truth.

For every run directory given (made with `--sim-truth`), and every duty rung
with composed figures: the true mean, spread (p99 - p1) and swing (p90 - p10)
of the summed `sim-truth/*.csv` waveform over the rung's measured window,
against the stated figure and its 95 % interval (summary.csv's *_ci95_*).

Prints one line per rung, then per mode: how many intervals hold the truth
and the relative error of the figure (median and worst). Reads its own way
(stdlib only), not the collator's code.

Usage: scripts/bench/truth_coverage.py RUN_DIR [RUN_DIR ...]
"""
import csv
import json
import os
import sys


def quantile(v, q):
    pos = q * (len(v) - 1)
    i = min(int(pos), len(v) - 2)
    return v[i] + (v[i + 1] - v[i]) * (pos - i)


def true_node(run):
    start, total = None, None
    d = os.path.join(run, "sim-truth")
    for name in sorted(os.listdir(d)):
        rows = list(csv.reader(open(os.path.join(d, name))))[1:]
        s = int(rows[0][0])
        vals = [float(r[1]) for r in rows]
        if start is None:
            start, total = s, vals
        else:
            assert s == start, "truth files start at different times"
            n = min(len(total), len(vals))
            total = [a + b for a, b in zip(total[:n], vals[:n])]
    return start, total


def main(runs):
    stats = {}
    print(f"{'run':>4} {'rung':34} {'fig':6} {'true':>8} {'stated':>8} {'lo':>8} {'hi':>8} in  err%")
    for k, run in enumerate(runs):
        start, node = true_node(run)
        win = {}
        for line in open(os.path.join(run, "events.jsonl")):
            e = json.loads(line)
            if e.get("event") == "rung_started":
                win[e["rung"]["id"]] = (e["measure_from_ns"], e["end_ns"])
        for r in csv.DictReader(open(os.path.join(run, "report", "summary.csv"))):
            if r["kind"] != "duty" or not r["spread_w"]:
                continue
            a, b = win[int(r["rung_id"])]
            v = sorted(node[(a - start) // 1_000_000:(b - start) // 1_000_000])
            truth = {
                "mean": sum(v) / len(v),
                "spread": quantile(v, 0.99) - quantile(v, 0.01),
                "swing": quantile(v, 0.9) - quantile(v, 0.1),
            }
            for fig, t in truth.items():
                got = float(r[f"{fig}_w"])
                lo, hi = r.get(f"{fig}_ci95_lo_w"), r.get(f"{fig}_ci95_hi_w")
                inside = None
                if lo and hi:
                    inside = float(lo) <= t <= float(hi)
                err = 100 * (got - t) / t
                key = (r["mode"], fig)
                s = stats.setdefault(key, {"n": 0, "in": 0, "err": []})
                s["n"] += 1
                s["in"] += bool(inside)
                s["err"].append(err)
                print(f"{k:4} {r['label']:34} {fig:6} {t:8.1f} {got:8.1f} {lo or '-':>8} {hi or '-':>8} "
                      f"{'y' if inside else 'N' if inside is False else '-'} {err:+6.1f}")
    print()
    for (mode, fig), s in sorted(stats.items()):
        e = sorted(s["err"], key=abs)
        print(f"{mode:10} {fig:6}: interval holds the truth in {s['in']}/{s['n']} "
              f"({100 * s['in'] / s['n']:.0f} %); error median {e[len(e) // 2]:+.1f} %, worst {e[-1]:+.1f} %, "
              f"mean {sum(s['err']) / len(e):+.1f} %")


if __name__ == "__main__":
    main(sys.argv[1:])
