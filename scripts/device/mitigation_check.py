#!/usr/bin/env python3
"""Checks a mitigation run from its raw files alone, with its own code (not
the collator's): per rung and GPU, the achieved floor against the asked
one, the mean power from the buffered samples and from the energy
counter, each mitigation's energy overhead against the plain rung of the
same period and mode (by both), and the plain rungs' edge errors.

    usage: mitigation_check.py RUN_DIR [--json OUT.json]

The floor is the mean of the buffered samples stamped in the second half
of the off-phase left after the hysteresis and the ramp down the
calibration note states (at least 20 ms after them), folded over every
cycle of the measured window. Asked: floor_pct x the GPU's enforced limit, raised to
the idle draw the calibration measured where it lies below it.
"""
import csv
import gzip
import json
import statistics
import sys
from collections import defaultdict

WINDOW_NS = 20_000_000  # a buffered sample covers about 20 ms before its stamp


def opener(path):
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def load_events(run):
    rungs, notes = {}, defaultdict(list)
    with open(f"{run}/events.jsonl") as f:
        for line in f:
            e = json.loads(line)
            if e.get("event") == "rung_started":
                r = e["rung"]
                rungs[r["id"]] = dict(
                    label=r["label"],
                    mode=r["mode"],
                    period_ns=r.get("period_ms") and r["period_ms"] * 1e6,
                    nominal=r.get("nominal_period_ms") or r.get("period_ms"),
                    duty=r["duty"],
                    smoothing=r.get("smoothing"),
                    epoch=e["epoch_ns"],
                    start=e["measure_from_ns"],
                    end=e["end_ns"],
                    offsets=e.get("offsets_ns") or [],
                    gpus=e.get("gpus") or [],
                )
            elif e.get("event") == "note":
                notes[e.get("topic")].append(e.get("detail"))
    return rungs, notes


def load_raw(run, gpus):
    import os

    out = {}
    for g in gpus:
        path = next(
            (p for p in (f"{run}/raw/{g}.csv", f"{run}/raw/{g}.csv.gz") if os.path.exists(p)),
            None,
        )
        if path is None:
            continue
        buf, energy, limit = [], [], []
        with opener(path) as f:
            for row in csv.DictReader(f):
                ins, ts, v = row["instrument"], int(row["ts_ns"]), float(row["value"])
                if ins == "buffered_w":
                    buf.append((ts, v))
                elif ins == "energy_mj":
                    energy.append((ts, v))
                elif ins == "power_limit_w":
                    limit.append((ts, v))
        buf.sort()
        energy.sort()
        out[g] = dict(buf=buf, energy=energy, limit=limit)
    return out


def calibrations(notes):
    """rung id -> gpu -> calibration detail (whatever shape the note has)."""
    cal = defaultdict(dict)
    for d in notes.get("smoothing_calibration", []) + notes.get("smoothing", []):
        if not isinstance(d, dict):
            continue
        rid = d.get("rung_id")
        for g in d.get("gpus", []):
            cal[rid][g.get("gpu")] = g
    return cal


def energy_mean_w(energy, a, b):
    """Mean W over [a, b] from the energy counter (mJ), interpolated."""
    def at(t):
        for (t0, e0), (t1, e1) in zip(energy, energy[1:]):
            if t0 <= t <= t1 and t1 > t0:
                return e0 + (e1 - e0) * (t - t0) / (t1 - t0)
        return None

    ea, eb = at(a), at(b)
    if ea is None or eb is None:
        return None
    return (eb - ea) / 1e3 / ((b - a) / 1e9)


def floor_plateau(r, buf, offset, after_fall_ns):
    """Mean of buffered samples wholly inside the off-phase's plateau."""
    p = r["period_ns"]
    on = r["duty"] * p
    # The second half of what follows the hysteresis and the ramp down
    # (the work's tail decays in the first half), a sample's span in at least.
    lo = on + after_fall_ns + max((p - on - after_fall_ns) / 2, WINDOW_NS)
    hi = p - 1_000_000
    vals = []
    for ts, v in buf:
        if r["start"] <= ts - WINDOW_NS and ts <= r["end"]:
            ph = (ts - r["epoch"] - offset) % p
            if lo <= ph <= hi:
                vals.append(v)
    return (statistics.fmean(vals), len(vals)) if vals else (None, 0)


def edge_errors(run, rid):
    errs = []
    with open(f"{run}/edges.csv") as f:
        for row in csv.DictReader(f):
            if int(row["rung_id"]) == rid and row["kind"] in ("rise", "fall"):
                errs.append(abs(int(row["achieved_ns"]) - int(row["intended_ns"])) / 1e3)
    if not errs:
        return None
    errs.sort()
    return dict(n=len(errs), p50_us=errs[len(errs) // 2], p99_us=errs[int(0.99 * (len(errs) - 1))], max_us=errs[-1])


def main():
    run = sys.argv[1]
    rungs, notes = load_events(run)
    gpus = sorted({g for r in rungs.values() for g in r["gpus"]})
    raw = load_raw(run, gpus)
    cal = calibrations(notes)
    rows = []
    for rid, r in sorted(rungs.items()):
        if not r["period_ns"]:
            continue
        sm = r["smoothing"] or {}
        for i, g in enumerate(r["gpus"]):
            d = raw.get(g)
            if not d:
                continue
            inside = [v for ts, v in d["buf"] if r["start"] <= ts - WINDOW_NS and ts <= r["end"]]
            c = cal.get(rid, {}).get(g, {})
            limit = c.get("limit_w") or (d["limit"][-1][1] if d["limit"] else None)
            hyst = sm.get("ramp_down_hysteresis_ms", 0) * 1e6
            down = c.get("ramp_down_ns") or 0
            off = r["offsets"][i] if i < len(r["offsets"]) else 0
            floor_w, n_floor = floor_plateau(r, d["buf"], off, hyst + down)
            asked = None
            if sm.get("floor_pct") and limit:
                asked = sm["floor_pct"] / 100 * limit
                idle = c.get("idle_w")
                if idle is not None:
                    asked = max(asked, idle)
            rows.append(dict(
                rung=r["label"], rung_id=rid, gpu=g, mode=r["mode"], period_ms=r["nominal"],
                smoothing=sm or None, limit_w=limit,
                mean_buffered_w=statistics.fmean(inside) if inside else None,
                mean_energy_w=energy_mean_w(d["energy"], r["start"], r["end"]),
                off_plateau_w=floor_w, off_plateau_samples=n_floor,
                asked_floor_w=asked,
                floor_error_pct=(100 * (floor_w - asked) / asked) if (asked and floor_w) else None,
                edges=edge_errors(run, rid),
            ))
    plain = {(x["gpu"], x["mode"], x["period_ms"]): x for x in rows if not x["smoothing"]}
    for x in rows:
        p = plain.get((x["gpu"], x["mode"], x["period_ms"]))
        if x["smoothing"] and p:
            for k in ("mean_buffered_w", "mean_energy_w"):
                if x[k] is not None and p[k]:
                    x[f"overhead_{k}"] = x[k] - p[k]
                    x[f"overhead_{k}_pct"] = 100 * (x[k] - p[k]) / p[k]
    fmt = lambda v, f="{:.1f}": "-" if v is None else f.format(v)
    print("rung | gpu | mean W (buffered) | mean W (energy) | off plateau W | asked floor W | floor err % | overhead W (buf / energy) | overhead % (buf / energy) | edges p99/max us")
    for x in rows:
        e = x.get("edges")
        print(" | ".join([
            x["rung"], x["gpu"], fmt(x["mean_buffered_w"]), fmt(x["mean_energy_w"]),
            fmt(x["off_plateau_w"]), fmt(x["asked_floor_w"]), fmt(x["floor_error_pct"], "{:+.2f}"),
            fmt(x.get("overhead_mean_buffered_w")) + " / " + fmt(x.get("overhead_mean_energy_w")),
            fmt(x.get("overhead_mean_buffered_w_pct"), "{:+.1f}") + " / " + fmt(x.get("overhead_mean_energy_w_pct"), "{:+.1f}"),
            f"{e['p99_us']:.1f}/{e['max_us']:.1f} (n={e['n']})" if e else "-",
        ]))
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
