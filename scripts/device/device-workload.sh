#!/usr/bin/env bash
# Issue 46 on one lent H200. Read-only towards the GPU's settings.
#   part 1: sanity, preflight, then campaigns/device-workload.toml (the
#           duty sweep and the training loop as three workload phases)
#           with scripts/device/independent_meter.py draining every
#           buffered sample and the energy counter beside it;
#   part 2: the same loop in the same three shapes without the harness's
#           runner, recorded by `powerlab observe --csv` and the meter.
# Everything lands in $OUT/workload-partN.tgz (raw files, meter files,
# the loop's own timings, logs); collate and compare here afterwards.
#   usage: scripts/device/device-workload.sh 1|2 [.device/powerlab.xz]
set -uo pipefail
PART=${1:?part 1 or 2}
HERE=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/powerlab-out}; mkdir -p "$OUT"
SRC=${2:-.device/powerlab.xz}
BIN=/tmp/powerlab
case "$SRC" in *.xz) xz -dc "$SRC" > "$BIN" ;; *) cp "$SRC" "$BIN" ;; esac
chmod +x "$BIN"
W=/tmp/wl-part$PART; rm -rf "$W"; mkdir -p "$W"
LOG=$W/log.txt
log() { echo "=== $(date +%T) $*" | tee -a "$LOG"; }
meter_start() { rm -f "$W/meter.stop"; python3 "$HERE/independent_meter.py" --out "$W/meter-$1.npz" --stop "$W/meter.stop" > "$W/meter-$1.log" 2>&1 & MPID=$!; }
meter_stop() { touch "$W/meter.stop"; for _ in $(seq 50); do kill -0 $MPID 2>/dev/null || break; sleep 0.2; done; kill -9 $MPID 2>/dev/null; }
pack() { tar czf "$OUT/workload-part$PART.tgz" -C /tmp "wl-part$PART"; ls -la "$OUT" | tee -a "$LOG"; }
trap pack EXIT

log "machine"
nvidia-smi --query-gpu=index,uuid,name,power.draw,power.limit,enforced.power.limit,clocks.sm,temperature.gpu,persistence_mode,compute_mode --format=csv 2>&1 | tee -a "$LOG"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv 2>&1 | tee -a "$LOG"
python3 -c "import torch, pynvml; print('torch', torch.__version__, 'cuda', torch.version.cuda)" 2>&1 | tee -a "$LOG"
"$BIN" --version 2>&1 | tee -a "$LOG"

if [ "$PART" = 1 ]; then
  log "preflight"
  "$BIN" preflight --out "$W" > "$W/preflight.txt" 2>&1; rc=$?
  tail -8 "$W/preflight.txt" | tee -a "$LOG"; echo "preflight exit $rc" | tee -a "$LOG"
  [ $rc -eq 0 ] || { log "preflight refused the node: stopping"; exit 1; }
  meter_start run
  log "run campaigns/device-workload.toml (meter pid $MPID)"
  "$BIN" run campaigns/device-workload.toml --allow-programs --results "$W/runs" --no-collate > "$W/run.log" 2>&1; echo "run exit $?" | tee -a "$LOG"
  meter_stop
  tail -15 "$W/run.log" | tee -a "$LOG"
  cp /tmp/train-*.json "$W/" 2>/dev/null
  ls "$W"/runs/*/workload/ | tee -a "$LOG"
  for f in "$W"/runs/*/workload/*.stdout; do echo "--- $f"; head -4 "$f"; tail -3 "$f"; done 2>&1 | tee -a "$LOG"
  rm -rf "$W"/runs/*/report
else
  for shape in back_to_back idle_wait busy_wait; do
    case $shape in idle_wait) extra="--iteration-factor 1.74" ;; busy_wait) extra="--iteration-factor 1.49" ;; *) extra="" ;; esac
    meter_start "$shape"
    log "$shape: the loop, then observe --csv once its shaped loop runs"
    python3 "$HERE/train_loop.py" --shape $shape $extra --warmup-steps 8 --duration-s 42 --json "$W/train-$shape.json" > "$W/train-$shape.log" 2>&1 & TPID=$!
    for _ in $(seq 240); do grep -q "warmup" "$W/train-$shape.log" 2>/dev/null && break; sleep 0.25; done
    sleep 1
    "$BIN" observe --seconds 38 --interval-ms 2000 --csv "$W/observe-$shape.csv" > "$W/observe-$shape.log" 2>&1; echo "observe exit $?" | tee -a "$LOG"
    wait $TPID; echo "loop exit $?" | tee -a "$LOG"
    meter_stop
    tail -3 "$W/train-$shape.log" | tee -a "$LOG"
  done
fi
log "nvidia-smi after"
nvidia-smi --query-gpu=index,power.draw,clocks.sm,temperature.gpu --format=csv 2>&1 | tee -a "$LOG"
