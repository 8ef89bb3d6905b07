#!/usr/bin/env python3
"""Issue 46 on real GPU data: "predict from the user's own job", checked
against an independent meter and an independent analysis.

    usage: workload-validate.py PART1 PART2 --bin BIN --out OUTDIR
                                [--json F] [--keep] [--recollate]
                                [--fold scripts/device/independent_fold.py]

PART1 and PART2 are what scripts/device/device-workload.sh packs:

  PART1/runs/<run>/      a harness run (campaigns/device-workload.toml): a
                         duty sweep (and, in later datasets, a `mitigation`
                         duty phase with smoothing rungs) and the workload
                         rungs train-b2b, train-idle, train-busy;
  PART1/meter-run.npz    the independent meter over the whole run;
  PART1/train-*.json     the loop's own timings per rung;
  PART2/observe-<shape>.csv, PART2/meter-<shape>.npz, PART2/train-<shape>.json
                         the same loop recorded by `powerlab observe --csv`
                         (no harness runner) with the meter beside it.

Per shape (back_to_back, idle_wait, busy_wait):

  1. the part-1 run is copied to OUTDIR/work/ and collated there if its
     report/ is absent (or with --recollate); each workload rung's measured
     window is read from events.jsonl (rung_started: measure_from_ns, end_ns);
  2. independent: independent_fold.py over part 1's meter in those windows:
     energy-counter mean, sample mean, period, folded swing (raw p90 - p10
     where it finds no period);
  3. harness: workload.csv's period (± 95 %), jitter, on fraction, mean, swing;
  4. predict 1 GPU from the workload rung (--from-rung); the plain scenario's
     mean and swing against the counter mean and the independent swing;
  5. predict 1 GPU from part 2's recording; independent: the fold of
     meter-<shape>.npz over the recording's span (first..last buffered_w
     ts_ns, trimmed 0.5 s each end);
  6. predict from the duty rungs' square waves (--square-waves --schedule):
     undeclared (iteration_ms = the harness period, compute_fraction = its
     on fraction) and declared (compute_w_per_gpu and [communication]
     given w_per_gpu = the job's levels from the INDEPENDENT fold: the median
     of its bins over the middle 60 % of each phase, on =
     the harness on fraction = the schedule's compute_fraction). A flat job
     (the harness finds no period): only undeclared, compute_fraction = 1,
     iteration_ms = the loop's own mean iteration (else the independent
     period, else a nominal 1000 ms: a constant load either way);
  7. tables (limits from the issue: from the workload rung and from the
     recording, mean within 2 % and swing within 10 %; the declared square
     wave, mean within 3 %; the undeclared one is shown, not judged), the
     periods against the loop's own (the mean of every iteration_ms, and of
     the complete ones in the window: a loop stopped by SIGTERM cuts its
     last iteration short), and everything to --json;
  8. --keep: a compact record in OUTDIR/record/ (the part-1 run without
     report/, the part-2 CSVs, the meter files, the loop JSONs).

Nothing under PART1 or PART2 is written; python3 and numpy only. Exit 1
where a judged figure FAILs or a prediction errs, else 0.
"""
import argparse
import csv
import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_FOLD = os.path.normpath(os.path.join(HERE, "..", "device", "independent_fold.py"))
SHAPES = ("back_to_back", "idle_wait", "busy_wait")
TRIM_S = 0.5
SPAN_S = 60
LIMITS = {  # source -> (mean %, swing %); None: not judged
    "rung": (2.0, 10.0),
    "recording": (2.0, 10.0),
    "square-undeclared": (None, None),
    "square-declared": (3.0, None),
}
SOURCE_TITLES = {
    "rung": "predicted from the workload rung (part 1, --from-rung)",
    "recording": "predicted from the observe --csv recording (part 2)",
    "square-undeclared": "predicted from the duty rungs' square waves, levels undeclared",
    "square-declared": "predicted from the square waves, levels declared (independent fold)",
}


# ---------------------------------------------------------------- small helpers

def die(msg):
    sys.exit(f"workload-validate: {msg}")


def num(x):
    """float(x), or None for '', None or nan."""
    if x is None or x == "":
        return None
    try:
        v = float(x)
    except ValueError:
        return None
    return None if math.isnan(v) else v


def err_pct(pred, meas):
    if pred is None or meas is None or meas == 0:
        return None
    return (pred - meas) / meas * 100.0


def f(x, spec=".1f", none="-"):
    return none if x is None else format(x, spec)


def run_cmd(cmd, log_path=None):
    """(rc, stdout, stderr) of cmd; both streams also to log_path."""
    p = subprocess.run(cmd, capture_output=True, text=True)
    if log_path:
        with open(log_path, "w") as fh:
            fh.write("$ " + " ".join(cmd) + "\n--- stdout\n" + p.stdout + "\n--- stderr\n" + p.stderr)
    return p.returncode, p.stdout, p.stderr


def clean(x):
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    return None if isinstance(x, float) and (math.isnan(x) or math.isinf(x)) else x


# ---------------------------------------------------------------- part 1

def find_run(part1):
    runs = sorted(d for d in glob.glob(os.path.join(part1, "runs", "*"))
                  if os.path.isfile(os.path.join(d, "events.jsonl")))
    if not runs:
        die(f"no run directory with events.jsonl under {part1}/runs")
    with_workload = [d for d in runs if workload_rungs(d)]
    if not with_workload:
        die(f"no run under {part1}/runs holds a workload rung")
    if len(with_workload) > 1:
        print(f"NOTE: {len(with_workload)} runs with workload rungs; using the last, "
              f"{os.path.basename(with_workload[-1])}", file=sys.stderr)
    return with_workload[-1]


def read_events(run):
    with open(os.path.join(run, "events.jsonl")) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def arg_after(cmd, flag):
    try:
        return cmd[cmd.index(flag) + 1]
    except (ValueError, IndexError):
        return None


def workload_rungs(run):
    """[{label, id, from_s, to_s, shape, loop_json}] of the run's workload
    rungs, in run order."""
    out = []
    for e in read_events(run):
        if e.get("event") != "rung_started" or e.get("rung", {}).get("kind") != "workload":
            continue
        r = e["rung"]
        cmd = (r.get("workload") or {}).get("command") or []
        out.append({"label": r["label"], "id": r["id"], "phase": r.get("phase"),
                    "from_s": e["measure_from_ns"] / 1e9, "to_s": e["end_ns"] / 1e9,
                    "shape": arg_after(cmd, "--shape"), "loop_json": arg_after(cmd, "--json"),
                    "command": cmd})
    return out


def run_phases(run):
    """{phase: {kind, rungs, labels}} of every rung in the run (a mitigation
    phase shows up here)."""
    ph = {}
    for e in read_events(run):
        if e.get("event") != "rung_started":
            continue
        r = e["rung"]
        p = ph.setdefault(r.get("phase"), {"kind": r.get("kind"), "rungs": 0, "labels": []})
        p["rungs"] += 1
        p["labels"].append(r["label"])
    return ph


def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def harness_row(rows, label):
    for r in rows:
        if r.get("label") == label:
            return {
                "rung_id": r.get("rung_id"), "status": r.get("status"),
                "period_ms": num(r.get("period_ms")), "period_ci95_ms": num(r.get("period_ci95_ms")),
                "jitter_ms": num(r.get("jitter_ms")), "jitter_pct": num(r.get("jitter_pct")),
                "cycles": num(r.get("cycles")), "on_fraction": num(r.get("on_fraction")),
                "method": r.get("method"), "mean_w": num(r.get("mean_w")),
                "mean_ci95_w": [num(r.get("mean_ci95_lo_w")), num(r.get("mean_ci95_hi_w"))],
                "peak_w": num(r.get("peak_w")), "spread_w": num(r.get("spread_w")),
                "swing_w": num(r.get("swing_w")),
                "swing_ci95_w": [num(r.get("swing_ci95_lo_w")), num(r.get("swing_ci95_hi_w"))],
                "verdict": r.get("verdict"), "incomplete": r.get("incomplete"),
            }
    return None


def loop_timing(path, from_s=None, to_s=None):
    """The loop's own iteration figures from its JSON: mean over every
    iteration, and over those starting inside [from_s, to_s)."""
    if not path or not os.path.isfile(path):
        return None
    with open(path) as fh:
        d = json.load(fh)
    it = np.asarray(d.get("iteration_ms") or [], dtype=float)
    st = np.asarray(d.get("iteration_start_unix") or [], dtype=float)
    step = np.asarray(d.get("step_ms") or [], dtype=float)
    # A loop stopped by a signal cuts its last iteration short (SIGTERM
    # ends the wait): "complete" leaves that one out.
    cut = d.get("stopped_by") == "signal" and len(it) > 1
    full = np.ones(len(it), dtype=bool)
    if cut:
        full[-1] = False
    out = {"file": path, "shape": d.get("shape"), "iterations": int(len(it)),
           "stopped_by": d.get("stopped_by"),
           "last_iteration_ms": float(it[-1]) if len(it) else None,
           "mean_complete_iteration_ms": float(it[full].mean()) if full.any() else None,
           "mean_iteration_ms": float(it.mean()) if len(it) else None,
           "sd_iteration_ms": float(it.std()) if len(it) else None,
           "mean_step_ms": float(step.mean()) if len(step) else None,
           "iteration_ms_target": d.get("iteration_ms_target"),
           "start_unix": d.get("start_unix"), "end_unix": d.get("end_unix"),
           "device_name": d.get("device_name")}
    if from_s is not None and len(st) == len(it) and len(it):
        m = (st >= from_s) & (st < to_s)
        out["in_window_iterations"] = int(m.sum())
        out["in_window_mean_iteration_ms"] = float(it[m].mean()) if m.any() else None
        out["in_window_mean_step_ms"] = (float(step[m].mean())
                                         if m.any() and len(step) == len(it) else None)
        mc = m & full
        out["in_window_complete_iterations"] = int(mc.sum())
        out["in_window_mean_complete_iteration_ms"] = float(it[mc].mean()) if mc.any() else None
        out["in_window_holds_cut_iteration"] = bool(cut and m[-1])
    return out


# ---------------------------------------------------------------- independent

def independent(fold, meter, windows, out_json, log):
    """independent_fold.py over windows [(name, from_s, to_s)]: {name: result}."""
    cmd = [sys.executable, fold, meter, "--json", out_json]
    for name, a, b in windows:
        cmd += ["--window", f"{name}:{a:.6f}:{b:.6f}"]
    rc, _, err = run_cmd(cmd, log)
    if rc != 0:
        die(f"independent_fold.py failed (rc {rc}): {err.strip()}")
    with open(out_json) as fh:
        res = json.load(fh)["results"]
    if len({r["gpu"] for r in res}) > 1:
        print("NOTE: the meter holds several GPUs; GPU-mean figures are not formed here, "
              "the first GPU's are used", file=sys.stderr)
    by = {}
    for r in res:
        by.setdefault(r["window"], r)
    return by


def fold_levels(ind, on):
    """The job's measured levels from the independent folded cycle, as a
    user reads its plateaus: the median of its bins whose centres lie in the
    middle 60 % of the compute phase [0.2 on, 0.8 on) and of the
    communication phase (the 20 ms samples smear each edge over ~5 of the
    100 bins, which a window up to the phase's end would take in). Also the
    means over the same bins and the fold's own on fraction."""
    fw = ind.get("folded_w")
    if not fw or on is None:
        return None
    v = np.asarray(fw, dtype=float)
    n = len(v)
    c = (np.arange(n) + 0.5) / n
    comp = (c >= 0.2 * on) & (c < 0.8 * on)
    comm = (c >= on + 0.2 * (1.0 - on)) & (c < on + 0.8 * (1.0 - on))
    if not comp.any() or not comm.any():
        return None
    mid = (ind["fold_p10_w"] + ind["fold_p90_w"]) / 2
    return {"on_fraction_used": on,
            "compute_bins": [int(np.flatnonzero(comp)[0]), int(np.flatnonzero(comp)[-1])],
            "comm_bins": [int(np.flatnonzero(comm)[0]), int(np.flatnonzero(comm)[-1])],
            "compute_w": float(np.median(v[comp])), "comm_w": float(np.median(v[comm])),
            "compute_mean_w": float(v[comp].mean()),
            "comm_mean_w": float(v[comm].mean()),
            "fold_mid_w": float(mid), "fold_on_fraction": float(np.mean(v > mid))}


# ---------------------------------------------------------------- predict

def plain_scenario(d):
    sc = d.get("scenarios") or []
    for s in sc:
        if s.get("label") == "plain":
            return s
    for s in sc:
        if s.get("profile") in ("plain", None) and s.get("stagger_groups", 1) == 1:
            return s
    return sc[0] if sc else None


def predict(bin_, args, out_dir, log):
    """Run `BIN predict ... --json --out out_dir`: {ok, mean_w, swing_w, ...}
    or {ok: False, error: its text}."""
    cmd = [bin_, "predict"] + args + ["--json", "--out", out_dir]
    rc, out, err = run_cmd(cmd, log)
    rec = {"command": cmd, "rc": rc, "out": out_dir}
    if rc != 0:
        rec.update(ok=False, error=(err.strip() or out.strip()) or f"exit {rc}")
        return rec
    try:
        d = json.loads(out)
    except json.JSONDecodeError as e:
        rec.update(ok=False, error=f"stdout is not JSON ({e}): {out[:400]}")
        return rec
    s = plain_scenario(d)
    if s is None:
        rec.update(ok=False, error="no scenario in the prediction", json=d)
        return rec
    rec.update(ok=True, scenario=s.get("label"), sources=s.get("sources"),
               mean_w=(s.get("mean_w") or {}).get("value"),
               mean_pm_w=(s.get("mean_w") or {}).get("plus_minus"),
               swing_w=(s.get("swing_w") or {}).get("value"),
               swing_pm_w=(s.get("swing_w") or {}).get("plus_minus"),
               levels=s.get("levels"),
               notes=list(dict.fromkeys((d.get("notes") or []) + (s.get("notes") or []))),
               scenarios=[{"label": x.get("label"), "mean_w": (x.get("mean_w") or {}).get("value"),
                           "swing_w": (x.get("swing_w") or {}).get("value")}
                          for x in d.get("scenarios") or []])
    return rec


def note_period(notes):
    """(period ms, ± ms, jitter ms) from predict's FROM THE JOB note, if any."""
    for n in notes or []:
        m = re.search(r"\(([\d.]+) ± ([\d.]+) ms, jitter ([\d.]+) ms", n)
        if m:
            return tuple(float(x) for x in m.groups())
    return None


def schedule_toml(path, name, iteration_ms, compute_fraction, compute_w=None, comm_w=None):
    lines = ["[job]", f'name = "{name}"', "gpus = 1", "gpus_per_node = 1",
             f"iteration_ms = {iteration_ms:.4f}", f"compute_fraction = {compute_fraction:.4f}"]
    if compute_w is not None:
        lines.append(f"compute_w_per_gpu = {compute_w:.2f}")
    if comm_w is not None:
        lines += ["", "[communication]", 'source = "given"', f"w_per_gpu = {comm_w:.2f}"]
    lines += ["", "[output]", f"span_s = {SPAN_S}", ""]
    with open(path, "w") as fh:
        fh.write("\n".join(lines))
    return "\n".join(lines)


# ---------------------------------------------------------------- part 2

def recording_span(csv_path):
    """(first, last) ts_ns of the buffered_w rows, as Unix s."""
    lo, hi = None, None
    with open(csv_path, newline="") as fh:
        for r in csv.DictReader(fh):
            if r.get("instrument") != "buffered_w":
                continue
            t = int(r["ts_ns"])
            lo = t if lo is None or t < lo else lo
            hi = t if hi is None or t > hi else hi
    if lo is None:
        return None
    return lo / 1e9, hi / 1e9


# ---------------------------------------------------------------- judging

def judge(source, pred, ind):
    """The row of one source and shape: the prediction against the
    independent result ind (counter mean, swing_w; raw p90 - p10 alongside)."""
    lim_mean, lim_swing = LIMITS[source]
    ind = ind or {}
    meas_mean, ind_swing = ind.get("energy_mean_w"), ind.get("swing_w")
    row = {"source": source, "limit_mean_pct": lim_mean, "limit_swing_pct": lim_swing,
           "measured_mean_w": meas_mean, "independent_swing_w": ind_swing,
           "independent_period_found": ind.get("period_found"),
           "independent_sample_mean_w": ind.get("sample_mean_w"),
           "independent_raw_swing_w": ind.get("raw_swing_w")}
    if not pred or not pred.get("ok"):
        row.update(predicted_mean_w=None, predicted_swing_w=None, mean_err_pct=None,
                   swing_err_pct=None, verdict="ERROR",
                   error=(pred or {}).get("error", "not run"))
        return row
    me = err_pct(pred["mean_w"], meas_mean)
    se = err_pct(pred["swing_w"], ind_swing)
    row.update(predicted_mean_w=pred["mean_w"], predicted_swing_w=pred["swing_w"],
               mean_err_pct=me, swing_err_pct=se,
               mean_err_vs_samples_pct=err_pct(pred["mean_w"], ind.get("sample_mean_w")),
               swing_err_vs_raw_pct=err_pct(pred["swing_w"], ind.get("raw_swing_w")))
    checks = []
    if lim_mean is not None:
        checks.append(me is not None and abs(me) <= lim_mean)
    if lim_swing is not None:
        checks.append(se is not None and abs(se) <= lim_swing)
    row["verdict"] = "info" if not checks else ("PASS" if all(checks) else "FAIL")
    return row


def limit_text(source):
    m, s = LIMITS[source]
    parts = ([f"mean {m:g}%"] if m is not None else []) + ([f"swing {s:g}%"] if s is not None else [])
    return ", ".join(parts) if parts else "none"


def print_table(source, rows):
    print(f"\n== {SOURCE_TITLES[source]}")
    hdr = (f"{'shape':14s} {'counter mean W':>14s} {'pred mean W':>11s} {'err %':>7s} "
           f"{'indep swing W':>13s} {'pred swing W':>12s} {'err %':>7s}  {'limit':18s} verdict")
    print(hdr)
    print("-" * len(hdr))
    for shape, r in rows:
        print(f"{shape:14s} {f(r['measured_mean_w']):>14s} {f(r['predicted_mean_w']):>11s} "
              f"{f(r['mean_err_pct'], '+.2f'):>7s} {f(r['independent_swing_w']):>13s} "
              f"{f(r['predicted_swing_w']):>12s} {f(r['swing_err_pct'], '+.2f'):>7s}  "
              f"{limit_text(source):18s} {r['verdict']}")
        if r["verdict"] == "ERROR":
            print(f"{'':14s} predict failed: {r.get('error')}")


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("part1")
    ap.add_argument("part2")
    ap.add_argument("--bin", required=True, help="the powerlab binary")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--json", default=None, help="write every figure here")
    ap.add_argument("--keep", action="store_true", help="copy a compact record into OUT/record")
    ap.add_argument("--recollate", action="store_true",
                    help="collate the work copy of the run even where its report/ exists")
    ap.add_argument("--fold", default=DEFAULT_FOLD, help="independent_fold.py")
    a = ap.parse_args()
    bin_ = os.path.abspath(a.bin)
    if not os.access(bin_, os.X_OK):
        die(f"{a.bin} is not an executable")
    out = os.path.abspath(a.out)
    os.makedirs(out, exist_ok=True)
    logs = os.path.join(out, "logs")
    os.makedirs(logs, exist_ok=True)
    _, ver, _ = run_cmd([bin_, "--version"])

    # 1. the run, copied and collated where needed
    src_run = find_run(a.part1)
    work = os.path.join(out, "work")
    run = os.path.join(work, os.path.basename(src_run))
    if os.path.exists(run):
        shutil.rmtree(run)
    shutil.copytree(src_run, run)
    had_report = os.path.isfile(os.path.join(run, "report", "workload.csv"))
    collated = False
    if a.recollate or not had_report:
        shutil.rmtree(os.path.join(run, "report"), ignore_errors=True)
        rc, o, e = run_cmd([bin_, "collate", run], os.path.join(logs, "collate.log"))
        if rc != 0:
            die(f"collate failed (rc {rc}): {e.strip() or o.strip()}")
        collated = True
    wl_csv = os.path.join(run, "report", "workload.csv")
    if not os.path.isfile(wl_csv):
        die(f"{wl_csv} absent after collation")
    wl_rows = read_csv(wl_csv)
    rungs = workload_rungs(run)
    phases = run_phases(run)

    # 2. independent, part 1
    meter1 = os.path.join(a.part1, "meter-run.npz")
    ind1 = independent(a.fold, meter1, [(r["label"], r["from_s"], r["to_s"]) for r in rungs],
                       os.path.join(out, "independent-part1.json"),
                       os.path.join(logs, "independent-part1.log"))

    part2_work = os.path.join(work, "part2")
    os.makedirs(part2_work, exist_ok=True)
    shapes = {}
    for r in rungs:
        shape = r["shape"] or r["label"]
        lab = r["label"]
        rec = {"label": lab, "shape": shape, "window": [r["from_s"], r["to_s"]],
               "window_s": r["to_s"] - r["from_s"]}
        loop_json = None
        if r["loop_json"]:
            loop_json = os.path.join(a.part1, os.path.basename(r["loop_json"]))
        rec["loop"] = loop_timing(loop_json, r["from_s"], r["to_s"])
        # 3. harness
        h = harness_row(wl_rows, lab)
        rec["harness"] = h
        ind = ind1.get(lab)
        rec["independent"] = {k: v for k, v in (ind or {}).items()}
        # 4. predict from the rung
        rec["predict_rung"] = predict(
            bin_, [run, "--from-rung", lab, "--gpus", "1", "--gpus-per-node", "1",
                   "--span-s", str(SPAN_S)],
            os.path.join(out, f"predict-{lab}"), os.path.join(logs, f"predict-{lab}.log"))
        # 5. the part-2 recording
        csv2 = os.path.join(a.part2, f"observe-{shape}.csv")
        meter2 = os.path.join(a.part2, f"meter-{shape}.npz")
        rec2 = {"csv": csv2, "meter": meter2}
        if os.path.isfile(csv2) and os.path.isfile(meter2):
            csv_copy = os.path.join(part2_work, os.path.basename(csv2))
            shutil.copy2(csv2, csv_copy)
            span = recording_span(csv_copy)
            if span is None:
                rec2["error"] = "no buffered_w rows in the recording"
            else:
                t0, t1 = span[0] + TRIM_S, span[1] - TRIM_S
                rec2.update(span=list(span), window=[t0, t1])
                ind2 = independent(a.fold, meter2, [(shape, t0, t1)],
                                   os.path.join(out, f"independent-part2-{shape}.json"),
                                   os.path.join(logs, f"independent-part2-{shape}.log"))
                rec2["independent"] = ind2.get(shape)
                rec2["loop"] = loop_timing(os.path.join(a.part2, f"train-{shape}.json"), t0, t1)
                rec2["predict"] = predict(
                    bin_, [csv_copy, "--gpus", "1", "--gpus-per-node", "1", "--span-s", str(SPAN_S)],
                    os.path.join(out, f"predict-observe-{shape}"),
                    os.path.join(logs, f"predict-observe-{shape}.log"))
        else:
            rec2["error"] = "observe CSV or meter file absent"
        rec["part2"] = rec2
        # 6. square waves
        flat = not (h and h["status"] == "folded" and h["period_ms"] and h["on_fraction"])
        sq = {"flat": flat}
        if flat:
            # compute_fraction 1 is a constant load: the iteration only names it
            ip = (ind or {}).get("period_ms") if (ind or {}).get("period_found") else None
            for it_ms, why in (((h or {}).get("period_ms"), "the harness period"),
                               ((rec["loop"] or {}).get("mean_complete_iteration_ms"),
                                "the loop's own mean iteration; no harness period"),
                               (ip, "the independent period; no harness period, no loop timings"),
                               (1000.0, "nominal; no period known")):
                if it_ms:
                    break
            sq["iteration_ms_from"] = why
            sq["iteration_ms"] = it_ms
            p = os.path.join(out, f"schedule-{lab}-undeclared.toml")
            sq["undeclared_schedule"] = schedule_toml(p, f"{lab}-undeclared", it_ms, 1.0)
            sq["undeclared"] = predict(bin_, [run, "--square-waves", "--schedule", p],
                                       os.path.join(out, f"predict-square-{lab}-undeclared"),
                                       os.path.join(logs, f"predict-square-{lab}-undeclared.log"))
        else:
            it_ms, on = h["period_ms"], h["on_fraction"]
            p = os.path.join(out, f"schedule-{lab}-undeclared.toml")
            sq["undeclared_schedule"] = schedule_toml(p, f"{lab}-undeclared", it_ms, on)
            sq["undeclared"] = predict(bin_, [run, "--square-waves", "--schedule", p],
                                       os.path.join(out, f"predict-square-{lab}-undeclared"),
                                       os.path.join(logs, f"predict-square-{lab}-undeclared.log"))
            lv = fold_levels(ind or {}, on)
            sq["levels"] = lv
            if lv is None:
                sq["declared"] = {"ok": False,
                                  "error": "the independent fold found no period: no levels to declare"}
            else:
                p = os.path.join(out, f"schedule-{lab}-declared.toml")
                sq["declared_schedule"] = schedule_toml(p, f"{lab}-declared", it_ms, on,
                                                        lv["compute_w"], lv["comm_w"])
                sq["declared"] = predict(bin_, [run, "--square-waves", "--schedule", p],
                                         os.path.join(out, f"predict-square-{lab}-declared"),
                                         os.path.join(logs, f"predict-square-{lab}-declared.log"))
        rec["square"] = sq
        shapes[shape] = rec

    # 7. judge and print
    results = {s: [] for s in LIMITS}
    for shape, rec in shapes.items():
        ind = rec["independent"] or {}
        results["rung"].append((shape, judge("rung", rec["predict_rung"], ind)))
        i2 = rec["part2"].get("independent") or {}
        results["recording"].append((shape, judge("recording", rec["part2"].get("predict") or
                                                  {"ok": False, "error": rec["part2"].get("error")},
                                                  i2)))
        results["square-undeclared"].append(
            (shape, judge("square-undeclared", rec["square"].get("undeclared"), ind)))
        if not rec["square"]["flat"]:
            results["square-declared"].append(
                (shape, judge("square-declared", rec["square"].get("declared"), ind)))

    print(f"powerlab: {ver.strip()}")
    print(f"part 1 run: {src_run}" + (" (collated here)" if collated else " (its report/ used as found)"))
    other = {p: v for p, v in phases.items() if v["kind"] != "workload"}
    print("phases: " + ", ".join(f"{p} ({v['kind']}, {v['rungs']})" for p, v in other.items())
          + (" — a mitigation phase is present" if "mitigation" in phases else ""))
    for source in LIMITS:
        if results[source]:
            print_table(source, results[source])

    print("\n== independent: energy counter vs the samples' own mean (the table's 'measured' is the counter)")
    print(f"{'shape':14s} {'source':9s} {'counter W':>9s} {'sample W':>9s} {'diff %':>7s} "
          f"{'fold swing W':>12s} {'raw p90-p10 W':>13s} {'period':>18s} {'jit ms':>7s} {'cycles':>6s}")
    for shape, rec in shapes.items():
        for src, i in (("rung", rec["independent"]), ("recording", rec["part2"].get("independent"))):
            if not i:
                continue
            per = (f"{i['period_ms']:.2f} ± {i['period_se_ms']:.3f}" if i.get("period_found") else "none")
            print(f"{shape:14s} {src:9s} {f(i.get('energy_mean_w')):>9s} {f(i.get('sample_mean_w')):>9s} "
                  f"{f(err_pct(i.get('sample_mean_w'), i.get('energy_mean_w')), '+.2f'):>7s} "
                  f"{f(i.get('swing_w') if i.get('period_found') else None):>12s} "
                  f"{f(i.get('raw_swing_w')):>13s} {per:>18s} {f(i.get('jitter_ms'), '.2f'):>7s} "
                  f"{i.get('n_cycles', 0):>6d}")

    print("\n== periods: the harness's found period vs the loop's own mean iteration and the independent period")
    print(f"{'shape':14s} {'source':9s} {'loop all ms':>11s} {'loop win ms':>11s} {'harness ms':>18s} "
          f"{'h jit ms':>8s} {'h-loop %':>8s} {'indep ms':>18s} {'i-loop %':>8s} {'h-indep %':>9s}")
    for shape, rec in shapes.items():
        h = rec["harness"] or {}
        i = rec["independent"] or {}
        lp = rec["loop"] or {}
        hp = h.get("period_ms")
        ip = i.get("period_ms") if i.get("period_found") else None
        lw = lp.get("in_window_mean_complete_iteration_ms")
        hs = f"{hp:.2f} ± {h['period_ci95_ms']:.3f}" if hp and h.get("period_ci95_ms") is not None else (
            f(hp, ".2f") if hp else f"none ({h.get('status')})")
        is_ = f"{ip:.2f} ± {i['period_se_ms']:.3f}" if ip else "none"
        print(f"{shape:14s} {'rung':9s} {f(lp.get('mean_iteration_ms'), '.2f'):>11s} {f(lw, '.2f'):>11s} "
              f"{hs:>18s} {f(h.get('jitter_ms'), '.2f'):>8s} {f(err_pct(hp, lw), '+.3f'):>8s} "
              f"{is_:>18s} {f(err_pct(ip, lw), '+.3f'):>8s} {f(err_pct(hp, ip), '+.3f'):>9s}")
        p2 = rec["part2"]
        if p2.get("predict"):
            np_ = note_period((p2["predict"] or {}).get("notes"))
            i2 = p2.get("independent") or {}
            ip2 = i2.get("period_ms") if i2.get("period_found") else None
            l2 = p2.get("loop") or {}
            lw2 = l2.get("in_window_mean_complete_iteration_ms")
            hp2 = np_[0] if np_ else None
            hs2 = f"{np_[0]:.2f} ± {np_[1]:.2f}" if np_ else "none"
            is2 = f"{ip2:.2f} ± {i2['period_se_ms']:.3f}" if ip2 else "none"
            print(f"{shape:14s} {'recording':9s} {f(l2.get('mean_iteration_ms'), '.2f'):>11s} "
                  f"{f(lw2, '.2f'):>11s} {hs2:>18s} {f(np_[2] if np_ else None, '.2f'):>8s} "
                  f"{f(err_pct(hp2, lw2), '+.3f'):>8s} {is2:>18s} {f(err_pct(ip2, lw2), '+.3f'):>8s} "
                  f"{f(err_pct(hp2, ip2), '+.3f'):>9s}")
    print("(loop all: the mean of every iteration_ms in its JSON; loop win: of the complete iterations "
          "starting in the measured window; %: against loop win; the recording's harness period is "
          "predict's own FROM THE JOB note)")
    for shape, rec in shapes.items():
        for src, lp in (("rung", rec["loop"]), ("recording", rec["part2"].get("loop"))):
            if lp and lp.get("stopped_by") == "signal" and lp.get("iterations", 0) > 1:
                print(f"  {shape} {src}: the loop was stopped by a signal; its last iteration, "
                      f"{lp['last_iteration_ms']:.2f} ms, was cut short"
                      + (" and starts inside the window" if lp.get("in_window_holds_cut_iteration") else "")
                      + f" (mean of all {lp['mean_iteration_ms']:.3f} ms, without it "
                      f"{lp['mean_complete_iteration_ms']:.3f} ms)")

    print("\n== the declared levels (independent fold of part 1's meter; on = the harness on fraction)")
    for shape, rec in shapes.items():
        lv = rec["square"].get("levels")
        h = rec["harness"] or {}
        if rec["square"]["flat"]:
            print(f"{shape:14s} flat (harness: {h.get('status')}): undeclared only, compute_fraction 1, "
                  f"iteration {f(rec['square'].get('iteration_ms'), '.2f')} ms "
                  f"({rec['square'].get('iteration_ms_from')})")
        elif lv:
            print(f"{shape:14s} on {lv['on_fraction_used']:.3f} (fold's own {lv['fold_on_fraction']:.2f}): "
                  f"compute bins {lv['compute_bins'][0]}-{lv['compute_bins'][1]} median {lv['compute_w']:.1f} W "
                  f"(mean {lv['compute_mean_w']:.1f}); communication bins {lv['comm_bins'][0]}-"
                  f"{lv['comm_bins'][1]} median {lv['comm_w']:.1f} W (mean {lv['comm_mean_w']:.1f})")
        else:
            print(f"{shape:14s} no levels: {rec['square'].get('declared', {}).get('error')}")

    notes = []
    for shape, rec in shapes.items():
        h, i = rec["harness"] or {}, rec["independent"] or {}
        p2 = rec["part2"]
        i2 = p2.get("independent") or {}
        pp = p2.get("predict") or {}
        for src, flat, ii, pr, lp in (
                ("rung", h.get("status") != "folded", i, rec["predict_rung"], rec["loop"]),
                ("recording", pp.get("ok") and note_period(pp.get("notes")) is None, i2, pp,
                 p2.get("loop"))):
            if not (flat and ii.get("period_found")):
                continue
            alt = err_pct(pr.get("swing_w"), ii.get("raw_swing_w")) if pr.get("ok") else None
            notes.append(
                f"{shape} [{src}]: powerlab finds no period but the independent fold does "
                f"({ii['period_ms']:.2f} ms, jitter {ii['jitter_ms']:.1f} ms, {ii['n_cycles']} cycles "
                f"folded, its autocorrelation's period {f(ii.get('period_acf_ms'), '.1f')} ms at "
                f"{f(ii.get('acf_peak'), '.2f')}); the loop's own iteration is "
                f"{f((lp or {}).get('mean_complete_iteration_ms'), '.2f')} ms. Against the raw "
                f"p90 - p10 ({ii['raw_swing_w']:.1f} W) the predicted swing "
                f"({f(pr.get('swing_w'))} W) is off by {f(alt, '+.2f')} %.")
        if p2.get("window") and (p2.get("loop") or {}).get("start_unix"):
            lp = p2["loop"]
            a0 = p2["window"][0] - lp["start_unix"]
            a1 = lp["end_unix"] - p2["window"][1]
            if a0 < 0 or a1 < 0:
                notes.append(
                    f"{shape} [recording]: the recording's window starts {a0:+.2f} s from the loop's "
                    f"first shaped iteration and ends {a1:.2f} s before its end"
                    + (f": its first {-a0:.2f} s of {p2['window'][1] - p2['window'][0]:.1f} s are the "
                       "loop's warm-up steps (back to back), in the independent figures and the "
                       "recording alike" if a0 < 0 else ""))
        for src, p in (("rung", rec["predict_rung"]), ("recording", rec["part2"].get("predict")),
                       ("square undeclared", rec["square"].get("undeclared")),
                       ("square declared", rec["square"].get("declared"))):
            for n in (p or {}).get("notes") or []:
                if not n.startswith("FROM THE JOB") and not n.startswith("DECLARED LEVELS"):
                    notes.append(f"{shape} [{src}] predict says: {n}")
    if notes:
        print("\n== notes")
        for n in notes:
            print("- " + n)

    verdicts = [r["verdict"] for rows in results.values() for _, r in rows]
    print(f"\nverdicts: {sum(v == 'PASS' for v in verdicts)} PASS, {sum(v == 'FAIL' for v in verdicts)} FAIL, "
          f"{sum(v == 'ERROR' for v in verdicts)} ERROR, {sum(v == 'info' for v in verdicts)} not judged")

    # 8. the record
    record = None
    if a.keep:
        record = os.path.join(out, "record")
        shutil.rmtree(record, ignore_errors=True)
        shutil.copytree(src_run, os.path.join(record, "part1", "runs", os.path.basename(src_run)),
                        ignore=lambda d, names: ["report"] if os.path.samefile(d, src_run) else [])
        for pat, sub in (("meter-*.npz", "part1"), ("train-*.json", "part1")):
            for p in glob.glob(os.path.join(a.part1, pat)):
                shutil.copy2(p, os.path.join(record, sub))
        os.makedirs(os.path.join(record, "part2"), exist_ok=True)
        for pat in ("observe-*.csv", "meter-*.npz", "train-*.json"):
            for p in glob.glob(os.path.join(a.part2, pat)):
                shutil.copy2(p, os.path.join(record, "part2"))
        print(f"record: {record}")

    if a.json:
        doc = {"powerlab": ver.strip(), "part1": os.path.abspath(a.part1),
               "part2": os.path.abspath(a.part2), "run": src_run, "work_run": run,
               "report_found": had_report, "collated_here": collated, "phases": phases,
               "limits_pct": {k: {"mean": v[0], "swing": v[1]} for k, v in LIMITS.items()},
               "shapes": shapes,
               "results": {s: [dict(r, shape=sh) for sh, r in rows] for s, rows in results.items()},
               "notes": notes, "record": record}
        os.makedirs(os.path.dirname(os.path.abspath(a.json)), exist_ok=True)
        with open(a.json, "w") as fh:
            json.dump(clean(doc), fh, indent=1, allow_nan=False)
        print(f"wrote {a.json}")
    return 1 if any(v in ("FAIL", "ERROR") for v in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
