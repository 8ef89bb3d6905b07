#!/usr/bin/env python3
"""Check that two modes.json files describe the same linear model.

    python compare_modes.py COMMITTED.json FRESH.json [--tol 1e-4]

Used by CI to hold a committed model under grids/models/ against what the
pinned environment computes today. Compares the case, bus, P0, machines,
tie and every mode (matched by nearest eigenvalue): λ, and each output's
residue relative to that output's largest. The frequency response at
0.05-5 Hz is compared as well, which is what the screen uses. Exits 1 on a
difference, printing it.
"""

import argparse
import json
import sys

import numpy as np


def response(model, f_hz):
    s = 1j * 2 * np.pi * f_hz
    h = np.array(model["direct"], dtype=complex)
    for m in model["modes"]:
        lam = complex(m["re"], m["im"])
        for k, r in enumerate(m["residues"]):
            r = complex(r[0], r[1])
            h[k] += r / (s - lam)
            if m["im"] > 0:
                h[k] += r.conjugate() / (s - lam.conjugate())
    return h


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("committed")
    ap.add_argument("fresh")
    ap.add_argument("--tol", type=float, default=1e-4)
    args = ap.parse_args(argv)
    a, b = (json.load(open(p)) for p in (args.committed, args.fresh))
    bad = []
    for key in ("case", "bus", "p0_mw", "f0_hz", "s_base_mva", "sum_hs_mws", "machines", "outputs"):
        if a.get(key) != b.get(key):
            bad.append(f"{key}: {a.get(key)!r} != {b.get(key)!r}")
    if (a["tie"] is None) != (b["tie"] is None) or (a["tie"] and a["tie"]["lines"] != b["tie"]["lines"]):
        bad.append(f"tie: {a['tie']} != {b['tie']}")
    big = np.zeros(len(a["outputs"]))
    for m in a["modes"]:
        big = np.maximum(big, [abs(complex(*r)) for r in m["residues"]])
    lam_b = np.array([complex(m["re"], m["im"]) for m in b["modes"]])
    for m in a["modes"]:
        lam = complex(m["re"], m["im"])
        j = int(np.argmin(np.abs(lam_b - lam))) if len(lam_b) else None
        if j is None or abs(lam_b[j] - lam) > args.tol * max(abs(lam), 1.0):
            # A mode whose residues are all tiny may drift across the drop line.
            if max(abs(complex(*r)) / max(g, 1e-300) for r, g in zip(m["residues"], big)) > 1e-3:
                bad.append(f"mode {lam:.6g}: not in {args.fresh}")
            continue
        for k, (r, g) in enumerate(zip(m["residues"], big)):
            d = abs(complex(*r) - complex(*b["modes"][j]["residues"][k]))
            if d > args.tol * g:
                bad.append(f"mode {lam:.6g} output {a['outputs'][k]}: residue differs by {d / g:.2g} of the largest")
    worst = 0.0
    for f_hz in np.geomspace(0.05, 5.0, 40):
        ha, hb = response(a, f_hz), response(b, f_hz)
        worst = max(worst, float(np.max(np.abs(ha - hb) / (np.abs(ha) + 1e-12))))
    if worst > args.tol:
        bad.append(f"frequency response 0.05-5 Hz differs by up to {worst:.2g} (relative)")
    for line in bad:
        print(f"compare_modes: {line}")
    print(f"compare_modes: {len(a['modes'])} modes, response differs by at most {worst:.2g}: "
          f"{'DIFFERENT' if bad else 'same'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
