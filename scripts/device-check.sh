#!/usr/bin/env bash
# Runs on a fresh H200 node with a prebuilt powerlab (no Rust there):
# sanity, virus modes vs a PyTorch cuBLAS reference, the duty sweep in phase
# and staggered, and collate. Logs and results go under $OUT.
#   usage: scripts/device-check.sh [path/to/powerlab.gz]
set -uo pipefail
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/powerlab-out}; mkdir -p "$OUT"
BIN=/tmp/powerlab
if [ -f "${1:-.device/powerlab.gz}" ]; then gunzip -c "${1:-.device/powerlab.gz}" > "$BIN"; else cp "${1:-target/release/powerlab}" "$BIN"; fi
chmod +x "$BIN"
R=/tmp/powerlab-results; rm -rf "$R"; mkdir -p "$R"
say() { echo "=== $*" | tee -a "$OUT/summary.txt"; }

say "sanity"
nvidia-smi --query-gpu=index,uuid,name,power.draw,enforced.power.limit,clocks.sm --format=csv | tee -a "$OUT/summary.txt"
nvidia-smi -q | grep -A3 "^    Fabric" | head -8 | tee -a "$OUT/summary.txt"
"$BIN" --version | tee -a "$OUT/summary.txt"
"$BIN" observe --seconds 2 --interval-ms 1000 2>&1 | tee -a "$OUT/summary.txt"

say "virus modes (20 s sustained each, all GPUs)"
for mode in ${MODES:-gemm mixed hbm}; do
  "$BIN" run campaigns/device-virus.toml --virus "$mode" --results "$R/virus-$mode" > "$OUT/virus-$mode.log" 2>&1
  echo "exit $?" >> "$OUT/virus-$mode.log"
  d=$(ls -d "$R/virus-$mode"/*/ | head -1)
  echo "mode $mode:" | tee -a "$OUT/summary.txt"
  python3 scripts/gpu_means.py "$d" sustained | tee -a "$OUT/summary.txt"
  tail -3 "$OUT/virus-$mode.log" | tee -a "$OUT/summary.txt"
done

say "PyTorch FP16 8192^3 GEMM reference (20 s, all GPUs)"
"$BIN" observe --seconds 24 --interval-ms 5000 --csv "$OUT/torch-ref.csv" > "$OUT/torch-observe.log" 2>&1 &
OBS=$!
sleep 1
python3 scripts/torch_gemm_ref.py 20 2>&1 | tee -a "$OUT/summary.txt"
wait $OBS
python3 scripts/observe_means.py "$OUT/torch-ref.csv" 4 | tee -a "$OUT/summary.txt"

say "duty sweep in phase and staggered"
"$BIN" run campaigns/device-h200.toml --results "$R/sweep" > "$OUT/sweep.log" 2>&1
echo "exit $?" | tee -a "$OUT/summary.txt"
tail -16 "$OUT/sweep.log" | tee -a "$OUT/summary.txt"
d=$(ls -d "$R/sweep"/*/ | head -1)
python3 scripts/gpu_means.py "$d" sustained | tee -a "$OUT/summary.txt"
grep '"topic":"samplers"' "$d/events.jsonl" | tee -a "$OUT/summary.txt"

say "collate again from raw files"
rm -rf "$d/report"; "$BIN" collate "$d" > "$OUT/collate.log" 2>&1; echo "exit $?" | tee -a "$OUT/summary.txt"

tar czf "$OUT/results.tgz" -C "$R" . 2>/dev/null
ls -la "$OUT"
