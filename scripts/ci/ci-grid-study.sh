#!/usr/bin/env bash
# A grid study's files read back by third-party tools: a virtual
# environment (under a temporary folder) with PyPI's `comtrade` and `numpy`
# at pinned versions runs every check of CHECKS below as
# `scripts/bench/<check> DIR`; any check's failure fails this script. It is
# never skipped: a missing python3 venv or PyPI fails it.
#
# usage: scripts/ci/ci-grid-study.sh [DIR]
#
# DIR: a prediction's output folder (study/ with the COMTRADE pair,
# comtrade.json and lifecycle.json; waveform.parquet and modes.csv).
# Without it, the binary CI built (target/debug/powerlab) makes one: the
# simulated node's lifecycle edges (campaigns/edges-demo.toml), then
# `powerlab predict` with schedules/llm-100k.toml (its [lifecycle] and two
# grid modes) into a temporary folder.
set -euo pipefail
cd "$(dirname "$0")/../.."

# The checks, each run with the folder as its one argument.
CHECKS=(
  comtrade-check.py
  forcing-check.py
)
# Pinned: comtrade 0.2.0 and numpy 2.4.6 both need Python >= 3.11;
# pyarrow reads waveform.parquet for the forcing check.
COMTRADE_VERSION=0.2.0
NUMPY_VERSION=2.4.6
PYARROW_VERSION=22.0.0
BIN=${POWERLAB_BIN:-target/debug/powerlab}

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

DIR=${1:-}
if [ -z "$DIR" ]; then
  "$BIN" run campaigns/edges-demo.toml --backend sim --results "$WORK/runs" > "$WORK/run.log" 2>&1 \
    || { tail -30 "$WORK/run.log"; exit 1; }
  RUN=$(find "$WORK/runs" -mindepth 1 -maxdepth 1 -type d | head -1)
  DIR="$WORK/predict"
  "$BIN" predict "$RUN" --square-waves --schedule schedules/llm-100k.toml --out "$DIR" > "$WORK/predict.log" 2>&1 \
    || { tail -30 "$WORK/predict.log"; exit 1; }
  tail -3 "$WORK/predict.log"
fi
if [ ! -d "$DIR" ]; then
  echo "error: $DIR is not a folder" >&2
  exit 1
fi

python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install --quiet --disable-pip-version-check \
  "comtrade==$COMTRADE_VERSION" "numpy==$NUMPY_VERSION" "pyarrow==$PYARROW_VERSION"

failed=()
for check in "${CHECKS[@]}"; do
  echo "== $check $DIR"
  "$WORK/venv/bin/python" "scripts/bench/$check" "$DIR" || failed+=("$check")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "error: grid-study check(s) failed: ${failed[*]}" >&2
  exit 1
fi
