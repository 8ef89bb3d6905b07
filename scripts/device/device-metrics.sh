#!/usr/bin/env bash
# Issue 35 on a real GPU: the edge-timing campaign (campaigns/device-edges.toml,
# about 2.5 min) with --metrics-listen while a scraper reads /metrics at 10 Hz
# and an independent pynvml drain counts every buffered sample the driver
# kept, while three hostile clients (one never reads, one sends half a
# request head, one sends nothing) hold connections open. Prints the share captured per GPU and the edge errors (targets: p99
# under 50 µs). Read-only towards GPU settings. Logs go under $OUT as one
# tarball (metrics.tar.gz) plus summary.txt.
#   usage: scripts/device/device-metrics.sh [path/to/powerlab(.xz|.gz)]
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/powerlab-out}; mkdir -p "$OUT"; W="$OUT/metrics"; mkdir -p "$W"
BIN=/tmp/powerlab
SRC=${1:-$(ls -t .device/powerlab.xz target/release/powerlab 2>/dev/null | head -1)}
[ -f "$SRC" ] || { echo "device-metrics: no binary ($SRC)" >&2; exit 2; }
case "$SRC" in *.xz) xz -dc "$SRC" > "$BIN" ;; *.gz) gunzip -c "$SRC" > "$BIN" ;; *) cp "$SRC" "$BIN" ;; esac
chmod +x "$BIN"
R=/tmp/powerlab-results; rm -rf "$R"; mkdir -p "$R"
say() { echo "=== $*" | tee -a "$OUT/summary.txt"; }

say "sanity"
nvidia-smi --query-gpu=index,uuid,name,power.draw,enforced.power.limit,clocks.sm --format=csv | tee -a "$OUT/summary.txt"
"$BIN" --version | tee -a "$OUT/summary.txt"
"$BIN" preflight --out "$W" > "$W/preflight.log" 2>&1; rc=$?
tail -3 "$W/preflight.log" | tee -a "$OUT/summary.txt"; echo "preflight exit $rc" | tee -a "$OUT/summary.txt"
ALLOW=""; [ "$rc" = 0 ] || ALLOW="--allow-unhealthy"

say "edges campaign with --metrics-listen, 10 Hz scraper, independent drain"
STOP=/tmp/metrics-stop; rm -f "$STOP"
python3 "$HERE/drain_count.py" "$W/drain.json" "$STOP" > "$W/drain.log" 2>&1 & DRAIN=$!
python3 "$HERE/scrape10hz.py" http://127.0.0.1:9464/metrics "$W/last-scrape.txt" "$STOP" > "$W/scrape.log" 2>&1 & SCRAPE=$!
python3 "$HERE/stuck_clients.py" 127.0.0.1:9464 "$STOP" > "$W/stuck.log" 2>&1 & STUCK=$!
sleep 1
start=$(date +%s)
"$BIN" run campaigns/device-edges.toml $ALLOW --metrics-listen 127.0.0.1:9464 --results "$R/metrics" > "$W/run.log" 2>&1
echo "run exit $?, $(( $(date +%s) - start )) s" | tee -a "$OUT/summary.txt"
touch "$STOP"; wait $DRAIN; wait $SCRAPE; wait $STUCK
cat "$W/drain.log" "$W/scrape.log" "$W/stuck.log" | tee -a "$OUT/summary.txt"
d=$(ls -d "$R/metrics"/*/ | head -1)
python3 "$HERE/captured.py" "$d" "$W/drain.json" 2>&1 | tee -a "$OUT/summary.txt"
say "edge errors (µs) with the scraper running"
python3 "$HERE/edge_stats.py" "$d" 2>&1 | tee -a "$OUT/summary.txt"
say "the last exposition (node, rung, sampler health)"
grep -E "^powerlab_(node_power|node_gpus|rung_info|run_progress|samples_total|sample_gaps_total|gpu_power_reading_age|sampler_idle|interlock)" "$W/last-scrape.txt" | head -30 | tee -a "$OUT/summary.txt"
tail -25 "$W/run.log" > "$W/run-tail.log"
cp "$d/manifest.json" "$d/edges.csv" "$d/events.jsonl" "$W/" 2>/dev/null
cp "$d/report/summary.csv" "$W/" 2>/dev/null
# One tarball: the logs and the whole run directory (raw files included).
cp -r "$d" "$W/run"
tar -czf "$OUT/metrics.tar.gz" -C "$OUT" metrics && rm -rf "$W"
say "done"
