#!/usr/bin/env bash
# The trust round's checks on a real GPU (issue 31): sanity and the
# preflight, then a run stopped mid-rung with SIGTERM and with SIGKILL
# (scripts/device/device-stopped-edges.sh). Read-only towards the GPU's
# settings. Logs under $OUT, one tarball.
#   usage: scripts/device/device-issue31.sh [.device/powerlab.xz]
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/powerlab-out}; mkdir -p "$OUT/issue31"
SRC=${1:-.device/powerlab.xz}
BIN=/tmp/powerlab
case "$SRC" in *.xz) xz -dc "$SRC" > "$BIN" ;; *) cp "$SRC" "$BIN" ;; esac
chmod +x "$BIN"
L=$OUT/issue31
{ nvidia-smi; nvidia-smi --query-gpu=index,uuid,name,power.limit,clocks.sm,persistence_mode,compute_mode --format=csv; } > "$L/nvidia-smi.txt" 2>&1
"$BIN" --version > "$L/version.txt" 2>&1
"$BIN" preflight > "$L/preflight.txt" 2>&1; echo "preflight exit $?" >> "$L/preflight.txt"
OUT=$L bash "$HERE/device-stopped-edges.sh" "$BIN" > "$L/stopped-edges.txt" 2>&1
echo "device-stopped-edges exit $?" >> "$L/stopped-edges.txt"
tar -C "$OUT" -czf "$OUT/issue31.tgz" issue31 && rm -rf "$L"
