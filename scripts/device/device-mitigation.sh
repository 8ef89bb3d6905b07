#!/usr/bin/env bash
# Issue 33 on a lent GPU machine: sanity, the preflight (power smoothing
# state included), then campaigns/device-mitigation.toml (plain, floor and
# ramp rungs at 100 and 500 ms, each calibrated first), collated, and
# checked from the raw files by mitigation_check.py (its own code). Read-
# only towards the GPU's settings. Logs under $OUT, the run as one tarball.
#   usage: scripts/device/device-mitigation.sh [.device/powerlab.xz] [campaign]
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/powerlab-out}; mkdir -p "$OUT"
SRC=${1:-.device/powerlab.xz}
CAMPAIGN=${2:-campaigns/device-mitigation.toml}
BIN=/tmp/powerlab
case "$SRC" in *.xz) xz -dc "$SRC" > "$BIN" ;; *) cp "$SRC" "$BIN" ;; esac
chmod +x "$BIN"
LOG=$OUT/mitigation.txt
log() { echo "=== $*" | tee -a "$LOG"; }
log "machine, before the harness"
nvidia-smi --query-gpu=index,uuid,name,power.draw,power.limit,enforced.power.limit,clocks.sm,temperature.gpu,persistence_mode,compute_mode --format=csv 2>&1 | tee -a "$LOG"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv 2>&1 | tee -a "$LOG"
"$BIN" --version 2>&1 | tee -a "$LOG"
log "preflight"
"$BIN" preflight --out "$OUT" > "$OUT/preflight.txt" 2>&1; rc=$?
tail -25 "$OUT/preflight.txt" | tee -a "$LOG"; echo "preflight exit $rc" | tee -a "$LOG"
[ $rc -eq 0 ] || { log "preflight refused the node: stopping"; exit 1; }
# One GPU cannot be staggered: its staggered rungs would repeat the in-phase ones.
NGPU=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
if [ "$NGPU" -eq 1 ]; then
  sed 's/^modes = \["in_phase", "staggered"\]/modes = ["in_phase"]/' "$CAMPAIGN" > /tmp/campaign-1gpu.toml
  CAMPAIGN=/tmp/campaign-1gpu.toml
  log "1 GPU: in phase only"
fi
log "plan $CAMPAIGN"
"$BIN" plan "$CAMPAIGN" > "$OUT/plan.txt" 2>&1; tail -40 "$OUT/plan.txt" | tee -a "$LOG"
log "run"
R=/tmp/powerlab-runs; rm -rf "$R"
"$BIN" run "$CAMPAIGN" --results "$R" > "$OUT/run.log" 2>&1; echo "run exit $?" | tee -a "$LOG"
tail -30 "$OUT/run.log" | tee -a "$LOG"
d=$(ls -d "$R"/*/ 2>/dev/null | head -1)
[ -n "$d" ] || { log "no run directory"; exit 1; }
log "independent check from the raw files"
python3 "$HERE/mitigation_check.py" "$d" --json "$OUT/mitigation_check.json" 2>&1 | tee -a "$LOG"
log "collate"
rm -rf "$d/report"; "$BIN" collate "$d" > "$OUT/collate.log" 2>&1; echo "collate exit $?" | tee -a "$LOG"
sed -n '/^## The answer/,/^## /p' "$d/report/report.md" | head -60 | tee -a "$LOG"
log "nvidia-smi after"
nvidia-smi --query-gpu=index,power.draw,clocks.sm,temperature.gpu --format=csv 2>&1 | tee -a "$LOG"
rm -rf "$d/report/raw" "$d"/report/plots/*.png
tar czf "$OUT/mitigation-run.tgz" -C "$R" "$(basename "$d")"
ls -la "$OUT" | tee -a "$LOG"
