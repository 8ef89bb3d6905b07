#!/usr/bin/env bash
# On a lent GPU machine (no Rust, no repository needed): unpacks a release
# tarball into a fresh directory and uses it from there as a user would:
# bootstrap (fabric, NVML power, preflight), --version, a short campaign,
# observe with GPU selection, SIGTERM mid-run (exit 143), health-diff's exit
# code. Logs go under $OUT.
#   usage: scripts/device/device-tarball.sh dist/powerlab-<version>-<target>.tar.(gz|xz)
set -uo pipefail
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/powerlab-out}; mkdir -p "$OUT"
TARBALL=$(readlink -f "$1")
[ -f "$TARBALL" ] || { echo "device-tarball: $1 does not exist" >&2; exit 2; }
log() { echo "=== $*" | tee -a "$OUT/tarball.txt"; }
FRESH=$(mktemp -d /tmp/fresh.XXXXXX)
cd "$FRESH" || exit 1
log "unpacking $(basename "$TARBALL") into $FRESH (cargo on this machine: $(command -v cargo || echo none))"
case "$TARBALL" in
  *.xz) tar xJf "$TARBALL" ;;
  *) tar xzf "$TARBALL" ;;
esac
[ -f "$TARBALL.sha256" ] && (cd "$(dirname "$TARBALL")" && sha256sum -c "$(basename "$TARBALL").sha256") | tee -a "$OUT/tarball.txt"
cd powerlab-*/ || exit 1
ls | tee -a "$OUT/tarball.txt"
bin/powerlab --version | tee -a "$OUT/tarball.txt"
head -12 INSTALL.md | tee -a "$OUT/tarball.txt"

log "scripts/bootstrap.sh"
PREFLIGHT_OUT="$OUT" scripts/bootstrap.sh 2>&1 | tee -a "$OUT/tarball.txt"; echo "bootstrap exit ${PIPESTATUS[0]}" | tee -a "$OUT/tarball.txt"

log "short campaign (campaigns/device-smoke.toml)"
bin/powerlab run campaigns/device-smoke.toml --results "$FRESH/results" > "$OUT/smoke.log" 2>&1; echo "run exit $?" | tee -a "$OUT/tarball.txt"
tail -14 "$OUT/smoke.log" | tee -a "$OUT/tarball.txt"
d=$(ls -d "$FRESH"/results/*/ | head -1)
ls "$d/report" "$d/report/raw" | tee -a "$OUT/tarball.txt"
bin/powerlab collate --json "$d" > "$OUT/collate.json" 2>&1; echo "collate --json exit $? ($(wc -c < "$OUT/collate.json") bytes)" | tee -a "$OUT/tarball.txt"
python3 - "$d" <<'PY' | tee -a "$OUT/tarball.txt"
import sys, csv, os, gzip
try:
    import pyarrow.parquet as pq
except ImportError:
    print("pyarrow not here: Parquet not read back"); sys.exit(0)
d = sys.argv[1]
for g in sorted(os.listdir(os.path.join(d, "raw"))):
    if not g.endswith(".csv"): continue
    rows = sum(1 for _ in open(os.path.join(d, "raw", g))) - 1
    t = pq.read_table(os.path.join(d, "report", "raw", g[:-4] + ".parquet"))
    print(f"raw/{g}: {rows} CSV rows, {t.num_rows} Parquet rows (pyarrow)")
s = list(csv.DictReader(open(os.path.join(d, "report", "summary.csv"))))
t = pq.read_table(os.path.join(d, "report", "summary.parquet")).to_pylist()
bad = [(a["label"], k) for a, b in zip(s, t) for k in ("mean_w", "peak_w") if a[k] and abs(float(a[k]) - b[k]) > 1e-9]
print(f"summary: {len(s)} CSV rows, {len(t)} Parquet rows, cells that differ: {bad}")
PY

NGPU=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
LAST=$((NGPU - 1))
log "observe --gpus $LAST --count 3 --csv (raw schema); then a GPU that is not there"
bin/powerlab observe --gpus "$LAST" --count 3 --interval-ms 200 --csv "$OUT/observe.csv" 2>&1 | head -4 | tee -a "$OUT/tarball.txt"
bin/powerlab observe --gpus "$NGPU" --count 1 2>&1 | tail -1 | tee -a "$OUT/tarball.txt"
head -3 "$OUT/observe.csv" | tee -a "$OUT/tarball.txt"
echo "GPUs in the CSV: $(tail -n +2 "$OUT/observe.csv" | cut -d, -f3 | sort -u | tr '\n' ' ')" | tee -a "$OUT/tarball.txt"

log "SIGTERM mid-rung: exit code"
bin/powerlab run campaigns/device-sigint.toml --results "$FRESH/sigterm" > "$OUT/sigterm.log" 2>&1 &
pid=$!; sleep 10; kill -TERM $pid; sent=$(date +%s%N); wait $pid; rc=$?
echo "SIGTERM: exit $rc (143 expected), $(( ($(date +%s%N) - sent) / 1000000 )) ms after the signal" | tee -a "$OUT/tarball.txt"
grep -o '"status": *{[^}]*}' "$FRESH"/sigterm/*/manifest.json | tee -a "$OUT/tarball.txt"

log "health-diff exit codes"
bin/powerlab health-diff "$d/health.json" "$d/health.json" > /dev/null; echo "same capture: exit $?" | tee -a "$OUT/tarball.txt"
bin/powerlab health-diff --json "$d/health.json" "$d/health-under-load.json" > "$OUT/health-diff.json"; echo "idle vs under load: exit $? — $(head -c 300 "$OUT/health-diff.json")" | tee -a "$OUT/tarball.txt"
nvidia-smi --query-gpu=index,power.draw,clocks.sm --format=csv,noheader | tee -a "$OUT/tarball.txt"

# More campaigns from the unpacked tree (e.g. CAMPAIGNS="campaigns/device-nccl.toml"):
# each run's report and summary are kept under $OUT.
for c in ${CAMPAIGNS:-}; do
  name=$(basename "$c" .toml)
  log "campaign $c"
  bin/powerlab run "$c" --results "$FRESH/extra" > "$OUT/$name.log" 2>&1; echo "run $c: exit $?" | tee -a "$OUT/tarball.txt"
  rd=$(ls -td "$FRESH"/extra/*/ | head -1)
  mkdir -p "$OUT/$name"
  cp "$rd"/report/report.md "$rd"/report/summary.csv "$rd"/manifest.json "$OUT/$name/" 2>/dev/null
  [ -f "$rd/report/nccl.csv" ] && cp "$rd/report/nccl.csv" "$OUT/$name/"
  grep -n -A3 "One rank\|## Fabric power" "$rd/report/report.md" | tee -a "$OUT/tarball.txt"
done
