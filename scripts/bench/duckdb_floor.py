#!/usr/bin/env python3
"""The floor of any collation: DuckDB reads every raw CSV of a run and
computes each GPU's mean per instrument (every row read and parsed once).

    python3 scripts/bench/duckdb_floor.py RUN_DIR [--threads N] [--repeat K]

RUN_DIR is a node run (raw/*.csv or raw/*.csv.gz) or a rack (every node's
nodes/*/raw/*: the same files the rack's collation reads).

Prints one JSON line: {"seconds": best of K, "all_s": [...], "rows": ...,
"threads": N, "duckdb": version}. Reference for scripts/bench/bench-collate.sh
and the CI guard (scripts/ci/ci-collate-budget.sh): a collator that reads
every raw row cannot be faster than this, and should stay within a few
times of it.
"""
import argparse
import glob
import json
import os
import sys
import time


def raw_files(run: str) -> list:
    """A node's raw files, or every node's of a rack."""
    found = []
    for raw in [os.path.join(run, "raw")] + sorted(glob.glob(os.path.join(run, "nodes", "*", "raw"))):
        for pattern in ("*.csv", "*.csv.gz"):
            found.extend(sorted(glob.glob(os.path.join(raw, pattern))))
    return found


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    try:
        import duckdb
    except ImportError:
        print("duckdb_floor: the Python package duckdb is missing (pip install duckdb)", file=sys.stderr)
        return 2
    files = raw_files(a.run)
    if not files:
        print(f"duckdb_floor: no raw/*.csv(.gz) under {a.run} (nor nodes/*/raw/)", file=sys.stderr)
        return 2
    cols = "{'ts_ns': 'BIGINT', 'node': 'VARCHAR', 'gpu': 'VARCHAR', 'instrument': 'VARCHAR', 'value': 'DOUBLE'}"
    query = (
        f"SELECT gpu, instrument, count(*) AS n, avg(value) AS mean "
        f"FROM read_csv({files!r}, header = true, columns = {cols}) GROUP BY ALL"
    )
    times, rows = [], 0
    for _ in range(max(1, a.repeat)):
        con = duckdb.connect()
        con.execute(f"SET threads TO {a.threads}")
        t0 = time.perf_counter()
        out = con.sql(query).fetchall()
        times.append(time.perf_counter() - t0)
        rows = sum(r[2] for r in out)
        con.close()
    print(json.dumps({
        "seconds": round(min(times), 3),
        "all_s": [round(t, 3) for t in times],
        "rows": rows,
        "groups": len(out),
        "threads": a.threads,
        "duckdb": duckdb.__version__,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
