#!/usr/bin/env bash
# Behaviour check for a restructuring of predict: runs `powerlab predict`
# with two binaries on the same run for every shipped schedule
# (`schedules/*.toml`, `--no-grid-playback --no-lifecycle`: the default run has no lifecycle edges) and compares every output file
# byte for byte. What may differ, and nothing else: each binary's version
# string (its git revision), masked before comparing.
#
#   scripts/bench/same-predict.sh OLD_BINARY NEW_BINARY [RUN_DIR]
#
# RUN_DIR defaults to results/h200x1-2026-12-01/edges; each binary works on
# its own `cp -a` copy of it. Each schedule is also predicted with the
# lifecycle study on LIFECYCLE_RUN (default: the committed lifecycle run).
set -euo pipefail
OLD=$(realpath "$1"); NEW=$(realpath "$2")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUN=${3:-$ROOT/results/h200x1-2026-12-01/edges}
LIFECYCLE_RUN=${LIFECYCLE_RUN:-$ROOT/results/h100x1-2026-12-06-lifecycle/run}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
n=0; same=0
# One prediction with both binaries: $1 a name, $2 the run, the rest
# predict's flags.
both() {
  local name=$1 run=$2; shift 2
  for side in old new; do
    bin=$OLD; [ "$side" = new ] && bin=$NEW
    cp -a "$run" "$W/run-$side-$name"
    "$bin" predict "$W/run-$side-$name" "$@" \
      --out "$W/out-$side-$name" > "$W/$side-$name.stdout" 2>&1 \
      || { echo "$side predict failed on $name:"; tail "$W/$side-$name.stdout"; exit 1; }
    ver=$("$bin" --version | grep -o 'git [^,)]*' | cut -d' ' -f2)
    { grep -rlF "$ver" "$W/out-$side-$name" 2>/dev/null || true; } | while IFS= read -r f; do
      sed -i "s/$(printf '%s' "$ver" | sed 's/[.[\*^$/]/\\&/g')/REV/g" "$f"
    done
  done
  n=$((n + 1))
  if diff -r "$W/out-old-$name" "$W/out-new-$name" > "$W/diff-$name"; then
    same=$((same + 1)); echo "identical: $name ($(find "$W/out-new-$name" -type f | wc -l) files)"
  else
    echo "DIFFERENT: $name"; head -20 "$W/diff-$name"
  fi
}
for sched in "$ROOT"/schedules/*.toml; do
  name=$(basename "$sched" .toml)
  both "$name" "$RUN" --schedule "$sched" --no-grid-playback --no-lifecycle
  # The lifecycle study (its Welch spectrum, start and stop edges) on the
  # committed run that measured them.
  if [ -d "$LIFECYCLE_RUN" ]; then
    both "$name-lifecycle" "$LIFECYCLE_RUN" --schedule "$sched" --no-grid-playback
  fi
done
echo "$same of $n predictions identical"
[ "$same" -eq "$n" ]
