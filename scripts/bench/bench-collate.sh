#!/usr/bin/env bash
# Benchmark: generate the raw samples of a 4-hour 8-GPU campaign on the
# simulated node (virtual time), then collate them. Prints rows, rows/s,
# seconds and peak memory of the collation. Target: < 10 s and < 2 GB on the
# 2-core build machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --quiet
BIN=target/release/powerlab
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
echo "generating 4 h x 8 GPUs on the simulated node (virtual time)..."
gen_start=$(date +%s%N)
"$BIN" run campaigns/bench-4h.toml --backend sim --sim-gpus 8 --sim-step-us 1000 --results "$OUT" --no-collate --json > "$OUT/events.log"
gen_end=$(date +%s%N)
RUN=$(ls -d "$OUT"/bench-4h-*)
rows=$(cat "$RUN"/raw/*.csv | wc -l)
bytes=$(du -sb "$RUN/raw" | cut -f1)
echo "generated $rows raw lines ($((bytes / 1000000)) MB) in $(( (gen_end - gen_start) / 1000000 )) ms"
POWERLAB_LOG=info /usr/bin/time -v "$BIN" collate "$RUN" > "$OUT/collate.log" 2> "$OUT/time.log"
secs=$(grep "Elapsed (wall clock)" "$OUT/time.log" | awk '{print $NF}' | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
rss_kb=$(grep "Maximum resident set size" "$OUT/time.log" | awk '{print $NF}')
echo "collate: $rows rows in ${secs} s = $(python3 -c "print(round($rows / $secs))") rows/s, peak memory $((rss_kb / 1024)) MiB"
grep "collate: " "$OUT/time.log" | sed "s/.*collate: /  step: /"
head -1 "$OUT/collate.log"
