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
# its own `cp -a` copy of it.
set -euo pipefail
OLD=$(realpath "$1"); NEW=$(realpath "$2")
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
RUN=${3:-$ROOT/results/h200x1-2026-12-01/edges}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
n=0; same=0
for sched in "$ROOT"/schedules/*.toml; do
  name=$(basename "$sched" .toml)
  for side in old new; do
    bin=$OLD; [ "$side" = new ] && bin=$NEW
    cp -a "$RUN" "$W/run-$side-$name"
    "$bin" predict "$W/run-$side-$name" --schedule "$sched" --no-grid-playback --no-lifecycle \
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
done
echo "$same of $n predictions identical"
[ "$same" -eq "$n" ]
