#!/usr/bin/env bash
# Benchmark: simulated racks of the 4-hour 8-GPU campaign (campaigns/bench-4h.toml,
# --sim-step-us 1000, virtual time) under Open MPI's mpirun, one rank per node,
# then `powerlab collate <rack dir>` of each. Prints, per rack size, the raw
# rows, the wall time and the peak memory of the collation, twice: from
# scratch (every node collated first, `--force`) and with node results up to
# date (the rack step alone, as after a rack run where each rank collated its
# own node). Beside them, in the same run, DuckDB's read of the same raw
# files of every node (scripts/bench/duckdb_floor.py, the floor of any
# collation), and each collation's time as a multiple of it.
#
#   scripts/bench/bench-collate-rack.sh [SIZES...]      default: 4 8 16
#
# Env: BIN (a powerlab built with --features mpi; default: builds one),
# RACKS (where the racks are generated and kept between calls; default: a
# temporary directory removed at the end), JOBS (--jobs of the cold
# collation, default 1). Targets on the 2-core build machine: 16 nodes in
# under 3 minutes and 4 GB, and the peak of 16 nodes within 1.3x that of 4.
set -euo pipefail
cd "$(dirname "$0")/../.."
SIZES=("${@:-4 8 16}")
read -r -a SIZES <<< "${SIZES[*]}"
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet -p powerlab --features mpi
  BIN=target/release/powerlab
fi
BIN=$(realpath "$BIN")
KEEP=${RACKS:-}
RACKS=${RACKS:-$(mktemp -d)}
mkdir -p "$RACKS"
[ -n "$KEEP" ] || trap 'rm -rf "$RACKS"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
CAMPAIGN=$(realpath campaigns/bench-4h.toml)

python3 -c 'import duckdb' 2>/dev/null || python3 -m pip install --quiet "duckdb==2.0.1"
FLOOR_S=
measure() { # label, command...
  local label=$1; shift
  local log; log=$(mktemp)
  /usr/bin/time -v "$@" > /dev/null 2> "$log" || { echo "$label: failed"; tail -5 "$log"; rm -f "$log"; return 1; }
  local secs rss_kb
  secs=$(grep "Elapsed (wall clock)" "$log" | awk '{print $NF}' | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
  rss_kb=$(grep "Maximum resident set size" "$log" | awk '{print $NF}')
  printf '  %-40s %8.1f s  peak %6d MiB  %5.1fx DuckDB\n' "$label" "$secs" "$((rss_kb / 1024))" \
    "$(python3 -c "print($secs / $FLOOR_S)")"
  rm -f "$log"
}

for n in "${SIZES[@]}"; do
  dir="$RACKS/rack$n"
  if ! ls -d "$dir"/bench-4h-* >/dev/null 2>&1; then
    echo "generating a rack of $n nodes x 8 GPUs x 4 h (simulated, virtual time) under mpirun..."
    rm -rf "$dir"; mkdir -p "$dir"
    start=$(date +%s)
    mpirun --oversubscribe -np "$n" "$BIN" run "$CAMPAIGN" --backend sim --sim-gpus 8 \
      --sim-step-us 1000 --results "$dir" --no-collate --json > "$dir/events.log" 2>&1
    echo "  generated in $(( $(date +%s) - start )) s"
  fi
  rack=$(ls -d "$dir"/bench-4h-* | head -1)
  rows=$(cat "$rack"/nodes/*/raw/*.csv | wc -l)
  FLOOR_S=$(python3 scripts/bench/duckdb_floor.py "$rack" --repeat 3 | python3 -c 'import json, sys; print(json.load(sys.stdin)["seconds"])')
  echo "rack of $n nodes: $rows raw lines; DuckDB reads them in $FLOOR_S s (same run, $(nproc) cores)"
  measure "collate --force (every node, then rack)" "$BIN" collate "$rack" --force --jobs "${JOBS:-1}"
  measure "collate (node results up to date)" "$BIN" collate "$rack"
done
