#!/usr/bin/env python3
"""Reads a collated run's Parquet files with DuckDB (a reader independent of
the polars writer that made them) and compares each with its CSV:
summary, repeats, in-phase-vs-staggered, the node curve and every raw file.

    usage: python3 scripts/ci/check_parquet.py RUN_DIR
Exits 1 naming the first table, row and column that differ.
"""
import csv
import gzip
import math
import os
import sys

import duckdb


def fail(msg):
    print(f"check_parquet: FAILED: {msg}", file=sys.stderr)
    sys.exit(1)


def same(a, b, tol):
    """A CSV cell (text) against a Parquet cell (typed)."""
    if b is None:
        return a in ("", "null", "NaN")
    if isinstance(b, bool):
        return a.lower() == str(b).lower()
    if isinstance(b, (int, float)):
        if a == "":
            return isinstance(b, float) and math.isnan(b)
        x = float(a)
        if math.isnan(x) or math.isnan(float(b)):
            return math.isnan(x) and math.isnan(float(b))
        return abs(x - float(b)) <= tol * max(1.0, abs(x))
    return a == str(b)


def parquet_rows(con, path):
    rel = con.execute(f"SELECT * FROM read_parquet('{path}')")
    cols = [d[0] for d in rel.description]
    return cols, rel.fetchall()


def compare_table(con, csv_path, pq_path, tol, key=None):
    with (gzip.open(csv_path, "rt") if csv_path.endswith(".gz") else open(csv_path)) as f:
        rows = list(csv.reader(f))
    if not rows:
        if os.path.exists(pq_path):
            fail(f"{pq_path} exists for an empty {csv_path}")
        return 0
    header, body = rows[0], rows[1:]
    cols, prow = parquet_rows(con, pq_path)
    missing = [c for c in header if c not in cols]
    if missing:
        fail(f"{pq_path} lacks columns {missing} of {csv_path}")
    if len(body) != len(prow):
        fail(f"{pq_path}: {len(prow)} rows, {csv_path}: {len(body)}")
    idx = [cols.index(c) for c in header]
    if key is not None:
        body = sorted(body, key=key)
        prow = sorted(prow, key=lambda r: key([str(r[i]) for i in idx]))
    for n, (c, p) in enumerate(zip(body, prow)):
        for h, a, i in zip(header, c, idx):
            if not same(a, p[i], tol):
                fail(f"{pq_path} row {n} column {h}: Parquet {p[i]!r}, CSV {a!r}")
    return len(body)


def main():
    if len(sys.argv) != 2:
        fail("usage: check_parquet.py RUN_DIR")
    run = sys.argv[1]
    rep = os.path.join(run, "report")
    con = duckdb.connect()
    checked = []
    for name in ("summary", "repeats", "in_phase_vs_staggered"):
        n = compare_table(con, f"{rep}/{name}.csv", f"{rep}/{name}.parquet", 1e-12)
        checked.append(f"{name} {n} rows")
    # The CSV curve is rounded to three decimals; the Parquet one is not.
    n = compare_table(con, f"{rep}/node_curve.csv", f"{rep}/node_curve.parquet", 6e-4)
    checked.append(f"node_curve {n} points")
    raw = os.path.join(run, "raw")
    for f in sorted(os.listdir(raw)):
        if not (f.endswith(".csv") or f.endswith(".csv.gz")):
            continue
        gpu = f.split(".")[0]
        n = compare_table(con, os.path.join(raw, f), f"{rep}/raw/{gpu}.parquet", 0.0)
        checked.append(f"raw/{gpu} {n} rows")
    print("check_parquet: Parquet equals CSV (DuckDB " + duckdb.__version__ + "): " + ", ".join(checked))


if __name__ == "__main__":
    main()
