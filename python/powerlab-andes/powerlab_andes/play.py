"""Time-domain playback of the facility's power into an ANDES case.

For each window the case is built anew (`system.build`, with the facility
at the window's first power). Then each row step, t_k to t_k+1, is
integrated in `substeps` ANDES steps; before each, the facility load's
`Ppf` is set to the power at that substep's end, linear between row k's
and row k+1's (a first-order hold, the hold `linear.respond` assumes), so
the algebraic solution at t_k+1 holds row k+1's power. Row k of the output
is the state at t_k, consistent with row k's power.
"""

import csv
import json
import os
import time

from . import system as S

HEADER = ["t_s", "p_load_mw", "f_bus_hz", "f_coi_hz", "p_tie_mw"]


class WindowError(Exception):
    """A window file that cannot be played; the message says why."""


def read_window(path, step_s):
    """(t_s, p_mw) lists from a window CSV with header t_s,p_mw on an even step."""
    try:
        with open(path, newline="") as fh:
            rows = list(csv.reader(fh))
    except OSError as err:
        raise WindowError(f"cannot read window file {path}: {err}")
    if not rows or [c.strip() for c in rows[0][:2]] != ["t_s", "p_mw"]:
        raise WindowError(f"{path}: the header must be `t_s,p_mw`")
    t, p = [], []
    for n, row in enumerate(rows[1:], start=2):
        if not row or not "".join(row).strip():
            continue
        try:
            t.append(float(row[0]))
            p.append(float(row[1]))
        except (ValueError, IndexError):
            raise WindowError(f"{path}:{n}: expected two numbers `t_s,p_mw`, found {row}")
    if len(t) < 2:
        raise WindowError(f"{path}: a window needs at least two rows")
    for k in range(1, len(t)):
        if abs((t[k] - t[k - 1]) - step_s) > 1e-6 * max(1.0, abs(t[k])):
            raise WindowError(
                f"{path}: rows {k + 1} and {k + 2} are {t[k] - t[k - 1]:.6f} s apart; "
                f"windows.json declares an even step of {step_s * 1e3:g} ms"
            )
    return t, p


def _fmt(v, digits):
    return "" if v is None else f"{v:.{digits}f}"


def _row(t, p, out):
    f_bus, f_coi, p_tie = out
    return [_fmt(t, 6), _fmt(p, 6), _fmt(f_bus, 9), _fmt(f_coi, 9), _fmt(p_tie, 6)]


def play_window(case, bus, t, p, step_s, tie=None):
    """Play one window; returns (rows, built, error or None)."""
    built = S.build(case, bus, p[0], tie=tie, tstep_s=step_s)
    ss = built.ss
    machs = S.machines(ss)
    sum_hs = sum(m["h_s"] * m["s_mva"] for m in machs)
    uid = ss.PQ.idx2uid(S.FACILITY_PQ)
    # SUBSTEPS ANDES steps per row, each landing exactly on its time: ANDES
    # takes h = min(tstep, tf - t); with tstep a hair above the substep it
    # takes tf - t, which is exact (Sterbenz), so t + h == tf and no
    # zero-length step follows (one that ANDES reports as a failure).
    n_sub = int(S.SETTINGS["substeps"])
    sub_s = step_s / n_sub
    ss.TDS.config.tstep = sub_s * (1 + 1e-9)
    # The rows are read off the live state after each step; ANDES's own
    # store of every step (kept in memory) cost a third of the time.
    ss.TDS.config.save_every = 0
    rows = [_row(t[0], p[0], S.outputs_now(built, machs, sum_hs))]
    for k in range(len(t) - 1):
        for j in range(1, n_sub + 1):
            # The power at the substep's end, linear between the rows.
            p_mw = p[k] + (p[k + 1] - p[k]) * j / n_sub
            ss.PQ.Ppf.v[uid] = p_mw / built.s_base_mva
            target = (k * n_sub + j) * sub_s
            ss.TDS.config.tf = target
            ss.TDS.run()
            if not ss.TDS.converged or abs(ss.dae.t - target) > 1e-9:
                return rows, built, (
                    f"ANDES stopped at t = {ss.dae.t:.3f} s of {target:.3f} s "
                    "(did not converge or a stability criterion tripped): "
                    "the load step may be too large for the case"
                )
        rows.append(_row(t[k + 1], p[k + 1], S.outputs_now(built, machs, sum_hs)))
    return rows, built, None


def settings(built, step_s):
    """What play.json says about how the simulator was set up."""
    st = dict(S.SETTINGS)
    return {
        "tstep_s": step_s / int(st["substeps"]),
        "substeps_per_row": int(st["substeps"]),
        "row_step_s": step_s,
        "method": st["method"],
        "load_model": st["load_model"],
        "disturbances_off": list(built.disturbances_off),
        "disturbance_models": list(S.DISTURBANCE_MODELS),
        "newton_tol_pu": st["tol_pu"],
        "newton_max_iter": st["max_iter"],
        "pflow_tol_pu": st["pflow_tol_pu"],
        "input_hold": "first-order: linear between rows (row k's power solved at t_k)",
        "facility": "a new PQ load at the bus, Q = 0, constant power",
        "f_bus": (
            f"BusFreq at the bus: lag Tf = {st['busfreq_tf_s']} s on the angle, "
            f"washout Tw = {st['busfreq_tw_s']} s"
        ),
        "f_coi": "f0 * sum(H_i S_i w_i) / sum(H_i S_i) over the synchronous machines",
        "p_tie": "sum of P into the tie lines at their from-area ends",
        "tie_lines": built.tie_lines,
        "f0_hz": built.f0_hz,
        "s_base_mva": built.s_base_mva,
    }


def write_csv(path, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(HEADER)
        w.writerows(rows)


def play(case, bus, windows_path, out_dir, tie=None, andes_version=""):
    """Play every window of windows.json; write NNN.csv and play.json. Returns play.json's dict."""
    try:
        with open(windows_path) as fh:
            spec = json.load(fh)
        step_s = float(spec["step_ms"]) / 1e3
        windows = list(spec["windows"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise WindowError(
            f"{windows_path}: expected {{\"step_ms\": N, \"windows\": [{{\"name\", \"file\"}}]}} ({err})"
        )
    if step_s <= 0:
        raise WindowError(f"{windows_path}: step_ms must be positive")
    os.makedirs(out_dir, exist_ok=True)
    base = os.path.dirname(os.path.abspath(windows_path))
    out = {"andes_version": andes_version, "case": case, "bus": bus, "settings": None, "windows": []}
    for n, win in enumerate(windows):
        name = f"{n:03d}.csv"
        entry = {"name": win.get("name", name), "file": name, "converged": False,
                 "sim_s": 0.0, "wall_s": 0.0, "error": None}
        start = time.monotonic()
        try:
            path = win["file"]
            if not os.path.isabs(path):
                path = os.path.join(base, path)
            t, p = read_window(path, step_s)
            rows, built, error = play_window(case, bus, t, p, step_s, tie=tie)
            write_csv(os.path.join(out_dir, name), rows)
            if out["settings"] is None:
                out["settings"] = settings(built, step_s)
            entry["converged"] = error is None
            entry["error"] = error
            entry["sim_s"] = round(float(rows[-1][0]) - float(rows[0][0]), 6) if len(rows) > 1 else 0.0
        except (WindowError, S.CaseError, KeyError) as err:
            entry["error"] = str(err)
        entry["wall_s"] = round(time.monotonic() - start, 3)
        out["windows"].append(entry)
    with open(os.path.join(out_dir, "play.json"), "w") as fh:
        json.dump(out, fh, indent=1)
        fh.write("\n")
    return out
