#!/usr/bin/env bash
# Issue 15 on a lent GPU machine: the two idle baselines, a 5-minute soak
# with its analysis, and the per-GPU table (campaigns/device-soak.toml).
# nvidia-smi's own view of the GPUs before the harness starts is logged
# beside the baseline taken before any CUDA context. Logs under $OUT; the
# run directory comes back as one tarball.
#   usage: scripts/device/device-soak.sh [path/to/powerlab]
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/powerlab-out}; mkdir -p "$OUT"
BIN=${1:-.device/powerlab}
LOG="$OUT/soak.txt"
log() { echo "=== $*" | tee -a "$LOG"; }
if [ -f "$BIN.gz" ] && [ ! -x "$BIN" ]; then gunzip -k "$BIN.gz"; chmod +x "$BIN"; fi
log "machine, before the harness"
nvidia-smi --query-gpu=index,uuid,name,power.draw,power.draw.instant,clocks.sm,temperature.gpu,enforced.power.limit,clocks_event_reasons.active --format=csv 2>&1 | tee -a "$LOG"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv 2>&1 | tee -a "$LOG"
"$BIN" --version | tee -a "$LOG"
log "preflight"
"$BIN" preflight --out "$OUT" 2>&1 | tail -6 | tee -a "$LOG"
log "nvidia-smi after the preflight (its CUDA contexts released)"
sleep 3
nvidia-smi --query-gpu=index,power.draw,clocks.sm --format=csv 2>&1 | tee -a "$LOG"
log "plan"
"$BIN" plan campaigns/device-soak.toml 2>&1 | tee -a "$LOG"
log "run campaigns/device-soak.toml"
"$BIN" run campaigns/device-soak.toml --results "$OUT/runs" > "$OUT/soak-run.log" 2>&1; echo "run exit $?" | tee -a "$LOG"
tail -15 "$OUT/soak-run.log" | tee -a "$LOG"
d=$(ls -d "$OUT"/runs/*/ | head -1)
log "report: the answer, the baselines, the soak"
sed -n '/^## The answer/,/^| |/p' "$d/report/report.md" | tee -a "$LOG"
sed -n '/^## Idle baselines/,/\*\*node\*\*/p' "$d/report/report.md" | tee -a "$LOG"
sed -n '/^## Soak/,/^Every figure/p' "$d/report/report.md" | tee -a "$LOG"
for f in soak.csv per_gpu.csv summary.csv; do
  echo "--- report/$f" | tee -a "$LOG"
  cat "$d/report/$f" | tee -a "$LOG"
done
# One file comes back (the raw Parquet copies and the PNG plots stay there).
rm -rf "$d/report/raw" "$d"/report/plots/*.png
tar czf "$OUT/soak-run.tgz" -C "$OUT/runs" "$(basename "$d")" && rm -rf "$OUT/runs"
ls -la "$OUT" | tee -a "$LOG"
