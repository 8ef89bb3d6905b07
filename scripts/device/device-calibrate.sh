#!/usr/bin/env bash
# Issue 58 on one lent GPU (H100 mostly): the GPU's own sensor model.
# Read-only towards the GPU's settings (no clock, limit, persistence, MIG
# or compute-mode change; no reset).
#   1. sanity (nvidia-smi, torch) and `powerlab preflight`;
#   2. `powerlab calibrate`: the built-in calibration campaign (about
#      1.5 min), which writes the GPU's sensor.json into its run directory;
#   3. if time is left: the training loop back to back (~25 s) and with an
#      idle wait (~25 s, then observe left running ~10 s after it ended),
#      each recorded by `powerlab observe --csv` with the energy counter
#      in it: a back-to-back job's period and an idle-wait job's mean
#      against its counter, and a real job-then-idle recording.
# Everything lands in $OUT/calibrate-run.tgz (the run directory with its
# raw files) and $OUT/calibrate-rest.tgz (the recordings, logs); collate
# and predict here afterwards.
#   usage: scripts/device/device-calibrate.sh [.dev58/powerlab.xz] [DEADLINE_S]
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/powerlab-out}; mkdir -p "$OUT"
SRC=${1:-.dev58/powerlab.xz}
DEADLINE_S=${2:-330}
T0=$(date +%s)
left() { echo $(( DEADLINE_S - ($(date +%s) - T0) )); }
BIN=/tmp/powerlab
case "$SRC" in *.xz) xz -dc "$SRC" > "$BIN" ;; *) cp "$SRC" "$BIN" ;; esac
chmod +x "$BIN"
W=/tmp/cal58; rm -rf "$W"; mkdir -p "$W"
LOG=$W/log.txt
log() { echo "=== $(date +%T) (+$(( $(date +%s) - T0 )) s) $*" | tee -a "$LOG"; }
# Two tarballs (a file comes back only under 16 MiB): the calibration's
# run directory, and everything else.
pack() {
  tar czf "$OUT/calibrate-run.tgz" -C /tmp cal58/runs
  tar czf "$OUT/calibrate-rest.tgz" -C /tmp --exclude cal58/runs cal58
  ls -la "$OUT" | tee -a "$LOG"
}
trap pack EXIT
LOOP=$HERE/train_loop.py
[ -f "$LOOP" ] || LOOP=scripts/device/train_loop.py

log "machine"
nvidia-smi --query-gpu=index,uuid,name,power.draw,power.limit,enforced.power.limit,clocks.sm,temperature.gpu,persistence_mode,compute_mode --format=csv 2>&1 | tee -a "$LOG"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv 2>&1 | tee -a "$LOG"
python3 -c "import torch, pynvml; print('torch', torch.__version__, 'cuda', torch.version.cuda)" 2>&1 | tee -a "$LOG"
"$BIN" --version 2>&1 | tee -a "$LOG"

log "preflight"
"$BIN" preflight --out "$W" > "$W/preflight.txt" 2>&1; rc=$?
tail -8 "$W/preflight.txt" | tee -a "$LOG"; echo "preflight exit $rc" | tee -a "$LOG"
[ $rc -eq 0 ] || { log "preflight refused the node: stopping"; exit 1; }

log "calibrate"
timeout -s INT 200 "$BIN" calibrate --results "$W/runs" > "$W/calibrate.log" 2>&1; echo "calibrate exit $?" | tee -a "$LOG"
tail -20 "$W/calibrate.log" | tee -a "$LOG"
for f in "$W"/runs/*/report/sensor.json "$W"/runs/*/sensor.json; do [ -f "$f" ] && { echo "--- $f"; head -c 3000 "$f"; echo; } | tee -a "$LOG"; done
# The reports are made here again from the raw files; keep the raw.
rm -rf "$W"/runs/*/report/plots "$W"/runs/*/report/*.parquet "$W"/runs/*/report/raw

# One shape of the loop recorded by observe: $1 shape, $2 loop seconds,
# $3 observe seconds, extra loop arguments after.
record() {
  local shape=$1 secs=$2 obs=$3; shift 3
  log "$shape: the loop ${secs} s, observe ${obs} s"
  python3 "$LOOP" --shape "$shape" "$@" --warmup-steps 8 --duration-s "$secs" --json "$W/train-$shape.json" > "$W/train-$shape.log" 2>&1 & local tpid=$!
  for _ in $(seq 240); do grep -q "warmup" "$W/train-$shape.log" 2>/dev/null && break; sleep 0.25; done
  sleep 1
  "$BIN" observe --seconds "$obs" --interval-ms 2000 --csv "$W/observe-$shape.csv" > "$W/observe-$shape.log" 2>&1; echo "observe exit $?" | tee -a "$LOG"
  wait $tpid; echo "loop exit $?" | tee -a "$LOG"
  tail -3 "$W/train-$shape.log" | tee -a "$LOG"
  gzip -f "$W/observe-$shape.csv"
}

if [ "$(left)" -gt 75 ]; then record back_to_back 28 24; fi
if [ "$(left)" -gt 75 ]; then record idle_wait 24 32 --iteration-factor 1.74; fi
log "nvidia-smi after"
nvidia-smi --query-gpu=index,power.draw,clocks.sm,temperature.gpu --format=csv 2>&1 | tee -a "$LOG"
