#!/usr/bin/env bash
# Issue 59 on one lent GPU: campaigns/device-contain.toml twice, its job
# starting a `setsid env -i` child that loads the GPU too: with the
# child given back the job's CUDA_VISIBLE_DEVICES (CONTAIN_MODE=keep: it
# runs to the stop, where the holder kills it), and without
# (CONTAIN_MODE=bare: it sees every GPU, and the phase stops when it loads
# CUDA). nvidia-smi is read every 500 ms beside it; after each run the
# GPU's compute processes and power, and any process of the job left.
# Everything lands in $OUT/contain.tgz. Read-only towards the GPU's settings.
#   usage: scripts/device/device-contain.sh [.device/powerlab.xz] [campaign]
set -uo pipefail
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/powerlab-out}; mkdir -p "$OUT"
SRC=${1:-.device/powerlab.xz}
CAMPAIGN=${2:-campaigns/device-contain.toml}
BIN=/tmp/powerlab
case "$SRC" in *.xz) xz -dc "$SRC" > "$BIN" ;; *) cp "$SRC" "$BIN" ;; esac
chmod +x "$BIN"
W=/tmp/contain; rm -rf "$W"; mkdir -p "$W"
LOG=$W/log.txt
log() { echo "=== $(date +%T) $*" | tee -a "$LOG"; }
pack() { [ -n "${SMI:-}" ] && kill "$SMI" 2>/dev/null; tar czf "$OUT/contain.tgz" -C /tmp contain; cp "$LOG" "$OUT/log.txt"; ls -la "$OUT"; }
trap pack EXIT

log "machine"
nvidia-smi --query-gpu=index,uuid,name,power.draw,power.limit,clocks.sm,temperature.gpu --format=csv 2>&1 | tee -a "$LOG"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv 2>&1 | tee -a "$LOG"
"$BIN" --version 2>&1 | tee -a "$LOG"
stat -fc %T /sys/fs/cgroup 2>&1 | tee -a "$LOG"; cat /proc/self/cgroup | tee -a "$LOG"; id | tee -a "$LOG"
nvidia-smi --query-gpu=timestamp,power.draw,utilization.gpu --format=csv,noheader -lms 500 > "$W/smi-power.csv" 2>&1 & SMI=$!

for mode in keep bare; do
  log "run ($mode): the job's setsid env -i child $( [ $mode = keep ] && echo 'keeps CUDA_VISIBLE_DEVICES' || echo 'has no CUDA_VISIBLE_DEVICES')"
  ( while :; do echo "$(date +%T.%N | cut -c1-12) $(nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv,noheader | tr '\n' ';')"; sleep 1; done ) > "$W/apps-$mode.log" 2>&1 & APPS=$!
  CONTAIN_MODE=$mode timeout 150 "$BIN" run "$CAMPAIGN" --allow-programs --results "$W/runs-$mode" > "$W/run-$mode.log" 2>&1; echo "run ($mode) exit $?" | tee -a "$LOG"
  sleep 4
  kill "$APPS" 2>/dev/null
  tail -6 "$W/run-$mode.log" | tee -a "$LOG"
  log "after ($mode): compute apps, power, processes of the job"
  nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv 2>&1 | tee -a "$LOG"
  nvidia-smi --query-gpu=power.draw,utilization.gpu --format=csv,noheader 2>&1 | tee -a "$LOG"
  echo "processes left with contain_job in their command line: $(pgrep -fa contain_job.py | grep -v pgrep || echo none)" | tee -a "$LOG"
  for f in "$W"/runs-$mode/*/workload/job.json "$W"/runs-$mode/*/workload/job.stdout; do echo "--- $f"; cat "$f"; done 2>&1 | tee -a "$LOG"
  head -3 "$W"/runs-$mode/*/report/report.md 2>&1 | tee -a "$LOG"
done
sleep 3
log "power after both runs (last 6 readings)"
tail -6 "$W/smi-power.csv" | tee -a "$LOG"
