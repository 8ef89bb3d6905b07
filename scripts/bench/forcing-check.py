#!/usr/bin/env python3
"""Issue 47: a prediction's grid-mode forcing (modes.csv), checked against
an independent computation with numpy on the waveform it wrote.

    usage: python3 scripts/bench/forcing-check.py OUTDIR

OUTDIR is what `powerlab predict ... --out OUTDIR` wrote for a schedule
whose [grid] declares [[grid.mode]] tables: waveform.parquet (t_s,
power_w: the headline's drawn waveform), modes.csv, and report.md (its
"Schedule" section holds the validated schedule as JSON, the iteration
period among it).

From the drawn waveform (not the expected iteration predict analysed) the
script takes a whole number of iterations after the first, numpy.fft.rfft
of them, and each harmonic k's single-sided peak amplitude 2|X[k m]|/n
(m iterations, n points). Per mode: the root-sum-square of the harmonics
k / period inside [band_lo_hz, band_hi_hz], against modes.csv's
forcing_mw; a mode with no harmonic in band compares the nearest
harmonic's amplitude (nearest_harmonic_hz) with nearest_amplitude_mw.
Exits 1 when any differs by more than 2 %; 2 when OUTDIR lacks a file.
"""
import csv
import json
import math
import os
import re
import sys

import numpy as np

TOLERANCE_PCT = 2.0


def usage(msg):
    print(f"forcing-check: {msg}", file=sys.stderr)
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    sys.exit(2)


def read_waveform(path):
    """t_s and power_w, with pyarrow, else duckdb."""
    try:
        import pyarrow.parquet as pq

        table = pq.read_table(path, columns=["t_s", "power_w"])
        return (
            np.asarray(table.column("t_s").to_numpy(), dtype=float),
            np.asarray(table.column("power_w").to_numpy(), dtype=float),
        )
    except ImportError:
        pass
    try:
        import duckdb
    except ImportError:
        usage("reading waveform.parquet needs pyarrow or duckdb (pip install pyarrow)")
    rows = duckdb.sql(f"SELECT t_s, power_w FROM read_parquet('{path}') ORDER BY t_s").fetchall()
    a = np.asarray(rows, dtype=float)
    return a[:, 0], a[:, 1]


def iteration_ms(report_md):
    """The validated schedule's job.iteration_ms (report.md, "Schedule")."""
    with open(report_md, encoding="utf-8") as f:
        text = f.read()
    at = text.find("## Schedule")
    m = re.search(r"```json\n(.*?)\n```", text[at:], re.S) if at >= 0 else None
    if not m:
        usage(f"{report_md} has no Schedule section with the schedule's JSON")
    return float(json.loads(m.group(1))["job"]["iteration_ms"])


def harmonic_amplitudes_mw(power_w, step_s, period_s):
    """Amplitude of harmonic k (index k) over whole iterations after the
    first: 2|X[k m]|/n, MW."""
    per = period_s / step_s
    if abs(per - round(per)) > 1e-6 * per:
        print(
            f"forcing-check: note: the period is {per:.4f} points; harmonics fall "
            "off the DFT's bins by up to that fraction",
            file=sys.stderr,
        )
    skip = int(round(per))
    m = int((len(power_w) - skip) * step_s // period_s)
    if m < 2:
        usage(f"the waveform holds {len(power_w) * step_s:.1f} s: under 3 iterations")
    n = int(round(m * per))
    x = power_w[skip : skip + n]
    spec = np.fft.rfft(x) / n
    ks = np.arange(0, (len(spec) - 1) // m + 1)
    amp = 2.0 * np.abs(spec[ks * m]) / 1e6
    amp[0] = abs(spec[0]) / 1e6
    return amp, m, n


def num(cell):
    return float(cell) if cell not in ("", None) else None


def check(outdir):
    paths = {f: os.path.join(outdir, f) for f in ("waveform.parquet", "modes.csv", "report.md")}
    for f, p in paths.items():
        if not os.path.isfile(p):
            usage(f"{p} is missing (a prediction of a schedule with [[grid.mode]] writes {f})")
    period_s = iteration_ms(paths["report.md"]) / 1000.0
    t, w = read_waveform(paths["waveform.parquet"])
    step_s = float(np.median(np.diff(t)))
    amp, m, n = harmonic_amplitudes_mw(w, step_s, period_s)
    with open(paths["modes.csv"], newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    print(
        f"forcing-check: {m} iterations of {period_s * 1000:.3f} ms, {n} points at "
        f"{step_s * 1000:.3f} ms; {len(rows)} modes"
    )
    failed = []
    for r in rows:
        lo, hi = float(r["band_lo_hz"]), float(r["band_hi_hz"])
        eps = 1e-9 * max(1.0, hi)
        ks = [k for k in range(1, len(amp)) if lo - eps <= k / period_s <= hi + eps]
        stated = r["harmonics_in_band"]
        listed = [int(k) for k in stated.split(";")] if stated else []
        if ks != listed:
            failed.append(f"{r['mode']}: harmonics in band {ks}, modes.csv lists {listed}")
        if ks:
            what = f"in-band RSS (k {','.join(map(str, ks))})"
            mine = math.sqrt(sum(amp[k] ** 2 for k in ks))
            theirs = float(r["forcing_mw"])
        else:
            f_hz = num(r["nearest_harmonic_hz"])
            if f_hz is None:
                failed.append(f"{r['mode']}: no harmonic in band and no nearest harmonic stated")
                continue
            k = int(round(f_hz * period_s))
            what = f"nearest harmonic k {k} ({f_hz:.3f} Hz)"
            mine = float(amp[k])
            theirs = num(r["nearest_amplitude_mw"])
            if float(r["forcing_mw"]) != 0.0:
                failed.append(f"{r['mode']}: no harmonic in band, forcing_mw {r['forcing_mw']}")
        off_pct = 100.0 * abs(mine - theirs) / max(abs(theirs), 1e-12)
        ok = off_pct <= TOLERANCE_PCT
        print(
            f"  {r['mode']:<16} {what}: numpy {mine:.4f} MW, modes.csv {theirs:.4f} MW, "
            f"{off_pct:.2f} % {'ok' if ok else 'FAILED'}"
        )
        if not ok:
            failed.append(f"{r['mode']}: {what} {mine:.4f} MW against {theirs:.4f} MW ({off_pct:.2f} %)")
    if failed:
        print(f"forcing-check: FAILED (over {TOLERANCE_PCT} %):", file=sys.stderr)
        for f in failed:
            print(f"  {f}", file=sys.stderr)
        return 1
    print(f"forcing-check: every mode within {TOLERANCE_PCT} %")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        usage("one argument: the prediction's output folder")
    sys.exit(check(sys.argv[1]))
