#!/usr/bin/env python3
"""Lifecycle edges recomputed from the independent meter (its own code,
not the harness's): scripts/device/independent_meter.py's buffered NVML
samples, aligned on the run's own event moments (events.jsonl's
`lifecycle` notes: spawn, kill, exit; realtime ns, the clock the driver
stamps its samples with). Per event and GPU:
  kill: before = mean over the second before the moment, after = mean
    from 2 s to 3 s past it; step = after - before;
  exit: the moment is when the runner saw the process end, after its
    teardown (~1 s on PyTorch): the fall is searched from 3 s before it,
    before = mean over the second before the fall, after as for a kill;
  start (spawn): before = mean over the second before the spawn, after =
    the same rung's stop's level before;
  the edge: the first sample past 50 % of the step after the moment (or
    the search start), then back to the last sample short of 10 % and on
    to the first past 90 % (the plateau scatters by ~±50 W on a PyTorch
    loop: a first crossing of 10 % alone lands in that scatter).
Prints mean, sd, min, max per kind, beside the harness's
report/lifecycle_edges.csv when given.

    usage: independent_edges.py METER.npz RUN_DIR [--json OUT]
"""
import argparse
import csv
import json
import pathlib
import statistics as st

import numpy as np


def moments(run):
    """(kind, label, at_ns) of every lifecycle note."""
    out = []
    for line in (run / "events.jsonl").read_text().splitlines():
        e = json.loads(line)
        if e.get("event") == "note" and e.get("topic") == "lifecycle":
            d = e["detail"]
            out.append((d["event"], d["label"], int(d["at_ns"])))
    return out


def mean(t, v, a, b):
    m = (t >= a) & (t < b)
    return float(v[m].mean()) if m.any() else float("nan")


def crossings(t, v, t0, before, after):
    """The 10 % and 90 % times of the step from `before` to `after`
    after t0 (ns), about its first 50 % crossing (None where absent)."""
    m = t >= t0
    tt, vv = t[m], (v[m] - before) / (after - before)
    past = vv >= 0.5
    if not past.any():
        return None, None, None
    i50 = int(np.argmax(past))
    short = np.nonzero(vv[:i50] < 0.1)[0]
    i10 = int(short[-1]) + 1 if len(short) else 0
    beyond = np.nonzero(vv[i50:] >= 0.9)[0]
    i90 = i50 + int(beyond[0]) if len(beyond) else None
    return tt[i10], tt[i50], (tt[i90] if i90 is not None else None)


def stop_edge(t, v, kind, at):
    """A stop's (before, after, 10 %, 90 % time, ns)."""
    s = 1_000_000_000
    after = mean(t, v, at + 2 * s, at + 3 * s)
    if kind == "kill":
        before = mean(t, v, at - s, at)
        c10, _, c90 = crossings(t, v, at, before, after)
        return before, after, c10, c90
    # An exit: find the fall first, its level before it then.
    rough = mean(t, v, at - 3 * s, at - 2 * s)
    _, c50, _ = crossings(t, v, at - 3 * s, rough, after)
    if c50 is None:
        return rough, after, None, None
    before = mean(t, v, c50 - s - 100_000_000, c50 - 100_000_000)
    c10, _, c90 = crossings(t, v, c50 - 200_000_000, before, after)
    return before, after, c10, c90


def edges(meter, run):
    ev = moments(run)
    rows = []
    gpus = [k[:-len("_ts_us")] for k in meter.files if k.endswith("_ts_us")]
    for g in gpus:
        t = meter[f"{g}_ts_us"].astype(np.int64) * 1000
        v = meter[f"{g}_value_mw"].astype(np.float64) / 1000.0
        level = {}
        for kind, lab, at in ev:
            if kind not in ("kill", "exit"):
                continue
            before, after, c10, c90 = stop_edge(t, v, kind, at)
            level[lab] = before
            rows.append(row("stop_" + kind, g, lab, before, after, at, c10, c90))
        for kind, lab, at in ev:
            if kind != "spawn" or lab not in level:
                continue
            before = mean(t, v, at - 1_000_000_000, at)
            after = level[lab]
            c10, _, c90 = crossings(t, v, at, before, after)
            rows.append(row("start_cold", g, lab, before, after, at, c10, c90))
    return rows


def row(kind, g, lab, before, after, at, c10, c90):
    return {
        "kind": kind, "gpu": g, "label": lab, "before_w": before, "after_w": after,
        "step_w": after - before,
        "delay_ms": (c10 - at) / 1e6 if c10 is not None else float("nan"),
        "t10_90_ms": (c90 - c10) / 1e6 if c10 is not None and c90 is not None else float("nan"),
    }


def summary(rows):
    out = {}
    for kind in sorted({r["kind"] for r in rows}):
        of = [r for r in rows if r["kind"] == kind]
        out[kind] = {"n": len(of)}
        for k in ("before_w", "after_w", "step_w", "delay_ms", "t10_90_ms"):
            x = [r[k] for r in of if r[k] == r[k]]
            out[kind][k] = {"mean": st.mean(x), "sd": st.stdev(x) if len(x) > 1 else 0.0,
                            "min": min(x), "max": max(x)} if x else None
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("meter")
    ap.add_argument("run", type=pathlib.Path)
    ap.add_argument("--json")
    a = ap.parse_args()
    s = summary(edges(np.load(a.meter), a.run))
    harness = {}
    path = a.run / "report" / "lifecycle_edges.csv"
    if path.is_file():
        harness = {r["kind"]: r for r in csv.DictReader(path.open())}
    for kind, f in s.items():
        print(f"{kind} (n {f['n']}):")
        for k in ("before_w", "after_w", "step_w", "delay_ms", "t10_90_ms"):
            x = f[k]
            h = harness.get(kind, {}).get(k, "")
            if x:
                print(f"  {k:10} meter {x['mean']:9.2f} sd {x['sd']:7.2f} [{x['min']:.2f}, {x['max']:.2f}]   harness {h}")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(s, indent=1))


if __name__ == "__main__":
    main()
