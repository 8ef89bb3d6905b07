#!/usr/bin/env bash
# Issue 47 on one lent GPU: the lifecycle edges measured. Read-only
# towards the GPU's settings.
#   sanity (nvidia-smi, torch), preflight, then campaigns/device-lifecycle.toml
#   (the training loop started cold and stopped by SIGKILL mid-compute,
#   10 repeats; started cold and exiting on its own, 10 repeats; a short
#   duty phase for a held context's rise and fall), with
#   scripts/device/independent_meter.py draining every buffered sample
#   beside it; the run collated there too.
# Everything lands in $OUT/edges.tgz (raw files, report, meter, logs).
#   usage: scripts/device/device-lifecycle.sh [.device/powerlab.xz]
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/powerlab-out}; mkdir -p "$OUT"
SRC=${1:-.device/powerlab.xz}
BIN=/tmp/powerlab
case "$SRC" in *.xz) xz -dc "$SRC" > "$BIN" ;; *) cp "$SRC" "$BIN" ;; esac
chmod +x "$BIN"
W=/tmp/edges; rm -rf "$W"; mkdir -p "$W"
LOG=$W/log.txt
log() { echo "=== $(date +%T) $*" | tee -a "$LOG"; }
pack() { tar czf "$OUT/edges.tgz" -C /tmp edges; ls -la "$OUT" | tee -a "$LOG"; }
trap pack EXIT

log "machine"
nvidia-smi --query-gpu=index,uuid,name,power.draw,power.limit,enforced.power.limit,clocks.sm,temperature.gpu,persistence_mode,compute_mode --format=csv 2>&1 | tee -a "$LOG"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv 2>&1 | tee -a "$LOG"
python3 -c "import torch, pynvml; print('torch', torch.__version__, 'cuda', torch.version.cuda)" 2>&1 | tee -a "$LOG"
"$BIN" --version 2>&1 | tee -a "$LOG"

log "preflight"
"$BIN" preflight --out "$W" > "$W/preflight.txt" 2>&1; rc=$?
tail -8 "$W/preflight.txt" | tee -a "$LOG"; echo "preflight exit $rc" | tee -a "$LOG"
[ $rc -eq 0 ] || { log "preflight refused the node: stopping"; exit 1; }

rm -f "$W/meter.stop"
python3 "$HERE/independent_meter.py" --out "$W/meter.npz" --stop "$W/meter.stop" > "$W/meter.log" 2>&1 & MPID=$!
log "run campaigns/device-lifecycle.toml (meter pid $MPID)"
"$BIN" run campaigns/device-lifecycle.toml --allow-programs --results "$W/runs" > "$W/run.log" 2>&1; echo "run exit $?" | tee -a "$LOG"
touch "$W/meter.stop"
for _ in $(seq 50); do kill -0 $MPID 2>/dev/null || break; sleep 0.2; done
kill -9 $MPID 2>/dev/null
tail -25 "$W/run.log" | tee -a "$LOG"
for f in "$W"/runs/*/report/lifecycle_edges.csv; do echo "--- $f"; cat "$f"; done 2>&1 | tee -a "$LOG"
for r in "$W"/runs/*/; do python3 "$HERE/independent_edges.py" "$W/meter.npz" "$r" --json "$W/independent_edges.json" 2>&1 | tee -a "$LOG"; done
log "nvidia-smi after"
nvidia-smi --query-gpu=index,power.draw,clocks.sm,temperature.gpu --format=csv 2>&1 | tee -a "$LOG"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv 2>&1 | tee -a "$LOG"
