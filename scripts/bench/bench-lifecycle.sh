#!/usr/bin/env bash
# Benchmark (issue 47): one day of a 1,000,000-GPU job at 10 ms, a
# checkpoint every 30 minutes and one crash (schedules/day-1m.toml),
# streamed by `powerlab predict`: the figures in one pass, the files
# (COMTRADE, CSV, events) in a second, every scenario a channel. Prints
# the wall time, the peak memory and the command's own split. Target:
# < 30 s and < 1 GiB on the 2-core build machine.
# Usage: bench-lifecycle.sh [powerlab binary] [run dir with measured edges]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-}
if [ -z "$BIN" ]; then
  cargo build --release --quiet -p powerlab
  BIN=target/release/powerlab
fi
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
RUN=${2:-}
if [ -z "$RUN" ]; then
  # The simulated node's measured edges (kill, exit, cold start, duty),
  # and two mitigations at the iteration's period: three scenarios, three
  # channels.
  cp campaigns/edges-demo.toml "$OUT/campaign.toml"
  cat >> "$OUT/campaign.toml" <<'TOML'

[[phase]]
kind = "duty"
name = "mitigation"
period_ms = 2000
duty = 0.5
duration_s = 12
smoothing = [{}, { floor_pct = 60 }, { ramp_up_w_per_s = 60000, ramp_down_w_per_s = 60000 }]
TOML
  "$BIN" run "$OUT/campaign.toml" --backend sim --results "$OUT/r" > "$OUT/run.log" 2>&1 || { tail -20 "$OUT/run.log"; exit 1; }
  RUN=$(find "$OUT/r" -mindepth 1 -maxdepth 1 -type d | head -1)
fi
/usr/bin/time -v "$BIN" predict "$RUN" --square-waves --schedule schedules/day-1m.toml --out "$OUT/p" > "$OUT/stdout.log" 2> "$OUT/time.log" || { cat "$OUT/time.log"; exit 1; }
secs=$(grep "Elapsed (wall clock)" "$OUT/time.log" | awk '{print $NF}' | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
rss_kb=$(grep "Maximum resident set size" "$OUT/time.log" | awk '{print $NF}')
rows=$(($(wc -l < "$OUT/p/study/facility_mw.csv") - 1))
cols=$(head -1 "$OUT/p/study/facility_mw.csv" | tr ',' '\n' | wc -l)
dat=$(stat -c %s "$OUT/p/study/facility_mw.dat")
echo "lifecycle study: 1000000 GPUs x 86400 s at 10 ms: ${rows} rows x $((cols - 1)) scenarios in ${secs} s, peak memory $((rss_kb / 1024)) MiB, facility_mw.dat $((dat / 1000000)) MB (target < 30 s, < 1024 MiB)"
grep "^times:" "$OUT/time.log" | sed 's/^/  /' || true
