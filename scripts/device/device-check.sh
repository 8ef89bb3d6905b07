#!/usr/bin/env bash
# Runs on a fresh H200 node with a prebuilt powerlab (no Rust there):
# sanity, virus modes vs a PyTorch cuBLAS reference, the duty sweep in phase
# and staggered, and collate. Logs and results go under $OUT.
#   usage: scripts/device/device-check.sh [path/to/powerlab(.gz|.xz)]
#   (scripts/device-check.sh in an unpacked release tarball)
set -uo pipefail
# The Python helpers lie beside this script, in the repository and in the tarball.
HERE=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/powerlab-out}; mkdir -p "$OUT"
BIN=/tmp/powerlab
# The binary as built (target/release/powerlab), or compressed (.gz or .xz:
# xz keeps it well under the device machines' 64 MiB transfer).
if [ -n "${1:-}" ]; then
  SRC=$1
  [ -f "$SRC" ] || { echo "device-check: $SRC does not exist" >&2; exit 2; }
else
  SRC=$(ls -t .device/powerlab.xz .device/powerlab.gz target/release/powerlab 2>/dev/null | head -1)
  [ -n "$SRC" ] || { echo "device-check: no binary: build target/release/powerlab or put .device/powerlab.xz" >&2; exit 2; }
fi
case "$SRC" in
  *.gz) gunzip -c "$SRC" > "$BIN" ;;
  *.xz) xz -dc "$SRC" > "$BIN" ;;
  *) cp "$SRC" "$BIN" ;;
esac
chmod +x "$BIN"
R=/tmp/powerlab-results; rm -rf "$R"; mkdir -p "$R"
say() { echo "=== $*" | tee -a "$OUT/summary.txt"; }
STEPS=${STEPS:-"preflight virus torch sweep sigint cpu nccl sensor sustained"}
want() { case " $STEPS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

say "sanity"
nvidia-smi --query-gpu=index,uuid,name,power.draw,enforced.power.limit,clocks.sm --format=csv | tee -a "$OUT/summary.txt"
nvidia-smi -q | grep -A3 "^    Fabric" | head -8 | tee -a "$OUT/summary.txt"
"$BIN" --version | tee -a "$OUT/summary.txt"
"$BIN" observe --seconds 2 --interval-ms 1000 2>&1 | tee -a "$OUT/summary.txt"

if want preflight; then
say "preflight (idle)"
start=$(date +%s%N); "$BIN" preflight --out "$OUT" 2>&1 | tee -a "$OUT/summary.txt"; rc=${PIPESTATUS[0]}
echo "preflight exit $rc, $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$OUT/summary.txt"
ALLOW=""; [ "$rc" = 0 ] || ALLOW="--allow-unhealthy"
say "preflight with CUDA_VISIBLE_DEVICES=\"\""
CUDA_VISIBLE_DEVICES="" "$BIN" preflight --out "$OUT" --stem health-empty-mask 2>&1 | head -3 | tee -a "$OUT/summary.txt"
fi
ALLOW=${ALLOW:-}

if want virus; then
say "virus modes (20 s sustained each, all GPUs)"
# Each entry is MODE or MODE:DTYPE (gemm:bf16 = the cuBLAS bf16 GEMM stream).
for entry in ${MODES:-gemm mixed hbm}; do
  mode=${entry%%:*}; dtype=fp16; [ "$entry" != "$mode" ] && dtype=${entry#*:}
  mode_tag="$mode"; [ "$dtype" != fp16 ] && mode_tag="$mode-$dtype"
  "$BIN" run campaigns/device-virus.toml $ALLOW --virus "$mode" --gemm-dtype "$dtype" --results "$R/virus-$mode_tag" > "$OUT/virus-$mode_tag.log" 2>&1
  echo "exit $?" >> "$OUT/virus-$mode_tag.log"
  d=$(ls -d "$R/virus-$mode_tag"/*/ | head -1)
  echo "mode $mode, GEMM $dtype:" | tee -a "$OUT/summary.txt"
  python3 "$HERE/gpu_means.py" "$d" sustained | tee -a "$OUT/summary.txt"
  tail -3 "$OUT/virus-$mode_tag.log" | tee -a "$OUT/summary.txt"
done
fi

if want torch; then
say "PyTorch FP16 8192^3 GEMM reference (30 s, all GPUs; power read from 8 s on)"
python3 "$HERE/torch_gemm_ref.py" 30 2>&1 | tee -a "$OUT/summary.txt" &
TORCH=$!
sleep 8
"$BIN" observe --seconds 18 --interval-ms 6000 --csv "$OUT/torch-ref.csv" > "$OUT/torch-observe.log" 2>&1
wait $TORCH
python3 "$HERE/observe_means.py" "$OUT/torch-ref.csv" 1 | tee -a "$OUT/summary.txt"
fi

if want sweep; then
say "duty sweep in phase and staggered"
"$BIN" run campaigns/device-h200.toml $ALLOW --results "$R/sweep" > "$OUT/sweep.log" 2>&1
echo "exit $?" | tee -a "$OUT/summary.txt"
tail -16 "$OUT/sweep.log" | tee -a "$OUT/summary.txt"
d=$(ls -d "$R/sweep"/*/ | head -1)
python3 "$HERE/gpu_means.py" "$d" sustained | tee -a "$OUT/summary.txt"
grep '"topic":"samplers"' "$d/events.jsonl" | tee -a "$OUT/summary.txt"

ls "$d" | tee -a "$OUT/summary.txt"
if [ -f "$d/health-under-load.json" ]; then
  head -1 "$d/health-report.md" | tee -a "$OUT/summary.txt"
  head -1 "$d/health-under-load-report.md" | tee -a "$OUT/summary.txt"
  "$BIN" health-diff "$d/health.json" "$d/health-under-load.json" | tee "$OUT/health-diff.txt" | head -30 | tee -a "$OUT/summary.txt"
fi

fi
if want sigint; then
say "SIGINT during a duty rung"
"$BIN" run campaigns/device-sigint.toml $ALLOW --results "$R/sigint" > "$OUT/sigint.log" 2>&1 &
RUNPID=$!
# An independent observer keeps reading power after the run has exited.
"$BIN" observe --seconds 22 --interval-ms 10000 --csv "$OUT/sigint-observe.csv" > /dev/null 2>&1 &
OBSPID=$!
sleep 12
kill -INT $RUNPID; sent=$(date +%s%N)
wait $RUNPID; rc=$?; exited=$(date +%s%N)
echo "exit $rc (130 = interrupted), $(( (exited - sent) / 1000000 )) ms after SIGINT" | tee -a "$OUT/summary.txt"
wait $OBSPID
python3 - "$OUT/sigint-observe.csv" "$sent" <<'PY' | tee -a "$OUT/summary.txt"
import sys, csv, collections
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["instrument"] == "buffered_w"]
sent = int(sys.argv[2]); by = collections.defaultdict(list)
for r in rows: by[r["gpu"]].append((int(r["ts_ns"]), float(r["value"])))
for g, v in sorted(by.items()):
    before = max((p for t, p in v if sent - 2e9 < t <= sent), default=0)
    after = [(t - sent) / 1e6 for t, p in v if t > sent and p > 150]
    tail = [p for t, p in v if t > sent + 1e9]
    print(f"observer {g}: max {before:.0f} W in the 2 s before SIGINT; last sample above 150 W at +{max(after) if after else 0:.0f} ms; from +1 s on max {max(tail) if tail else float('nan'):.0f} W over {len(tail)} samples")
PY
echo "SIGINT sent at $sent ns" | tee -a "$OUT/summary.txt"
ds=$(ls -d "$R/sigint"/*/ | head -1)
grep -o '"status": *{[^}]*}' "$ds/manifest.json" | tee -a "$OUT/summary.txt"
python3 - "$ds" "$sent" <<'PY' | tee -a "$OUT/summary.txt"
import sys, csv, os
run, sent = sys.argv[1], int(sys.argv[2])
for f in sorted(os.listdir(os.path.join(run, "raw"))):
    rows = [(int(r["ts_ns"]), float(r["value"])) for r in csv.DictReader(open(os.path.join(run, "raw", f))) if r["instrument"] == "buffered_w"]
    after = [(t - sent) / 1e6 for t, v in rows if t > sent and v < 150]
    before = [v for t, v in rows if sent - 2e9 < t < sent]
    print(f"{f}: {len(rows)} buffered samples kept; max {max(before):.0f} W in the 2 s before SIGINT; first sample under 150 W at +{after[0]:.0f} ms" if after else f"{f}: no sample under 150 W after SIGINT")
PY
"$BIN" collate "$ds" > "$OUT/sigint-collate.log" 2>&1; echo "collate of interrupted run: exit $?" | tee -a "$OUT/summary.txt"
head -1 "$ds/report/report.md" | tee -a "$OUT/summary.txt"

fi
if want nccl; then
say "NCCL phase: sweep, fabric rung, bulk-synchronous rung"
"$BIN" run campaigns/device-nccl.toml $ALLOW --results "$R/nccl" > "$OUT/nccl.log" 2>&1
echo "exit $?" | tee -a "$OUT/summary.txt"
tail -12 "$OUT/nccl.log" | tee -a "$OUT/summary.txt"
dn=$(ls -d "$R/nccl"/*/ | head -1)
sed -n '/^## NCCL collectives/,/^## Faults/p' "$dn/report/report.md" | grep -E "all_reduce \| (1 GiB|4 GiB|8 B|1 MiB)|all_gather \| 1 GiB|reduce_scatter \| 1 GiB|broadcast \| 1 GiB|fabric|^\| (idle|compute|nccl)" | tee -a "$OUT/summary.txt"
cp "$dn/report/nccl.csv" "$OUT/nccl.csv" 2>/dev/null
say "PyTorch all_reduce reference (same GPUs, NCCL backend)"
timeout 240 python3 "$HERE/torch_allreduce_ref.py" 1073741824 4294967296 2>&1 | grep -v Warning | tail -4 | tee -a "$OUT/summary.txt"
fi
if want sustained; then
say "sustained: default virus 60 s on every GPU"
"$BIN" run campaigns/device-sustained.toml $ALLOW ${SUSTAINED_ARGS:-} --results "$R/sustained" > "$OUT/sustained.log" 2>&1
echo "exit $?" | tee -a "$OUT/summary.txt"
python3 "$HERE/gpu_means.py" "$(ls -d "$R/sustained"/*/ | head -1)" sustained | tee -a "$OUT/summary.txt"
fi
if want sensor; then
say "sensor truth: calibration, then 2 s / 500 / 100 / 20 / 5 ms in phase"
"$BIN" run campaigns/device-sensor.toml $ALLOW --results "$R/sensor" > "$OUT/sensor.log" 2>&1
echo "exit $?" | tee -a "$OUT/summary.txt"
dsn=$(ls -d "$R/sensor"/*/ | head -1)
python3 - "$dsn/sensor.json" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
m = json.load(open(sys.argv[1]))
print("sensor model:", m["source"])
for g in m["gpus"]:
    for p in g["paths"]:
        f = lambda v: "-" if v is None else f"{v:.1f}"
        print(f'{g["gpu"]} {p["instrument"]:<11} update {f(p["update_period_ms"])} ms window {f(p["window_ms"])} ms latency {f(p["latency_ms"])} ms rms {f(p["fit_rms"] and 100 * p["fit_rms"])} % edges {p["edges_used"]} read {f(p["read_period_ms"])} ms')
    for q in g["probes"]:
        print(f'  probe {q["instrument"]} {q["period_ms"]} ms observed {q["observed_ratio"]:.2f} predicted {q["predicted_ratio"]:.2f}')
PY
cat "$dsn/report/sensor_periods.csv" | tee -a "$OUT/summary.txt"
grep -E "sweep/" "$dsn/report/sensor_rungs.csv" | cut -d, -f2,6-16 | tee -a "$OUT/summary.txt"
cp "$dsn/sensor.json" "$OUT/sensor.json"
fi
if want cpu; then
say "sampler cost: observe 30 s (the runner's cadence), no load"
"$BIN" observe --seconds 30 --interval-ms 30000 2>&1 | tail -16 | tee -a "$OUT/summary.txt"
fi
if want sweep; then
say "collate again from raw files"
rm -rf "$d/report"; "$BIN" collate "$d" > "$OUT/collate.log" 2>&1; echo "exit $?" | tee -a "$OUT/summary.txt"
python3 "$HERE/edge_stats.py" "$d" | tee -a "$OUT/summary.txt"
fi

if want smoke; then
say "engine smoke test (sustained 3 s, duty 1 s and 100 ms)"
timeout 120 "$BIN" run campaigns/device-smoke.toml $ALLOW --results "$R/smoke" > "$OUT/smoke.log" 2>&1; rc=$?
echo "exit $rc" | tee -a "$OUT/summary.txt"
tail -14 "$OUT/smoke.log" | tee -a "$OUT/summary.txt"
ds=$(ls -d "$R/smoke"/*/ 2>/dev/null | head -1)
[ -n "$ds" ] && sed -n '/^## Edges per rung/,/^## /p' "$ds/report/report.md" | head -12 | tee -a "$OUT/summary.txt"
if [ "$rc" != 0 ]; then
  say "SMOKE TEST FAILED: the long rounds are skipped"
  cp "$OUT/summary.txt" "$OUT/summary.log"; tar czf "$OUT/results.tgz" -C "$R" . 2>/dev/null; exit 1
fi
fi

if want ticks; then
say "%globaltimer: how finely it ticks (CuPy kernel, 4096 successive changes)"
python3 - <<'PY' 2>&1 | tee -a "$OUT/summary.txt"
import cupy as cp, collections
src = r"""extern "C" __global__ void ticks(unsigned long long* out, int n) {
    unsigned long long last, t; int k = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(last));
    while (k < n) { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); if (t != last) { out[k++] = t - last; last = t; } }
}"""
k = cp.RawKernel(src, "ticks")
for dev in range(cp.cuda.runtime.getDeviceCount()):
    with cp.cuda.Device(dev):
        out = cp.zeros(4096, dtype=cp.uint64)
        k((1,), (1,), (out, cp.int32(4096)))
        steps = collections.Counter(int(x) for x in out.get())
        print(f"GPU{dev}: globaltimer steps (ns: count) {sorted(steps.items())[:8]}")
PY
fi

# The node-truth round: duty sweep 2 s .. 50 ms, in phase and staggered, three repeats.
if want truth; then
say "node truth: duty sweep 2 s / 500 / 200 / 100 / 50 ms, in phase and staggered, --repeats 3"
"$BIN" run campaigns/device-node-truth.toml $ALLOW --repeats 3 --results "$R/truth" > "$OUT/truth.log" 2>&1
echo "exit $?" | tee -a "$OUT/summary.txt"
dt=$(ls -d "$R/truth"/*/ | head -1)
grep -E "^(sweep|idle|sustained)|verdict|composed" "$OUT/truth.log" | head -60 | tee -a "$OUT/summary.txt"
cat "$dt/report/in_phase_vs_staggered.csv" | tee -a "$OUT/summary.txt"
sed -n '/^## Edges per rung/,/^## /p' "$dt/report/report.md" | head -50 | tee -a "$OUT/summary.txt"
fi

# Edge timing, on an idle host and with every core saturated by other processes.
for step in edges edges-busy; do
want $step || continue
hogs=()
if [ $step = edges-busy ]; then
  n=$(( 2 * $(nproc) ))
  for _ in $(seq "$n"); do (while :; do :; done) & hogs+=($!); done
  sleep 2
  say "edges with the CPU saturated: $n busy processes on $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
else
  say "edges on an idle host"
fi
"$BIN" run campaigns/device-edges.toml $ALLOW --results "$R/$step" > "$OUT/$step.log" 2>&1
echo "exit $?" | tee -a "$OUT/summary.txt"
[ ${#hogs[@]} -gt 0 ] && kill "${hogs[@]}" 2>/dev/null
de=$(ls -d "$R/$step"/*/ | head -1)
echo "engine threads in the real-time class: $(grep -o '"realtime_thread":[a-z]*' "$de/events.jsonl" | sort | uniq -c | tr '\n' ' ')" | tee -a "$OUT/summary.txt"
sed -n '/^## Edges per rung/,/^## /p' "$de/report/report.md" | head -40 | tee -a "$OUT/summary.txt"
grep -E "^\| sweep" "$de/report/report.md" | head -16 | cut -c1-200 | tee -a "$OUT/summary.txt"
done

if want hostile; then
say "issue 19 on real GPUs: closed stdout, raw index and checksums, collate of a live run, SIGHUP"
# 1. stdout closed after one line: the run must go on to its end.
timeout 120 "$BIN" run campaigns/device-smoke.toml $ALLOW --json --results "$R/hostile-pipe" 2> "$OUT/hostile-pipe.err" | head -1 > "$OUT/hostile-pipe.first"
echo "closed stdout: exit ${PIPESTATUS[0]} (0 = went on to the end); panics in stderr: $(grep -c panicked "$OUT/hostile-pipe.err")" | tee -a "$OUT/summary.txt"
dh=$(ls -d "$R/hostile-pipe"/*/ | head -1)
grep -o '"state": *"[a-z]*"' "$dh/manifest.json" | tee -a "$OUT/summary.txt"
# 2. The raw index, checked by an independent reader (zlib's CRC-32).
python3 - "$dh" <<'PY' | tee -a "$OUT/summary.txt"
import sys, os, zlib, glob
for idx in sorted(glob.glob(os.path.join(sys.argv[1], "raw", "*.idx"))):
    lines = [l.split(",") for l in open(idx).read().split("\n") if l]
    raw = open(idx[:-4] + ".csv", "rb").read()
    bad = [l for l in lines if zlib.crc32(raw[:int(l[1])]) != int(l[3], 16)]
    rows, nbytes, on_disk = int(lines[-1][0]), int(lines[-1][1]), raw.count(b"\n") - 1
    print(f"{os.path.basename(idx)}: {len(lines)} checkpoints, last {rows} rows / {nbytes} bytes of {len(raw)} on disk, rows on disk {on_disk}; checkpoints whose CRC-32 does not match: {len(bad)}")
PY
"$BIN" collate "$dh" > "$OUT/hostile-collate.log" 2>&1; echo "collate of the closed-stdout run: exit $?" | tee -a "$OUT/summary.txt"
# 3. A collate while the run is being written, and SIGHUP mid-rung.
"$BIN" run campaigns/device-smoke.toml $ALLOW --results "$R/hostile-hup" > "$OUT/hostile-hup.log" 2>&1 &
RUNPID=$!
sleep 7
dl=$(ls -d "$R/hostile-hup"/*/ | head -1)
"$BIN" collate "$dl" > "$OUT/hostile-live.log" 2>&1; echo "collate of a live run: exit $? — $(tail -1 "$OUT/hostile-live.log" | cut -c1-200)" | tee -a "$OUT/summary.txt"
kill -HUP $RUNPID; sent=$(date +%s%N)
wait $RUNPID; rc=$?; exited=$(date +%s%N)
echo "SIGHUP: exit $rc (130 = interrupted), $(( (exited - sent) / 1000000 )) ms after the signal" | tee -a "$OUT/summary.txt"
grep -o '"status": *{[^}]*}' "$dl/manifest.json" | tee -a "$OUT/summary.txt"
nvidia-smi --query-gpu=index,power.draw,utilization.gpu --format=csv,noheader | tee -a "$OUT/summary.txt"
head -1 "$dl/report/report.md" 2>/dev/null | cut -c1-300 | tee -a "$OUT/summary.txt"
fi

cp "$OUT/summary.txt" "$OUT/summary.log" 2>/dev/null
# Run directories without their derived reports (collate regenerates them).
tar czf "$OUT/results.tgz" --exclude=report -C "$R" . 2>/dev/null
ls -la "$OUT"
