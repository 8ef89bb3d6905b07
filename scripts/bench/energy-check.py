#!/usr/bin/env python3
"""Independent check (numpy only, its own code, not the harness's) of a
node run's means and workload periods against its raw files.

    scripts/bench/energy-check.py RUN_DIR [--json OUT.json]

Per rung (events.jsonl `rung_started`: measured from `measure_from_ns` to
`end_ns`), per GPU (raw/<gpu>.csv or .csv.gz), summed over the GPUs:

  unweighted   the mean of the buffered samples stamped in the window,
               each counted once;
  trapezoid    the buffered samples weighted by time: each stands for half
               the gap to the sample before it and half the gap to the one
               after it (trapezoid), over the window;
  counter      the energy counter (`energy_mj`): the difference between
               the first and last reading inside the window over the time
               between them;
  report       `mean_w` of the run's report/summary.csv, and its gap to the
               counter.

Per workload rung (kind `workload`), per GPU:

  period       the spectrum's fundamental (then refined by epoch folding:
               the period within 0.2 % whose 50-bin fold varies most):
               the samples interpolated onto a
               1 ms grid, less their mean, Hann window, zero-padded x4;
               the strongest line up to the samples' Nyquist frequency,
               then the lowest of its integer fractions (down to 1/4) that
               is itself a line (>= 20x the median power and >= 5 % of
               the strongest), refined by a parabola on each harmonic's
               peak, weighted by power;
  fold         the samples folded at that period (phase of each sample's
               stamp, 100 bins, each bin the mean of its samples; empty
               bins interpolated around the circle): swing = p90 - p10 of
               the bins, the folded mean;
  report       period_ms and swing_w of report/workload.csv beside them.

Reads files only.
"""
import argparse
import csv
import gzip
import json
import os
import sys

import numpy as np

BINS = 100


def raw_rows(run, gpu):
    path = os.path.join(run, "raw", f"{gpu}.csv")
    opener = open
    if not os.path.exists(path):
        path += ".gz"
        opener = gzip.open
    out = {}
    with opener(path, "rt") as f:
        next(f)
        for line in f:
            p = line.rstrip("\n").split(",")
            if len(p) != 5:
                continue
            try:
                out.setdefault(p[3], []).append((int(p[0]), float(p[4])))
            except ValueError:
                continue
    return {k: np.array(sorted(v)) for k, v in out.items()}


def window(a, t0, t1):
    m = (a[:, 0] >= t0) & (a[:, 0] < t1)
    return a[m]


def trapezoid_mean(b, t0, t1):
    """Each sample in [t0, t1) stands for half the gap to each neighbour
    (its neighbours outside the window count too); a half-gap over 1.5
    median spacings counts as 1.5."""
    lo = int(np.searchsorted(b[:, 0], t0))
    hi = int(np.searchsorted(b[:, 0], t1))
    if hi - lo < 2:
        return float("nan")
    t = b[:, 0].astype(float)
    gaps = np.diff(t[max(lo - 1, 0):min(hi + 1, len(t))])
    cap = 1.5 * float(np.median(gaps[gaps > 0]))
    num = den = 0.0
    for k in range(lo, hi):
        halves = []
        if k > 0:
            halves.append(min(t[k] - t[k - 1], 2 * cap) / 2)
        if k + 1 < len(t):
            halves.append(min(t[k + 1] - t[k], 2 * cap) / 2)
        w = sum(halves) if len(halves) == 2 else 2 * halves[0]
        num += w * b[k, 1]
        den += w
    return num / den


def counter_mean(e, t0, t1):
    inside = window(e, t0, t1)
    if len(inside) < 2 or inside[-1, 0] - inside[0, 0] < (t1 - t0) / 2:
        return float("nan")
    return float((inside[-1, 1] - inside[0, 1]) / 1e3 / ((inside[-1, 0] - inside[0, 0]) / 1e9))


def peak_near(p, k, half):
    lo, hi = max(int(round(k)) - half, 1), min(int(round(k)) + half, len(p) - 2)
    best = lo + int(np.argmax(p[lo:hi + 1]))
    a, b, c = p[best - 1], p[best], p[best + 1]
    den = a - 2 * b + c
    d = float(np.clip(0.5 * (a - c) / den, -0.5, 0.5)) if den < 0 else 0.0
    return best + d, b


def spectral_period_ms(b):
    t = (b[:, 0] - b[0, 0]) / 1e6
    g = np.arange(0.0, t[-1], 1.0)
    y = np.interp(g, t, b[:, 1])
    y = (y - y.mean()) * np.hanning(len(y))
    size = 1 << int(np.ceil(np.log2(4 * len(y))))
    p = np.abs(np.fft.rfft(y, size)) ** 2
    df = 1000.0 / size
    spacing = float(np.median(np.diff(t)))
    lo, hi = int(np.ceil(0.25 / df)), min(int((500.0 / spacing) / df), len(p) - 2)
    noise = float(np.median(p[lo:hi + 1]))
    top = lo + int(np.argmax(p[lo:hi + 1]))
    if p[top] < 20 * noise:
        return None
    for m in (4, 3, 2, 1):
        if top / m < lo:
            continue
        k, pw = peak_near(p, top / m, 8 // m + 1)
        if pw >= 20 * noise and pw >= 0.05 * p[top]:
            f0 = k
            break
    else:
        return None
    num = den = 0.0
    h = 1
    while f0 * h <= hi:
        k, pw = peak_near(p, f0 * h, 8)
        if pw >= 20 * noise:
            num += pw * k / h
            den += pw
        h += 1
    return 1000.0 / ((num / den) * df)


def refine(b, period_ms):
    """The period near `period_ms` (within 0.2 %) whose fold's bins vary
    most (epoch folding): a period off by 0.03 % drifts 12 ms over 300
    iterations and smears the fold."""
    best = (-1.0, period_ms)
    for p in np.linspace(period_ms * 0.998, period_ms * 1.002, 801):
        ph = ((b[:, 0] - b[0, 0]) / 1e6 / p) % 1.0
        idx = np.minimum((ph * 50).astype(int), 49)
        s = np.bincount(idx, weights=b[:, 1], minlength=50)
        n = np.bincount(idx, minlength=50)
        k = n > 0
        var = float(np.var(s[k] / n[k]))
        if var > best[0]:
            best = (var, float(p))
    return best[1]


def fold(b, period_ms):
    ph = ((b[:, 0] - b[0, 0]) / 1e6 / period_ms) % 1.0
    idx = np.minimum((ph * BINS).astype(int), BINS - 1)
    s = np.bincount(idx, weights=b[:, 1], minlength=BINS)
    n = np.bincount(idx, minlength=BINS)
    known = n > 0
    x = np.arange(BINS)
    vals = np.interp(x, x[known], s[known] / n[known], period=BINS)
    return float(np.percentile(vals, 90) - np.percentile(vals, 10)), float(vals.mean())


def report_rows(run, name):
    path = os.path.join(run, "report", name)
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return {r["label"]: r for r in csv.DictReader(f)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run")
    ap.add_argument("--json")
    a = ap.parse_args()
    events = [json.loads(l) for l in open(os.path.join(a.run, "events.jsonl"))]
    rungs = [e for e in events if e.get("event") == "rung_started"]
    gpus = sorted({g for r in rungs for g in r.get("gpus", [])})
    raw = {g: raw_rows(a.run, g) for g in gpus}
    summary = report_rows(a.run, "summary.csv")
    workload = report_rows(a.run, "workload.csv")
    out = []
    print(f"{'rung':26s} {'unweighted':>10s} {'trapezoid':>10s} {'counter':>9s} {'report':>9s} {'unw/ctr':>8s} {'trap/ctr':>8s} {'rep/ctr':>8s}")
    for r in rungs:
        label, t0, t1 = r["rung"]["label"], r["measure_from_ns"], r["end_ns"]
        un = tr = ct = 0.0
        for g in r.get("gpus", gpus):
            b = raw[g].get("buffered_w")
            e = raw[g].get("energy_mj")
            un += float(window(b, t0, t1)[:, 1].mean()) if b is not None and len(window(b, t0, t1)) else float("nan")
            tr += trapezoid_mean(b, t0, t1) if b is not None else float("nan")
            ct += counter_mean(e, t0, t1) if e is not None else float("nan")
        rep = float(summary.get(label, {}).get("mean_w") or "nan")
        pct = lambda x: 100 * (x / ct - 1)
        row = dict(rung=label, kind=r["rung"]["kind"], unweighted_w=un, trapezoid_w=tr, counter_w=ct, report_w=rep)
        print(f"{label:26s} {un:10.2f} {tr:10.2f} {ct:9.2f} {rep:9.2f} {pct(un):+7.2f}% {pct(tr):+7.2f}% {pct(rep):+7.2f}%")
        if r["rung"]["kind"] == "workload":
            for g in r.get("gpus", gpus):
                b = window(raw[g]["buffered_w"], t0, t1)
                per = spectral_period_ms(b)
                per = refine(b, per) if per else None
                sw, fm = fold(b, per) if per else (float("nan"), float("nan"))
                w = workload.get(label, {})
                row.update(period_ms=per, fold_swing_w=sw, fold_mean_w=fm,
                           report_period_ms=w.get("period_ms"), report_swing_w=w.get("swing_w"))
                print(f"    {g}: spectral period {per if per else float('nan'):.3f} ms, independent fold swing {sw:.1f} W (mean {fm:.1f} W);"
                      f" report: period {w.get('period_ms') or '-'} ms, swing {w.get('swing_w') or '-'} W, status {w.get('status', '-')}")
        out.append(row)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
