#!/usr/bin/env python3
"""Committed run reports against what today's collator writes.

    scripts/bench/recollate-results.py --check [--bin POWERLAB] [--jobs N] [DIR ...]
    scripts/bench/recollate-results.py --write [--bin POWERLAB] [--jobs N] [DIR ...]

Finds every run directory under results/ (or under the DIRs given): a node
run has manifest.json, events.jsonl and raw samples in raw/; a rack run has
rack.json and nodes/ (its nodes are collated with it, `--force`). A
directory with some of these files but not a run's (a device log's
events.jsonl, a manifest beside a copied report, a run whose raw/ was not
committed) is listed as skipped with the reason, never passed over silently.

Each run is collated from a copy in a temporary directory (its committed
report/ directories left out, so nothing of the old report is reused):
`powerlab collate run` (`--force` for a rack). Its report is every file the
collation writes under report/ (and nodes/*/report/ for a rack) that
.gitignore does not exclude: the bulky regenerable files (plots/, *.parquet,
report.html, node_curve.csv, rack_curve.csv, report/raw/) are not committed,
so they are not compared either.

--check compares that report with the working tree's, file by file and byte
for byte: a file that differs, one the collator writes that is not there,
and one that is there but the collator no longer writes are each printed;
any of them exits 1.
--write puts the collator's report in place of the working tree's (and
removes report files the collator no longer writes).

What a collation depends on besides the run's files, and how it is fixed:
- report/inputs.json records each input file's modification time (and its
  size and CRC-32). A checkout's times are the time of the checkout, so
  before collating, each input file of the copy is given the time its
  committed inputs.json records, and a file with no recorded time (a run
  whose report had no inputs.json yet) the run's end (manifest.json
  `ended_ns`, whole seconds, as a tar copy keeps it). Nothing else is
  excluded: collating the same run twice, from another path, with another
  modification time or on 1 or 2 cores gave byte-identical reports (the
  PNG/SVG plots, Parquet files and report.html included, though they are not
  committed); report.md's tool line is the run's binary (manifest.json),
  not the collator's.
- The run directory's path: each run is collated as `run` from its own
  temporary directory (no path of the run appears in a report file as of
  a02f319; the collation's stdout, which names it, is not compared).

The binary: --bin, else $POWERLAB, else target/debug/powerlab.
"""
import argparse
import concurrent.futures
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RESULTS = "results"


def rel(path):
    return os.path.relpath(path, ROOT)


def discover(tops):
    """(runs, skipped): runs as (repo-relative dir, "node" | "rack"),
    skipped as (dir, reason)."""
    marks = {}
    for top in tops:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
            dirnames[:] = [d for d in dirnames if d != "report" and not d.startswith(("report.new-", "report.old-"))]
            found = {f for f in ("manifest.json", "events.jsonl", "rack.json") if f in filenames}
            if found:
                marks[rel(dirpath)] = found
    racks = {d for d, f in marks.items() if "rack.json" in f}
    runs, skipped = [], []
    for d in sorted(marks):
        found = marks[d]
        parent = os.path.dirname(d)
        if os.path.basename(parent) == "nodes" and os.path.dirname(parent) in racks:
            continue  # collated with its rack
        if d in racks:
            if os.path.isdir(os.path.join(ROOT, d, "nodes")):
                runs.append((d, "rack"))
            else:
                skipped.append((d, "rack.json without nodes/: no node to collate"))
            continue
        missing = [f for f in ("manifest.json", "events.jsonl") if f not in found]
        raw = os.path.join(ROOT, d, "raw")
        if missing:
            have = ", ".join(sorted(found))
            skipped.append((d, f"{have} without {' and '.join(missing)}: not a run directory (a copied log or report)"))
        elif not os.path.isdir(raw) or not os.listdir(raw):
            skipped.append((d, "no raw samples (raw/ not committed): nothing to recollate from"))
        else:
            runs.append((d, "node"))
    return runs, skipped


def report_dirs(run_dir, kind):
    """The report directories of a run, relative to it."""
    dirs = ["report"]
    if kind == "rack":
        nodes = os.path.join(run_dir, "nodes")
        dirs += [os.path.join("nodes", n, "report") for n in sorted(os.listdir(nodes))
                 if os.path.isdir(os.path.join(nodes, n))]
    return dirs


def files_under(base, subdirs):
    """Every regular file under base/subdir, relative to base."""
    out = []
    for sub in subdirs:
        for dirpath, _, filenames in os.walk(os.path.join(base, sub)):
            out += [os.path.relpath(os.path.join(dirpath, f), base) for f in filenames]
    return sorted(out)


def not_ignored(paths):
    """The repo-relative paths .gitignore does not exclude (a tracked file
    never is)."""
    if not paths:
        return set()
    p = subprocess.run(["git", "-C", ROOT, "check-ignore", "--stdin", "-z"],
                       input="\0".join(paths) + "\0", capture_output=True, text=True)
    if p.returncode not in (0, 1):
        sys.exit(f"git check-ignore failed: {p.stderr.strip()}")
    ignored = set(filter(None, p.stdout.split("\0")))
    return set(paths) - ignored


def run_end_ns(manifest):
    """A run's end from its manifest.json, whole seconds (0: unknown)."""
    try:
        with open(manifest) as f:
            m = json.load(f)
        end = int(m.get("ended_ns") or m.get("started_ns") or 0)
    except (OSError, ValueError, TypeError):
        end = 0
    return end // 1_000_000_000 * 1_000_000_000


def pin_times(copy, run):
    """Gives every input file of the copied run (copy, made from the repo's
    run) the modification time that the committed report/inputs.json of its
    run (the node's, in a rack) records, else the run's end: the recollated
    inputs.json then records what the committed one does."""
    runs = {}  # directory inside the copy holding a manifest -> (recorded, default)
    for dirpath, dirnames, filenames in os.walk(copy):
        dirnames[:] = [d for d in dirnames if d != "report"]
        if "manifest.json" in filenames:
            inside = os.path.relpath(dirpath, copy)
            committed = os.path.join(ROOT, run, inside, "report", "inputs.json")
            recorded = {}
            if os.path.isfile(committed):
                with open(committed) as f:
                    recorded = {e["file"]: int(e["modified_ns"]) for e in json.load(f).get("files", [])}
            runs[os.path.normpath(dirpath)] = (recorded, run_end_ns(os.path.join(dirpath, "manifest.json")))
    latest = max((d for _, d in runs.values()), default=0)
    for dirpath, dirnames, filenames in os.walk(copy):
        dirnames[:] = [d for d in dirnames if d != "report"]
        for fn in filenames:
            p = os.path.join(dirpath, fn)
            owner = os.path.normpath(dirpath)
            while owner not in runs and owner != os.path.normpath(copy):
                owner = os.path.dirname(owner)
            recorded, default = runs.get(owner, ({}, latest))
            t = recorded.get(os.path.relpath(p, owner), default)
            os.utime(p, ns=(t, t), follow_symlinks=False)


def collate(run, kind, binary):
    """Collates a copy of the repo's run in a new temporary directory;
    returns (tmp, seconds, error or None). The copy is tmp/run."""
    tmp = tempfile.mkdtemp(prefix="recollate-")
    copy = os.path.join(tmp, "run")
    skip = ("report", ".collate.lock", ".run.lock")
    shutil.copytree(os.path.join(ROOT, run), copy, symlinks=True,
                    ignore=lambda d, names: [n for n in names if n in skip or n.startswith(("report.new-", "report.old-"))])
    pin_times(copy, run)
    args = [binary, "collate", "run"] + (["--force"] if kind == "rack" else [])
    t0 = time.monotonic()
    p = subprocess.run(args, cwd=tmp, capture_output=True, text=True)
    took = time.monotonic() - t0
    if p.returncode != 0:
        tail = "\n".join((p.stdout + p.stderr).strip().splitlines()[-15:])
        return tmp, took, f"collate exited {p.returncode}:\n{tail}"
    return tmp, took, None


def one(run, kind, binary, write):
    """Recollates one run; returns (lines to print, number of problems)."""
    tmp, took, err = collate(run, kind, binary)
    try:
        if err:
            return [f"FAILED {run}: {err}"], 1
        copy = os.path.join(tmp, "run")
        subs = report_dirs(copy, kind)
        new = {os.path.join(run, f): os.path.join(copy, f) for f in files_under(copy, subs)}
        old = {os.path.join(run, f): os.path.join(ROOT, run, f) for f in files_under(os.path.join(ROOT, run), subs)}
        keep = not_ignored(sorted(set(new) | set(old)))
        new = {k: v for k, v in new.items() if k in keep}
        old = {k: v for k, v in old.items() if k in keep}
        different = sorted(k for k in set(new) & set(old) if not filecmp.cmp(new[k], old[k], shallow=False))
        missing = sorted(set(new) - set(old))
        extra = sorted(set(old) - set(new))
        lines = []
        if write:
            for k in different + missing:
                os.makedirs(os.path.dirname(os.path.join(ROOT, k)), exist_ok=True)
                shutil.copyfile(new[k], os.path.join(ROOT, k))
            for k in extra:
                os.remove(os.path.join(ROOT, k))
            changed = len(different) + len(missing) + len(extra)
            what = (f"{len(different)} rewritten, {len(missing)} added, {len(extra)} removed"
                    if changed else "unchanged")
            lines.append(f"wrote {run} ({kind}, {len(new)} report files, {took:.1f} s): {what}")
            return lines, 0
        for k in different:
            lines.append(f"  DIFFERENT {k}")
        for k in missing:
            lines.append(f"  MISSING   {k} (the collator writes it; not in the working tree)")
        for k in extra:
            lines.append(f"  EXTRA     {k} (in the working tree; the collator no longer writes it)")
        n = len(lines)
        head = "identical" if n == 0 else f"DIFFERENT ({n} files)"
        return [f"{head}: {run} ({kind}, {len(new)} report files, {took:.1f} s)"] + lines, n
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true", help="compare; exit 1 on any difference")
    mode.add_argument("--write", action="store_true", help="regenerate the working tree's reports")
    ap.add_argument("--bin", default=os.environ.get("POWERLAB", os.path.join(ROOT, "target", "debug", "powerlab")),
                    help="the powerlab binary (default: $POWERLAB, else target/debug/powerlab)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="runs collated at once (default: every core)")
    ap.add_argument("dirs", nargs="*", default=[RESULTS], help="where to look for runs (default: results)")
    a = ap.parse_args()
    binary = os.path.realpath(a.bin)
    if not os.access(binary, os.X_OK):
        sys.exit(f"no powerlab binary at {binary} (build it: cargo build -p powerlab; or pass --bin)")
    tops = [rel(os.path.realpath(d)) for d in a.dirs]
    runs, skipped = discover(tops)
    t0 = time.monotonic()
    v = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"{'writing' if a.write else 'checking'} {len(runs)} runs with {v} ({a.jobs} at once)")
    for d, why in skipped:
        print(f"skipped: {d}: {why}")
    problems = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        futures = [pool.submit(one, d, kind, binary, a.write) for d, kind in runs]
        for f in futures:
            lines, n = f.result()
            problems += n
            print("\n".join(lines), flush=True)
    took = time.monotonic() - t0
    if a.write:
        print(f"{len(runs)} runs recollated, {len(skipped)} skipped, {problems} failed, in {took:.0f} s")
    else:
        print(f"{len(runs)} runs checked, {len(skipped)} skipped, {problems} differing files or failures, in {took:.0f} s")
        if problems:
            print("the committed reports are not what this collator writes: "
                  "scripts/bench/recollate-results.py --write regenerates them")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
