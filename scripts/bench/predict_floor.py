#!/usr/bin/env python3
"""The floor of a prediction, measured beside `powerlab predict` in the same
run (scripts/bench/bench-predict.sh): the least any tool pays to turn one
node run into a facility waveform and write it.

    python3 scripts/bench/predict_floor.py RUN_DIR --gpus N --gpus-per-node G \
        --iteration-ms P --span-s S --resolution-ms R --sigma-ms SIGMA [--threads T]

Three parts, each timed:
  read:      DuckDB reads every raw row of RUN_DIR (as duckdb_floor.py);
  superpose: numpy draws each node's offset (normal, SIGMA), bins the
             offsets on the output grid and convolves them (FFT) with one
             node's iteration, tiled over the span: every node's waveform
             summed, the arithmetic a prediction cannot avoid;
  write:     DuckDB writes the waveform (t_ns, power_w) as Parquet.

Prints one JSON line with each part's seconds and their total. A reference,
not a model of powerlab's work: powerlab also reads the run's report, its
lifecycle and scenarios; the floor says how far its time is from the
bytes and the arithmetic.
"""
import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from duckdb_floor import raw_files  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--gpus", type=int, required=True)
    ap.add_argument("--gpus-per-node", type=int, required=True)
    ap.add_argument("--iteration-ms", type=float, required=True)
    ap.add_argument("--span-s", type=float, required=True)
    ap.add_argument("--resolution-ms", type=float, required=True)
    ap.add_argument("--sigma-ms", type=float, required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    try:
        import duckdb
        import numpy as np
    except ImportError as e:
        print(f"predict_floor: {e.name} is missing (pip install duckdb numpy)", file=sys.stderr)
        return 2
    files = raw_files(a.run)
    if not files:
        print(f"predict_floor: no raw files under {a.run}", file=sys.stderr)
        return 2
    con = duckdb.connect()
    con.execute(f"SET threads TO {a.threads}")
    cols = "{'ts_ns': 'BIGINT', 'node': 'VARCHAR', 'gpu': 'VARCHAR', 'instrument': 'VARCHAR', 'value': 'DOUBLE'}"
    t0 = time.perf_counter()
    con.sql(f"SELECT gpu, instrument, avg(value) FROM read_csv({files!r}, header = true, columns = {cols}) GROUP BY ALL").fetchall()
    t1 = time.perf_counter()
    points = int(round(a.span_s * 1000 / a.resolution_ms))
    per_iter = max(1, int(round(a.iteration_ms / a.resolution_ms)))
    nodes = max(1, a.gpus // a.gpus_per_node)
    rng = np.random.default_rng(1)
    offsets = np.rint(rng.normal(0.0, a.sigma_ms, nodes) / a.resolution_ms).astype(np.int64) % per_iter
    counts = np.bincount(offsets, minlength=per_iter).astype(np.float64)
    node_iteration = np.where(np.arange(per_iter) < 0.75 * per_iter, 700.0, 100.0) * a.gpus_per_node
    # Circular convolution of the offsets with one node's iteration, tiled.
    one = np.fft.irfft(np.fft.rfft(counts) * np.fft.rfft(node_iteration), per_iter)
    waveform = np.tile(one, points // per_iter + 1)[:points]
    t_ns = np.arange(points, dtype=np.int64) * int(a.resolution_ms * 1e6)
    t2 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "waveform.parquet")
        con.register("w", {"t_ns": t_ns, "power_w": waveform})
        con.execute(f"COPY w TO '{out}' (FORMAT parquet)")
        t3 = time.perf_counter()
        size = os.path.getsize(out)
    print(json.dumps({
        "read_s": round(t1 - t0, 3),
        "superpose_s": round(t2 - t1, 3),
        "write_s": round(t3 - t2, 3),
        "seconds": round(t3 - t0, 3),
        "raw_files": len(files),
        "nodes": nodes,
        "points": points,
        "parquet_bytes": size,
        "threads": a.threads,
        "duckdb": duckdb.__version__,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
