#!/usr/bin/env bash
# Benchmark (issue 34): `powerlab predict` of 100,000 GPUs (12,500 nodes of
# 8) for 10 minutes at 1 ms, from the committed 1 x H200 `edges` run, with
# schedules/llm-100k.toml (normal spread, stragglers, every measured
# scenario). Prints the wall time, the peak memory and the command's own
# split (run report / prediction / files), without the grid playback (ANDES:
# its own time, see docs/grid-study.md). Target: < 30 s and < 1 GB on the
# 2-core build machine. Beside each, in the same run, the floor
# (scripts/bench/predict_floor.py): DuckDB reading the run's raw files,
# numpy summing every node's offset iteration (FFT) and DuckDB writing the
# waveform as Parquet. Usage: bench-predict.sh [powerlab binary]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-}
if [ -z "$BIN" ]; then
  cargo build --release --quiet -p powerlab
  BIN=target/release/powerlab
fi
python3 -c 'import duckdb, numpy' 2>/dev/null || python3 -m pip install --quiet "duckdb==2.0.1" numpy
RUN=results/h200x1-2026-12-01/edges
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
bench() { # what, gpus per node, sigma ms, extra predict arguments...
  local what=$1 per_node=$2 sigma=$3; shift 3
  /usr/bin/time -v "$BIN" predict "$RUN" --schedule schedules/llm-100k.toml --out "$OUT/p" --no-lifecycle --no-grid-playback "$@" > "$OUT/stdout.log" 2> "$OUT/time.log" || { cat "$OUT/time.log"; exit 1; }
  local secs rss_kb bytes
  secs=$(grep "Elapsed (wall clock)" "$OUT/time.log" | awk '{print $NF}' | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
  rss_kb=$(grep "Maximum resident set size" "$OUT/time.log" | awk '{print $NF}')
  bytes=$(stat -c %s "$OUT/p/waveform.parquet")
  echo "predict ($what): 100000 GPUs x 600 s at 1 ms in ${secs} s, peak memory $((rss_kb / 1024)) MiB, waveform.parquet $((bytes / 1000)) kB (target < 30 s, < 1024 MiB)"
  grep "^times:" "$OUT/time.log" | sed 's/^/  /'
  sed 's/^/  /' "$OUT/stdout.log"
  python3 scripts/bench/predict_floor.py "$RUN" --gpus 100000 --gpus-per-node "$per_node" \
    --iteration-ms 2000 --span-s 600 --resolution-ms 1 --sigma-ms "$sigma" > "$OUT/floor.json"
  python3 - "$OUT/floor.json" "$secs" <<'PY'
import json, sys
f = json.load(open(sys.argv[1])); secs = float(sys.argv[2])
print(f"  floor, same run: {f['seconds']:.3f} s (DuckDB read {f['read_s']:.3f} s, numpy superposition "
      f"{f['superpose_s']:.3f} s, DuckDB Parquet write {f['write_s']:.3f} s): predict is {secs / f['seconds']:.0f}x the floor")
PY
}
bench "llm-100k.toml: 12500 nodes of 8, sigma 2 ms, stragglers" 8 2
bench "100000 nodes of 1, sigma 50 ms, 4 stagger groups" 1 50 --gpus-per-node 1 --spread-sigma-ms 50 --stagger-groups 4
