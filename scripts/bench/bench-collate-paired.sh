#!/usr/bin/env bash
# Paired collate benchmark: two powerlab binaries (before, after) collate
# the same 4-hour 8-GPU simulated run (campaigns/bench-4h.toml, about 17 M
# raw rows), in turn A B A B …, each on its own copy; prints every pair's
# wall time and the ratio after/before, then the median ratio.
#
#   scripts/bench/bench-collate-paired.sh BEFORE AFTER [PAIRS=5]
#
# The run is generated once with AFTER (virtual time). Timings are whole
# processes (/usr/bin/time -v): wall seconds and peak memory. A ratio to
# the commit before cannot see a regression that commit already had
# (issue 56: 255 s passed as "0.982"), so every pair also prints the
# absolute time against the target (within 4x DuckDB's read of the same
# files, measured here in the same run) and the peak memory against 1.5 GiB.
set -euo pipefail
A=$(realpath "$1"); B=$(realpath "$2"); PAIRS=${3:-5}
cd "$(dirname "$0")/../.."
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
echo "generating 4 h x 8 GPUs on the simulated node (virtual time)..."
"$B" run campaigns/bench-4h.toml --backend sim --sim-gpus 8 --sim-step-us 1000 \
  --results "$W/gen" --no-collate --json > "$W/gen.log"
RUN=$(ls -d "$W"/gen/bench-4h-*)
echo "raw lines: $(cat "$RUN"/raw/*.csv | wc -l)"
python3 -c 'import duckdb' 2>/dev/null || python3 -m pip install --quiet "duckdb==2.0.1"
FLOOR=$(python3 scripts/bench/duckdb_floor.py "$RUN" --repeat 3 | python3 -c 'import json, sys; print(json.load(sys.stdin)["seconds"])')
echo "DuckDB's read of the same files (the floor): $FLOOR s; target: collation <= $(python3 -c "print(round(4 * $FLOOR, 2))") s (4x), peak memory < 1536 MiB"
one() { # binary label
  rm -rf "$W/run-$2"; cp -a "$RUN" "$W/run-$2"
  /usr/bin/time -v "$1" collate "$W/run-$2" > /dev/null 2> "$W/time-$2"
  local wall rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$W/time-$2" | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$W/time-$2")
  echo "$wall $rss"
}
one "$A" warm > /dev/null
ratios=()
for i in $(seq 1 "$PAIRS"); do
  read -r wa ra < <(one "$A" before)
  read -r wb rb < <(one "$B" after)
  r=$(python3 -c "print(f'{$wb / $wa:.3f}')")
  ratios+=("$r")
  echo "pair $i: before ${wa} s ($((ra / 1024)) MiB), after ${wb} s ($((rb / 1024)) MiB), ratio $r; after = $(python3 -c "print(round($wb / $FLOOR, 2))")x the floor"
done
echo "median ratio after/before: $(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')"
