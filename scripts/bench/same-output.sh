#!/usr/bin/env bash
# Behaviour check for a restructuring: runs the simulated demo (fixed seed and
# virtual-time start) with two powerlab binaries, and collates one run
# directory with both; then compares every file byte for byte.
#
#   scripts/bench/same-output.sh OLD_BINARY NEW_BINARY [RUN_DIR_TO_RECOLLATE]
#
# Both binaries run from the same path with the same arguments, so the
# manifests' argv match. What is allowed to differ, and nothing else:
# - the build's git revision (manifest `tool.git_rev`, the report's tool line);
# - the samplers' measured CPU time (`read_time_ns` in events.jsonl), and
#   therefore events.jsonl's checksum in the manifest;
# - lock files (they hold the writer's pid).
set -euo pipefail
OLD=$(realpath "$1"); NEW=$(realpath "$2"); RECOLLATE=${3:-}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
mkdir -p "$W/bin"
normalise() { # dir
  find "$1" -name '.*.lock' -delete
  find "$1" -type f \( -name 'manifest.json' -o -name 'report.md' -o -name 'events.jsonl' -o -name '*.html' \) -print0 |
    xargs -0 sed -i -E 's/"git_rev": "[0-9a-f]+"/"git_rev": "REV"/; s/powerlab ([0-9.]+) \([0-9a-f]+\)/powerlab \1 (REV)/; s/"read_time_ns":[0-9]+/"read_time_ns":T/g'
  find "$1" -name manifest.json -print0 | xargs -0 python3 -c '
import json, sys
for p in sys.argv[1:]:
    m = json.load(open(p))
    for s in m.get("checksums", []):
        if s.get("file") == "events.jsonl":
            s["crc32"] = "-"; s["bytes"] = 0
    open(p, "w").write(json.dumps(m, indent=2, sort_keys=True) + "\n")'
}
for side in old new; do
  bin=$OLD; [ "$side" = new ] && bin=$NEW
  cp "$bin" "$W/bin/powerlab"
  (cd "$W" && ./bin/powerlab run "$ROOT/campaigns/demo.toml" --backend sim \
      --sim-epoch-ns 1700000000000000000 --results runs > "$W/$side.stdout" 2>&1) || echo "$side demo exit $?" >> "$W/$side.stdout"
  mv "$W/runs" "$W/demo-$side"
  if [ -n "$RECOLLATE" ]; then
    rm -rf "$W/recollate"; cp -r "$RECOLLATE" "$W/recollate"
    rm -rf "$W/recollate/report"
    (cd "$W" && ./bin/powerlab collate recollate > "$W/$side.collate" 2>&1) || echo "collate exit $?" >> "$W/$side.collate"
    mv "$W/recollate/report" "$W/report-$side"
  fi
done
normalise "$W/demo-old"; normalise "$W/demo-new"
status=0
diff -r "$W/demo-old" "$W/demo-new" && echo "demo run directory: identical" || status=1
diff "$W/old.stdout" "$W/new.stdout" && echo "demo stdout: identical" || status=1
if [ -n "$RECOLLATE" ]; then
  diff -r "$W/report-old" "$W/report-new" && echo "collated report of $RECOLLATE: identical ($(find "$W/report-new" -type f | wc -l) files)" || status=1
  diff "$W/old.collate" "$W/new.collate" && echo "collate stdout: identical" || status=1
fi
exit $status
