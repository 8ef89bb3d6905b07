#!/usr/bin/env bash
# Benchmark: generate the raw samples of a 4-hour 8-GPU campaign on the
# simulated node (virtual time, campaigns/bench-4h.toml, ~18.8 M raw rows,
# 1.03 GB), then, in the same run and on the same files:
#   1. DuckDB's read (the floor: every raw row parsed once, a mean per GPU
#      and instrument; scripts/bench/duckdb_floor.py), on every core;
#   2. the collation on every core (POWERLAB_LOG=info: each step's time);
#   3. the collation and DuckDB's read on one core (taskset -c 0), to say
#      how the time scales with cores.
# Prints the total, every step's own time, peak memory and DuckDB's time,
# against absolute targets (issue 56): the whole collation within 4x
# DuckDB's read, peak memory under 1.5 GiB. Exits 1 when a target is
# missed.
#   usage: scripts/bench/bench-collate.sh [BINARY]   (default: builds target/release/powerlab)
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ $# -ge 1 ]; then BIN=$(realpath "$1"); else cargo build --release --quiet; BIN=$PWD/target/release/powerlab; fi
python3 -c 'import duckdb' 2>/dev/null || python3 -m pip install --quiet "duckdb==2.0.1"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "generating 4 h x 8 GPUs on the simulated node (virtual time)..."
gen_start=$(date +%s%N)
"$BIN" run campaigns/bench-4h.toml --backend sim --sim-gpus 8 --sim-step-us 1000 --results "$OUT" --no-collate --json > "$OUT/events.log"
gen_end=$(date +%s%N)
RUN=$(ls -d "$OUT"/bench-4h-*)
rows=$(cat "$RUN"/raw/*.csv | wc -l)
bytes=$(du -sb "$RUN/raw" | cut -f1)
echo "generated $rows raw lines ($((bytes / 1000000)) MB) in $(( (gen_end - gen_start) / 1000000 )) ms"
collate() { # label, then the command's prefix (e.g. taskset -c 0)
  local label=$1; shift
  rm -rf "$OUT/run-$label"; cp -a "$RUN" "$OUT/run-$label"
  POWERLAB_LOG=info "$@" /usr/bin/time -v "$BIN" collate "$OUT/run-$label" > "$OUT/collate-$label.log" 2> "$OUT/collate-$label.err"
}
echo; echo "== every core ($(nproc))"
python3 scripts/bench/duckdb_floor.py "$RUN" --repeat 3 > "$OUT/duckdb.json"
collate all
python3 scripts/bench/collate_steps.py --log "$OUT/collate-all.err" --time "$OUT/collate-all.err" \
  --duckdb "$OUT/duckdb.json" --label "4 h x 8 GPUs, $(nproc) cores" \
  --max-floor-ratio 4 --max-step-share 0.5 --max-rss-mib 1536 && ok=0 || ok=$?
echo; echo "== one core (taskset -c 0)"
taskset -c 0 python3 scripts/bench/duckdb_floor.py "$RUN" --repeat 2 --threads 1 > "$OUT/duckdb1.json"
collate one taskset -c 0
python3 scripts/bench/collate_steps.py --log "$OUT/collate-one.err" --time "$OUT/collate-one.err" \
  --duckdb "$OUT/duckdb1.json" --label "4 h x 8 GPUs, 1 core" || true
exit "$ok"
