#!/usr/bin/env python3
"""Self-test of independent_fold.py on synthetic meter data (numpy only; no
GPU): a true power waveform on a 0.1 ms grid, buffered samples that are its
20 ms averages ending at their stamps (+ 3 W noise, mW integers), and an
energy counter that updates every 100 ms, read every 200 ms (mJ integers).

  square     240 ms period, 150 ms at 640 W / 90 ms at 240 W, 3 ms rounded
             edges, each edge jittered by 2 ms (sd), samples every 20 ms
             (phase-locked to the period: the fold's worst case);
  walk       the same, but each cycle's length is 240 ms + 1 ms (sd), a
             random walk in phase (a sleep-until loop), samples every 10 ms;
  accumulate 4 x 150 ms micro-steps at 650 W, each ending in a 30 ms dip to
             480 W, 20 ms optimizer at 560 W, then 1000 ms idle at 120 W
             (1620 ms period, 2 ms jitter), samples every 20 ms;
  flat       600 W, a slow 5 W drift, 6 W sample noise: no period.

Checks over a 60 s window: period within 0.5 %, the energy-counter,
sample and folded-cycle means within 0.5 % of the true mean, swing within 5 % of the true
one (p90 - p10 in time of the 20 ms-averaged truth); flat says no period
and reports p90 - p10 of its raw samples;
then the CLI end to end on an .npz and a JSON meter file.

    usage: python3 test_independent_fold.py
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import independent_fold as fold  # noqa: E402

DT = 1e-4          # truth grid, s
T_START = 1.75e9   # Unix s
LENGTH = 70.0      # s of synthetic recording
WIN = (T_START + 5.0, T_START + 65.0)
RNG = np.random.default_rng(7)


def levels_to_signal(t, change_t, level_after, first_level, tau=0.003):
    """Piecewise-constant levels (level_after[i] from change_t[i]) on grid t,
    through a first-order lag of time constant tau (rounded edges)."""
    i = np.searchsorted(change_t, t, side="right") - 1
    x = np.where(i >= 0, np.asarray(level_after)[np.maximum(i, 0)], first_level)
    k = np.exp(-np.arange(0, 10 * tau, DT) / tau)
    k /= k.sum()
    y = np.convolve(x, k)[: len(x)]
    y[: len(k)] = x[: len(k)]
    return y


def square(cycle_starts, on, hi, lo, jitter):
    ch, lv = [], []
    for s in cycle_starts:
        ch += [s + RNG.normal(0, jitter), s + on + RNG.normal(0, jitter)]
        lv += [hi, lo]
    return np.asarray(ch), np.asarray(lv)


def accumulate_levels(cycle_starts, jitter):
    ch, lv = [], []
    for s in cycle_starts:
        s = s + RNG.normal(0, jitter)
        for m in range(4):
            ch += [s + m * 0.150, s + m * 0.150 + 0.120]
            lv += [650.0, 480.0]
        ch += [s + 0.600, s + 0.620]
        lv += [560.0, 120.0]
    return np.asarray(ch), np.asarray(lv)


def meter_from_truth(t, p, spacing, noise_w=3.0):
    """Buffered samples (stamps µs, mW) and energy reads (s, mJ) of truth p."""
    cum = np.concatenate([[0.0], np.cumsum(p) * DT])            # J at t[0] + i DT
    stamps = np.arange(t[0] + 0.05, t[-1], spacing) + RNG.uniform(-3e-4, 3e-4,
                                                                   len(np.arange(t[0] + 0.05, t[-1], spacing)))
    def energy_j(x):
        return np.interp(x, np.concatenate([t, [t[-1] + DT]]), cum)
    vals = (energy_j(stamps) - energy_j(stamps - fold.SAMPLE_SPAN_S)) / fold.SAMPLE_SPAN_S
    vals = vals + RNG.normal(0, noise_w, len(vals))
    ts_us = np.round(stamps * 1e6).astype(np.int64)
    mw = np.round(vals * 1e3).astype(np.int64)
    polls = np.arange(t[0] + 0.01, t[-1], 0.2) + RNG.uniform(0, 1e-3, len(np.arange(t[0] + 0.01, t[-1], 0.2)))
    updates = t[0] + np.floor((polls - t[0] - 0.037) / 0.1) * 0.1 + 0.037  # counter steps every 100 ms
    mj = 1_234_567_890 + np.floor(energy_j(updates) * 1e3).astype(np.int64)
    return ts_us, mw, polls, mj


def truth_stats(t, p):
    m = (t >= WIN[0]) & (t <= WIN[1])
    n = int(round(fold.SAMPLE_SPAN_S / DT))
    avg = np.convolve(p, np.ones(n) / n)[: len(p)]               # 20 ms trailing average
    mc = (t - fold.SAMPLE_SPAN_S / 2 >= WIN[0]) & (t - fold.SAMPLE_SPAN_S / 2 <= WIN[1])
    p10, p90 = np.percentile(avg[mc], [10, 90])
    return float(p[m].mean()), float(p90 - p10)


def make_case(name):
    t = T_START + np.arange(0, LENGTH, DT)
    if name == "square":
        starts = T_START + np.arange(0, LENGTH, 0.240)
        ch, lv = square(starts, 0.150, 640.0, 240.0, 0.002)
        p_true, spacing = 0.240, 0.020
    elif name == "walk":
        lengths = 0.240 + RNG.normal(0, 0.001, int(LENGTH / 0.2))
        starts = T_START + np.concatenate([[0], np.cumsum(lengths)])
        ch, lv = square(starts, 0.150, 640.0, 240.0, 0.0)
        inw = (starts >= WIN[0]) & (starts <= WIN[1])
        p_true = float(np.polyfit(np.arange(inw.sum()), starts[inw], 1)[0])  # realised period
        spacing = 0.010
    elif name == "accumulate":
        starts = T_START + np.arange(0, LENGTH, 1.620)
        ch, lv = accumulate_levels(starts, 0.002)
        p_true, spacing = 1.620, 0.020
    elif name == "flat":
        ch, lv = np.array([T_START - 1]), np.array([600.0])
        p_true, spacing = None, 0.020
    else:
        raise ValueError(name)
    p = levels_to_signal(t, ch, lv, lv[-1])
    if name == "flat":
        p = p + 5.0 * np.sin(2 * np.pi * (t - T_START) / 40.0)
    ts_us, mw, et, emj = meter_from_truth(t, p, spacing, noise_w=6.0 if name == "flat" else 3.0)
    mean, swing = truth_stats(t, p)
    return {"ts_us": ts_us, "mw": mw, "et": et, "emj": emj,
            "p_true": p_true, "mean": mean, "swing": swing}


def rel(a, b):
    return abs(a - b) / abs(b)


def check_case(name):
    c = make_case(name)
    r = fold.analyse(c["ts_us"], c["mw"], c["et"], c["emj"], *WIN)
    fails = []
    for key in ("energy_mean_w", "sample_mean_w"):
        if not rel(r[key], c["mean"]) < 0.005:
            fails.append(f"{key} {r[key]:.2f} vs {c['mean']:.2f}")
    if c["p_true"] is None:
        if r["period_found"]:
            fails.append(f"flat job got a period {r['period_ms']:.2f} ms")
        else:
            tc = c["ts_us"] * 1e-6 - fold.SAMPLE_SPAN_S / 2
            w = c["mw"][(tc >= WIN[0]) & (tc <= WIN[1])] / 1e3
            raw = float(np.subtract(*np.percentile(w, [90, 10])))
            if abs(r["swing_w"] - raw) > 1e-9:
                fails.append(f"swing {r['swing_w']:.2f} is not the raw p90 - p10 {raw:.2f}")
            print(f"{name:10s} no period (acf best {r['acf_peak']:.2f}: {r['note']}); mean E "
                  f"{r['energy_mean_w']:.2f} S {r['sample_mean_w']:.2f} true {c['mean']:.2f} W; "
                  f"raw swing {r['swing_w']:.1f} W (noise-free 20 ms truth {c['swing']:.1f} W)")
    else:
        if not r["period_found"]:
            fails.append("no period found")
        else:
            if not rel(r["period_ms"], c["p_true"] * 1e3) < 0.005:
                fails.append(f"period {r['period_ms']:.3f} vs {c['p_true'] * 1e3:.3f} ms")
            if not rel(r["swing_w"], c["swing"]) < 0.05:
                fails.append(f"swing {r['swing_w']:.1f} vs {c['swing']:.1f} W")
            if not rel(r["fold_mean_w"], c["mean"]) < 0.005:
                fails.append(f"fold mean {r['fold_mean_w']:.2f} vs {c['mean']:.2f} W")
            print(f"{name:10s} period {r['period_ms']:.3f} ± {r['period_se_ms']:.3f} ms "
                  f"(acf {r['period_acf_ms']:.1f}, true {c['p_true'] * 1e3:.3f}), jitter "
                  f"{r['jitter_ms']:.2f} ms, {r['n_cycles']} cycles, {r['empty_bins']} empty bins; "
                  f"mean E {r['energy_mean_w']:.2f} S {r['sample_mean_w']:.2f} fold "
                  f"{r['fold_mean_w']:.2f} true {c['mean']:.2f} W; swing {r['swing_w']:.1f} "
                  f"(true {c['swing']:.1f}) W, peak {r['peak_w']:.1f} W")
    for f in fails:
        print(f"  FAIL {name}: {f}")
    return c, not fails


def write_meter(path, cases):
    d = {"format": "independent_meter/1", "start_unix": T_START, "end_unix": T_START + LENGTH,
         "interval_s": 0.2, "polls": 350, "gpus": list(range(len(cases))),
         "uuids": [f"GPU-synthetic-{k}" for k in range(len(cases))],
         "names": ["synthetic"] * len(cases)}
    for k, c in enumerate(cases):
        d[f"g{k}_ts_us"], d[f"g{k}_value_mw"] = c["ts_us"], c["mw"]
        d[f"g{k}_energy_t_s"], d[f"g{k}_energy_mj"] = c["et"], c["emj"]
        d[f"g{k}_poll_t_s"] = c["et"]
        d[f"g{k}_poll_newest_us"] = np.array([c["ts_us"][c["ts_us"] <= x * 1e6].max(initial=0)
                                              for x in c["et"]], dtype=np.int64)
        d[f"g{k}_errors"] = 0
    if path.endswith(".npz"):
        np.savez(path, **{k: np.asarray(v) for k, v in d.items()})
    else:
        with open(path, "w") as f:
            json.dump({k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in d.items()}, f)


def check_cli(square_case, flat_case):
    ok = True
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        for ext in ("npz", "json"):
            meter, out = os.path.join(tmp, f"m.{ext}"), os.path.join(tmp, f"r_{ext}.json")
            write_meter(meter, [square_case, flat_case])
            cmd = [sys.executable, os.path.join(here, "independent_fold.py"), meter,
                   "--window", f"steady:{WIN[0]}:{WIN[1]}",
                   "--window", f"first10:{WIN[0]}:{WIN[0] + 10}", "--json", out]
            p = subprocess.run(cmd, capture_output=True, text=True)
            print(f"--- CLI on .{ext}: exit {p.returncode}")
            print(p.stdout.rstrip())
            if p.returncode != 0:
                print(p.stderr)
                ok = False
                continue
            res = json.load(open(out))["results"]
            got = {(r["window"], r["gpu"]): r for r in res}
            if not (len(res) == 4 and got[("steady", 0)]["period_found"]
                    and not got[("steady", 1)]["period_found"]
                    and abs(got[("first10", 0)]["period_ms"] - 240) < 1.2):
                print(f"  FAIL CLI .{ext}: unexpected results")
                ok = False
    return ok


def main():
    ok = True
    cases = {}
    for name in ("square", "walk", "accumulate", "flat"):
        cases[name], good = check_case(name)
        ok &= good
    ok &= check_cli(cases["square"], cases["flat"])
    print("ALL PASS" if ok else "SOME FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
