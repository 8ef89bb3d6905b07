#!/usr/bin/env bash
# The rack on a GPU machine without MPI (issue 20): unpacks the Open MPI that
# scripts/device/carry-openmpi.sh packed, then runs campaigns/device-rack.toml under
# mpirun twice: 2 ranks x 1 GPU (each rank takes its share of the host's
# GPUs) and 1 rank x 2 GPUs, each collated into a rack report. Logs and the
# rack run directories go under $OUT.
#   usage: scripts/device/device-rack.sh [.device/powerlab-mpi.gz] [.device/openmpi.tar.gz]
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/powerlab-out}; mkdir -p "$OUT"
BIN=/tmp/powerlab-mpi
gunzip -c "${1:-.device/powerlab-mpi.gz}" > "$BIN" && chmod +x "$BIN"
# shellcheck disable=SC1091
source scripts/device/with-openmpi.sh "${2:-.device/openmpi.tar.gz}"
say() { echo "=== $*" | tee -a "$OUT/summary.txt"; }

say "sanity"
nvidia-smi --query-gpu=index,uuid,name,power.draw,enforced.power.limit --format=csv | tee -a "$OUT/summary.txt"
mpirun --version | head -1 | tee -a "$OUT/summary.txt"
ldd "$BIN" | grep -E "mpi|not found" | tee -a "$OUT/summary.txt"
"$BIN" --version | tee -a "$OUT/summary.txt"
"$BIN" preflight --out "$OUT" --stem health-before 2>&1 | head -2 | tee -a "$OUT/summary.txt"

R=/tmp/powerlab-rack; rm -rf "$R"; mkdir -p "$R"
# --bind-to none: Open MPI would pin each rank to one core, starving the
# engine threads that place the edges.
MPI=(mpirun --bind-to none --mca odls_base_sigkill_timeout 10)
for layout in ${LAYOUTS:-"2x1" "1x2"}; do
  ranks=${layout%x*}
  say "rack $layout: $ranks rank(s) on this host"
  start=$(date +%s)
  timeout 480 "${MPI[@]}" -np "$ranks" "$BIN" run campaigns/device-rack.toml --results "$R/$layout" --json \
    > "$OUT/rack-$layout.jsonl" 2> "$OUT/rack-$layout.log"
  echo "exit $? after $(( $(date +%s) - start )) s" | tee -a "$OUT/summary.txt"
  grep -E "^\[rank|error|FAIL" "$OUT/rack-$layout.log" | head -20 | tee -a "$OUT/summary.txt"
  rack=$(ls -d "$R/$layout"/*-rack* 2>/dev/null | head -1)
  if [ -n "$rack" ]; then
    head -12 "$rack/report/report.md" | tee -a "$OUT/summary.txt"
    tar -C "$(dirname "$rack")" -czf "$OUT/rack-$layout.tar.gz" "$(basename "$rack")"
  fi
done
"$BIN" preflight --out "$OUT" --stem health-after 2>&1 | head -2 | tee -a "$OUT/summary.txt"
