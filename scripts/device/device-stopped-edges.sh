#!/usr/bin/env bash
# A run stopped mid-rung keeps that rung's edges (issue 31): runs
# campaigns/device-stopped-edges.toml (one 20 s duty rung at 100 ms) twice,
# sends SIGTERM, then SIGKILL, about 8 s into the duty rung, and checks that
# edges.csv holds the rung's edges achieved before the signal (once each,
# the last within 0.3 s of a SIGTERM and 1.2 s of a SIGKILL) and that the
# collated run folds the whole cycles before the signal on them. Only runs powerlab and reads nvidia-smi: clocks,
# power limits, persistence and compute mode are left as they are.
#   usage: scripts/device/device-stopped-edges.sh [path/to/powerlab]
#   POWERLAB_ARGS="--backend sim --sim-gpus 2 --sim-pace realtime" tries it
#   on the simulated node. Logs go under $OUT/stopped-edges/; exit 0 = passed.
set -uo pipefail
BIN=$(realpath "${1:-target/release/powerlab}")
[ -x "$BIN" ] || { echo "device-stopped-edges: no binary at $BIN" >&2; exit 2; }
CAMPAIGN=$(realpath "$(dirname "$0")/../../campaigns/device-stopped-edges.toml")
LOG=${OUT:-/tmp/powerlab-out}/stopped-edges; mkdir -p "$LOG"
R=$(mktemp -d /tmp/stopped-edges.XXXXXX)
read -r -a EXTRA <<< "${POWERLAB_ARGS:-}"
say() { echo "=== $*" | tee -a "$LOG/summary.txt"; }
failed=0
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=index,name,power.draw,clocks.sm --format=csv >> "$LOG/summary.txt"

for sig in TERM KILL; do
  say "SIG$sig about 8 s into the duty rung"
  "$BIN" run "$CAMPAIGN" "${EXTRA[@]}" --json --results "$R/$sig" > "$LOG/$sig.jsonl" 2> "$LOG/$sig.log" &
  pid=$!
  # Wait for the duty rung's start in the event log (at most 120 s).
  for _ in $(seq 1200); do
    ev=$(ls "$R/$sig"/*/events.jsonl 2> /dev/null | head -1)
    [ -n "$ev" ] && grep -q '"event":"rung_started".*"kind":"duty"' "$ev" && break
    kill -0 $pid 2> /dev/null || break
    sleep 0.1
  done
  if [ -z "${ev:-}" ]; then
    say "FAIL: the run did not reach its duty rung (see $LOG/$sig.log)"; failed=1; kill -KILL $pid 2> /dev/null; continue
  fi
  sleep 8
  sent=$(date +%s%N); kill -$sig $pid; wait $pid; rc=$?
  echo "exit $rc, $(( ($(date +%s%N) - sent) / 1000000 )) ms after SIG$sig" | tee -a "$LOG/summary.txt"
  dir=$(dirname "$ev")
  "$BIN" collate "$dir" > "$LOG/$sig-collate.log" 2>&1; echo "collate exit $?" >> "$LOG/$sig-collate.log"
  cp -r "$dir" "$LOG/$sig-run"
  python3 - "$dir" "$sent" "$sig" << 'PY' 2>&1 | tee -a "$LOG/summary.txt"
import csv, json, sys
d, sent, sig = sys.argv[1], int(sys.argv[2]), sys.argv[3]
started = next(e for e in map(json.loads, open(f"{d}/events.jsonl"))
               if e["event"] == "rung_started" and e["rung"]["kind"] == "duty")
rung, lag_max = str(started["rung"]["id"]), (0.3e9 if sig == "TERM" else 1.2e9)
rows = [r for r in csv.DictReader(open(f"{d}/edges.csv")) if r["rung_id"] == rung]
bad = []
for gpu in started["gpus"]:
    mine = [r for r in rows if r["gpu"] == gpu]
    last = max((int(r["achieved_ns"]) for r in mine), default=0)
    lag = (sent - last) / 1e9
    print(f"{gpu}: {len(mine)} edges of rung {rung}, the last {lag:.3f} s before the signal")
    if len({r["index"] for r in mine}) != len(mine): bad.append(f"{gpu}: an edge has two rows")
    if len(mine) < 100: bad.append(f"{gpu}: {len(mine)} edges, fewer than 100 for ~8 s at 100 ms")
    if not -0.2 <= lag <= lag_max / 1e9: bad.append(f"{gpu}: last edge {lag:.3f} s before the signal")
try:
    s = next(r for r in json.load(open(f"{d}/report/summary.json"))["rungs"] if str(r["rung_id"]) == rung)
    verdict, cut = s.get("verdict") or "", s.get("incomplete") or ""
    print(f"collated: spread_w {s.get('spread_w')}, verdict: {verdict or '-'}; {cut}")
    # Folded on its edges: cut to the whole cycles before the signal, and no
    # verdict that the edge log is incomplete (a phase-locked one may stand:
    # ~7 s of a detuned 100 ms period walk few phases on an exact grid).
    if "edge log is incomplete" in verdict: bad.append("the edge log could not fold the cycles")
    if "whole cycles" not in cut: bad.append("the rung was not cut to the whole cycles before the signal")
except (OSError, StopIteration, KeyError) as e:
    bad.append(f"no collated summary of the rung: {e!r}")
print("PASS" if not bad else "FAIL: " + "; ".join(bad))
sys.exit(1 if bad else 0)
PY
  [ "${PIPESTATUS[0]}" = 0 ] || failed=1
done
rm -rf "$R"
say "$([ $failed = 0 ] && echo PASSED || echo FAILED)"
exit $failed
