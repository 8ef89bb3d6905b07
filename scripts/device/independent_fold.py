#!/usr/bin/env python3
"""Independent analysis (numpy only, its own code, not the harness's) of an
independent_meter.py file: per window and GPU,

  mean power   by the energy counter, (E(to) - E(from)) / (to - from), the
               reads interpolated linearly at the window's ends; and the mean
               of the buffered samples placed in the window;
  period       each buffered sample is a ~20 ms average ending near its stamp,
               so it is placed at stamp - 10 ms; the samples are resampled to
               a 1 ms grid (linear), less its mean and drift (its 10 s
               centred moving average; a straight line in windows under
               20 s), and autocorrelated through an FFT (normalised per
               overlap: r(k) = sum / (n - k), over r(0)). The
               lobe around lag 0 is skipped (down to where it first falls
               under 0.3); the first later stretch above 0.3 x zero-lag with
               its peak in 30..3000 ms gives the period, refined by a
               parabola. Then the rising crossings of the mid level (halfway
               between p10 and p90 of the grid), with hysteresis, are fitted
               to t0 + k P by least squares: P, its standard error, and the
               jitter (std of the crossings' residuals); crossings that
               scatter over 10 % of the fitted period are no period;
  fold         the samples between consecutive rising crossings (each cycle
               aligned at its own crossing, phase scaled by that cycle's
               length) go to 100 phase bins; the folded cycle is the mean per
               bin (empty bins interpolated around the circle). swing = p90 -
               p10 of the bins (uniform in phase), peak = the highest bin,
               and the folded cycle's mean;
  no period    (a flat job, e.g. back to back): said so, and swing = p90 -
               p10 of the raw samples in the window.

Windows are Unix seconds: --from-s/--to-s, or --window NAME:FROM:TO (may be
repeated); with none, the span where every GPU has samples and energy
reads. Prints a table; --json writes it.

    usage: independent_fold.py METER.npz|METER.json [--gpus 0,1]
                               [--from-s T0 --to-s T1] [--window NAME:FROM:TO ...]
                               [--json OUT.json]

Reads files only; nothing here touches a GPU.
"""
import argparse
import json
import math
import re
import sys

import numpy as np

SAMPLE_SPAN_S = 0.020   # a buffered sample averages ~20 ms before its stamp
GRID_S = 0.001
LAG_MIN_S, LAG_MAX_S = 0.030, 3.000
ACF_THRESHOLD = 0.3
DRIFT_S = 10.0          # the autocorrelation sees the grid less its 10 s moving average
HYSTERESIS = 0.1        # of p90 - p10, below the mid level, to re-arm a crossing
BINS = 100


# ---------------------------------------------------------------- loading

def load(path):
    """{'meta': {...}, 'gpus': [{'index','uuid','ts_us','value_mw','energy_t_s',
    'energy_mj','poll_t_s','poll_newest_us'}]} from a meter file."""
    if path.endswith(".npz"):
        with np.load(path, allow_pickle=False) as z:
            raw = {k: z[k] for k in z.files}
    else:
        with open(path) as f:
            raw = json.load(f)
    gpus = []
    for k, idx in enumerate(np.atleast_1d(raw["gpus"]).tolist()):
        g = {"index": int(idx), "uuid": str(np.atleast_1d(raw["uuids"])[k])}
        for key, dt in (("ts_us", np.int64), ("value_mw", np.float64), ("energy_t_s", np.float64),
                        ("energy_mj", np.float64), ("poll_t_s", np.float64),
                        ("poll_newest_us", np.int64)):
            g[key] = np.asarray(raw.get(f"g{k}_{key}", []), dtype=dt)
        g["errors"] = int(np.asarray(raw.get(f"g{k}_errors", 0)))
        gpus.append(g)
    meta = {k: np.asarray(v).item() for k, v in raw.items()
            if np.ndim(v) == 0 and not re.match(r"g\d+_", k)}
    return {"meta": meta, "gpus": gpus}


def clock_lag_s(g):
    """Median of (poll time - newest sample stamp): a few tens of ms when the
    stamps are Unix µs, as expected; far off means another time base."""
    m = g["poll_newest_us"] > 0
    if not m.any():
        return float("nan")
    return float(np.median(g["poll_t_s"][m] - g["poll_newest_us"][m] * 1e-6))


# ---------------------------------------------------------------- pieces

def energy_mean_w(t_s, mj, t0, t1):
    """Mean power over [t0, t1] from the energy counter, W; nan if the reads
    do not cover the window."""
    if len(t_s) < 2 or t0 < t_s[0] or t1 > t_s[-1] or t1 <= t0:
        return float("nan")
    e0, e1 = np.interp([t0, t1], t_s, mj)
    return float((e1 - e0) / 1e3 / (t1 - t0))


def high_pass(x, width):
    """x less its centred moving average over width points (shrunk at the
    ends): drift and anything slower than ~width/3 go, a period up to
    LAG_MAX_S stays (at most ~10 % of a 3 s fundamental is lost)."""
    n = len(x)
    if n < 2 * width:
        k = np.arange(n, dtype=np.float64)
        return x - np.polyval(np.polyfit(k, x, 1), k)
    c = np.concatenate([[0.0], np.cumsum(x)])
    i = np.arange(n)
    lo, hi = np.maximum(i - width // 2, 0), np.minimum(i + width // 2 + 1, n)
    return x - (c[hi] - c[lo]) / (hi - lo)


def autocorrelation(x):
    """Autocorrelation of x (high-passed here), lag 0.. len-1, each lag divided
    by its overlap and the whole by lag 0."""
    n = len(x)
    k = np.arange(n, dtype=np.float64)
    x = high_pass(x, int(round(DRIFT_S / GRID_S)))
    nfft = 1 << (2 * n - 1).bit_length()
    f = np.fft.rfft(x, nfft)
    r = np.fft.irfft(f * np.conj(f), nfft)[:n]
    r = r / (n - k)
    return r / r[0] if r[0] > 0 else r * 0.0


def acf_period(r, dt=GRID_S, lo=LAG_MIN_S, hi=LAG_MAX_S, thr=ACF_THRESHOLD):
    """(period s, peak value) from an autocorrelation, or (None, best peak seen)."""
    kmax = min(int(round(hi / dt)), len(r) // 2)
    if kmax < 3:
        return None, float("nan")
    r = r[:kmax + 1]
    under = np.flatnonzero(r < thr)
    if under.size == 0:  # lag-0 lobe never ends: drift or a period beyond reach
        return None, float("nan")
    i = under[0]
    # the highest local maximum past the lobe, to say how close a miss was
    j = i + 1 + np.flatnonzero((r[i + 1:-1] > r[i:-2]) & (r[i + 1:-1] >= r[i + 2:]))
    best = float(r[j].max()) if j.size else float("nan")
    while i <= kmax:
        over = np.flatnonzero(r[i:] >= thr)
        if over.size == 0:
            return None, best
        s = i + over[0]
        below_after = np.flatnonzero(r[s:] < thr)
        if below_after.size == 0:  # runs into the last lag: its peak may lie beyond
            return None, best
        e = s + below_after[0]     # first index under again
        p = s + int(np.argmax(r[s:e]))
        if p * dt >= lo and 0 < p < kmax:
            y0, y1, y2 = r[p - 1], r[p], r[p + 1]
            den = y0 - 2 * y1 + y2
            d = 0.5 * (y0 - y2) / den if den < 0 else 0.0
            return (p + d) * dt, float(y1)
        i = e
    return None, best


def rising_crossings(t, g, level, hyst, min_gap):
    """Times where g rises through level (linear between grid points), each
    only after g has been below level - hyst since the last one, and at least
    min_gap after it."""
    idx = np.flatnonzero((g[:-1] < level) & (g[1:] >= level)) + 1
    low = np.flatnonzero(g < level - hyst)
    out, last_i, last_t = [], -1, -np.inf
    for i in idx:
        j = np.searchsorted(low, i) - 1  # last index below the re-arm level before i
        if j < 0 or low[j] <= last_i:
            continue
        tc = t[i - 1] + (level - g[i - 1]) / (g[i] - g[i - 1]) * (t[i] - t[i - 1])
        if tc - last_t < min_gap:
            continue
        out.append(tc)
        last_i, last_t = i, tc
    return np.asarray(out)


def fit_crossings(c, p0):
    """Least-squares c = t0 + k P with k counted from p0 (missed cycles skip a
    k); one pass drops residuals over P/4. (P, se, jitter, k, c, t0) or None."""
    if len(c) < 3:
        return None
    k = np.concatenate([[0], np.cumsum(np.round(np.diff(c) / p0))]).astype(np.int64)
    keep = np.concatenate([[True], np.diff(k) > 0])
    c, k = c[keep], k[keep]
    for _ in range(2):
        if len(c) < 3:
            return None
        slope, t0 = np.polyfit(k, c, 1)
        res = c - (t0 + slope * k)
        ok = np.abs(res) <= slope / 4
        if ok.all():
            break
        c, k = c[ok], k[ok]
    if len(c) < 3:
        return None
    slope, t0 = np.polyfit(k, c, 1)
    res = c - (t0 + slope * k)
    sxx = np.sum((k - k.mean()) ** 2)
    se = float(np.sqrt(np.sum(res ** 2) / (len(c) - 2) / sxx)) if sxx > 0 else float("nan")
    return float(slope), se, float(np.std(res)), k, c, float(t0)


def fold(tc, w, c, k, period, bins=BINS):
    """Mean per phase bin over the cycles between consecutive crossings (k
    one apart, length within 25 % of period). (bin means, counts, cycles)."""
    sums, counts = np.zeros(bins), np.zeros(bins)
    cycles = 0
    for j in range(len(c) - 1):
        length = c[j + 1] - c[j]
        if k[j + 1] - k[j] != 1 or abs(length - period) > 0.25 * period:
            continue
        a, b = np.searchsorted(tc, [c[j], c[j + 1]])
        if b <= a:
            continue
        ph = np.minimum(((tc[a:b] - c[j]) / length * bins).astype(np.int64), bins - 1)
        np.add.at(sums, ph, w[a:b])
        np.add.at(counts, ph, 1)
        cycles += 1
    means = np.full(bins, np.nan)
    has = counts > 0
    means[has] = sums[has] / counts[has]
    if 0 < has.sum() < bins:  # fill empty bins around the circle
        x = np.flatnonzero(has)
        xx = np.concatenate([x - bins, x, x + bins])
        means = np.interp(np.arange(bins), xx, np.tile(means[has], 3))
    return means, counts, cycles


# ---------------------------------------------------------------- one window

def analyse(ts_us, value_mw, energy_t_s, energy_mj, t0, t1):
    """Everything above for one GPU over [t0, t1] (Unix s): a dict."""
    ts_us = np.asarray(ts_us, dtype=np.int64)
    tc_all = ts_us * 1e-6 - SAMPLE_SPAN_S / 2
    order = np.argsort(tc_all, kind="stable")
    m = (tc_all[order] >= t0) & (tc_all[order] <= t1)
    tc = tc_all[order][m]
    w = np.asarray(value_mw, dtype=np.float64)[order][m] / 1e3
    tc, uniq = np.unique(tc, return_index=True)
    w = w[uniq]
    out = {"from_s": t0, "to_s": t1, "duration_s": t1 - t0, "n_samples": int(len(tc)),
           "energy_mean_w": energy_mean_w(np.asarray(energy_t_s, float),
                                          np.asarray(energy_mj, float), t0, t1),
           "sample_mean_w": float(w.mean()) if len(w) else float("nan"),
           "max_gap_ms": float(np.max(np.diff(tc)) * 1e3) if len(tc) > 1 else float("nan"),
           "period_found": False, "period_ms": None, "period_se_ms": None, "jitter_ms": None,
           "period_acf_ms": None, "acf_peak": None, "n_crossings": 0, "n_cycles": 0,
           "empty_bins": None, "folded_w": None, "fold_mean_w": None, "peak_w": None}
    if len(w) < 10:
        out.update(note="too few samples", swing_w=float("nan"), raw_swing_w=float("nan"))
        return out
    p10r, p90r = np.percentile(w, [10, 90])
    out["raw_swing_w"] = float(p90r - p10r)
    out["raw_peak_w"] = float(w.max())

    grid = np.arange(tc[0], tc[-1], GRID_S)
    g = np.interp(grid, tc, w)
    p_acf, peak = acf_period(autocorrelation(g))
    out["acf_peak"] = None if np.isnan(peak) else peak
    fit = None
    if p_acf is not None:
        out["period_acf_ms"] = p_acf * 1e3
        gp10, gp90 = np.percentile(g, [10, 90])
        level = (gp10 + gp90) / 2
        c = rising_crossings(grid, g, level, HYSTERESIS * (gp90 - gp10), 0.5 * p_acf)
        out["n_crossings"] = int(len(c))
        out["mid_level_w"] = float(level)
        fit = fit_crossings(c, p_acf)
    if fit is None:
        out["note"] = ("no period: " + ("no autocorrelation peak > 0.3 in 30-3000 ms"
                                        if p_acf is None else "too few crossings")
                       + "; swing = p90 - p10 of the raw samples")
        out["swing_w"] = out["raw_swing_w"]
        return out
    P, se, jit, k, c, _ = fit
    if jit > 0.1 * P:
        # Crossings scattered over a tenth of the period are no steady
        # iteration (a back-to-back job's samples beat with the sampling:
        # every other 129.5 ms step lands half a sample apart, which reads
        # as a 259.7 ms "period" with 13 % jitter).
        out["note"] = (f"no period: the crossings scatter {jit * 1e3:.1f} ms about a "
                       f"{P * 1e3:.1f} ms fit (over 10 %); swing = p90 - p10 of the raw samples")
        out["swing_w"] = out["raw_swing_w"]
        return out
    folded, counts, cycles = fold(tc, w, c, k, P)
    fp10, fp90 = np.percentile(folded, [10, 90])
    out.update(period_found=True, period_ms=P * 1e3, period_se_ms=se * 1e3, jitter_ms=jit * 1e3,
               n_cycles=int(cycles), empty_bins=int(np.sum(counts == 0)),
               folded_w=[round(float(x), 2) for x in folded], fold_mean_w=float(folded.mean()),
               peak_w=float(folded.max()), fold_p10_w=float(fp10), fold_p90_w=float(fp90),
               swing_w=float(fp90 - fp10), note="")
    return out


# ---------------------------------------------------------------- CLI

def parse_windows(a, data):
    wins = []
    for spec in a.window or []:
        name, f, t = spec.rsplit(":", 2)
        wins.append((name, float(f), float(t)))
    if a.from_s is not None or a.to_s is not None:
        if a.from_s is None or a.to_s is None:
            sys.exit("--from-s and --to-s go together")
        wins.append(("window", a.from_s, a.to_s))
    if not wins:  # where every GPU has both samples and energy reads
        gs = [g for g in data["gpus"] if len(g["ts_us"]) and len(g["energy_t_s"]) > 1]
        if not gs:
            sys.exit("no GPU in the file has samples and energy reads")
        f = max(max(g["ts_us"].min() * 1e-6, g["energy_t_s"][0]) for g in gs)
        t = min(min(g["ts_us"].max() * 1e-6, g["energy_t_s"][-1]) for g in gs)
        wins.append(("all", f, t))
    for name, f, t in wins:
        if t <= f:
            sys.exit(f"window {name}: TO must be after FROM")
    return wins


def clean(x):
    """x with every nan made None (strict JSON) and numpy scalars made Python."""
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    return None if isinstance(x, float) and math.isnan(x) else x


def fmt(x, spec):
    return "-" if x is None or (isinstance(x, float) and np.isnan(x)) else format(x, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("meter", help="independent_meter.py output (.npz or JSON)")
    ap.add_argument("--from-s", type=float, default=None, help="window start, Unix s")
    ap.add_argument("--to-s", type=float, default=None, help="window end, Unix s")
    ap.add_argument("--window", action="append", help="NAME:FROM:TO in Unix s (repeatable)")
    ap.add_argument("--gpus", default=None, help="comma-separated GPU indices (default: all)")
    ap.add_argument("--json", default=None, help="write the results here")
    a = ap.parse_args()
    data = load(a.meter)
    want = None if a.gpus is None else {int(x) for x in a.gpus.split(",")}
    gpus = [g for g in data["gpus"] if want is None or g["index"] in want]
    for g in gpus:
        lag = clock_lag_s(g)
        if not np.isnan(lag) and abs(lag) > 10:
            print(f"WARNING GPU {g['index']}: sample stamps are {lag:.1f} s off the poll times; "
                  "they may not be Unix µs, and Unix-second windows would miss", file=sys.stderr)
    wins = parse_windows(a, data)
    rows = []
    print(f"{'window':16s} {'gpu':>3s} {'dur s':>7s} {'n':>6s} {'E-mean W':>9s} {'S-mean W':>9s} "
          f"{'period ms':>18s} {'jit ms':>7s} {'acf':>5s} {'cyc':>5s} {'swing W':>8s} "
          f"{'peak W':>8s} {'fold W':>8s}  note")
    for name, f, t in wins:
        for g in gpus:
            r = analyse(g["ts_us"], g["value_mw"], g["energy_t_s"], g["energy_mj"], f, t)
            r.update(window=name, gpu=g["index"], uuid=g["uuid"], clock_lag_s=clock_lag_s(g),
                     meter_errors=g["errors"])
            rows.append(r)
            per = (f"{r['period_ms']:.2f} ± {r['period_se_ms']:.3f}" if r["period_found"] else "none")
            print(f"{name:16s} {g['index']:3d} {r['duration_s']:7.1f} {r['n_samples']:6d} "
                  f"{fmt(r['energy_mean_w'], '9.1f')} {fmt(r['sample_mean_w'], '9.1f')} {per:>18s} "
                  f"{fmt(r['jitter_ms'], '7.2f')} {fmt(r['acf_peak'], '5.2f')} "
                  f"{r['n_cycles']:5d} {fmt(r['swing_w'], '8.1f')} {fmt(r['peak_w'], '8.1f')} "
                  f"{fmt(r['fold_mean_w'], '8.1f')}  {r.get('note', '')}")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(clean({"meter": a.meter, "meta": data["meta"], "results": rows}), fh,
                      indent=1, allow_nan=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
