#!/usr/bin/env bash
# The grid simulator step: ANDES in its pinned environment, installed from
# the package registry (python/powerlab-andes/requirements.lock, --no-deps)
# by scripts/grid/setup-andes.sh into .venv-andes at the repository root
# (ignored by git; `powerlab predict` finds it there by itself, so later CI
# steps use it; it is not deleted afterwards: its 27,000 files, 750 MB, took
# a minute to remove on CI's disk), then
#   1. `modes` on Kundur's two-area case (facility at bus 7, 100 MW), held
#      against the committed grids/models/kundur_full-bus7.json;
#   2. `play` of a short window (8 s of a 20 MW square wave at the
#      inter-area mode's period) into the same case;
#   3. check_linear.py --short: a 1 MW step and a 1 MW sine at the
#      inter-area mode through the simulator against H(s) (3 % at most).
# Any disagreement fails the script. Each step prints its time; the whole
# is meant to take under 3 minutes on CI's 2 cores (109 s with a fresh venv
# on a development machine at load 6-8, about 60 s of CPU).
#
# usage: scripts/ci/ci-grid-andes.sh      (POWERLAB_ANDES_VENV=DIR puts the venv there)
set -euo pipefail
cd "$(dirname "$0")/../.."

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
VENV=${POWERLAB_ANDES_VENV:-$PWD/.venv-andes}
PKG=python/powerlab-andes

step() {
  local name=$1 t0=$SECONDS
  shift
  "$@"
  echo "ci-grid-andes: $name took $((SECONDS - t0)) s (at $SECONDS s)" >&2
}

step setup bash scripts/grid/setup-andes.sh "$VENV"
PY="$VENV/bin/python"
export POWERLAB_ANDES_PYTHON="$PY"

step modes "$PY" -m powerlab_andes modes --case kundur/kundur_full.xlsx --bus 7 --p-mw 100 \
  --out "$WORK/modes.json"
step committed-model "$PY" "$PKG/compare_modes.py" grids/models/kundur_full-bus7.json "$WORK/modes.json"

# A short playback window: 100 MW, then a square wave of 20 MW at the
# inter-area mode's period, on the 20 ms step predict uses.
"$PY" - "$WORK" <<'PYEOF'
import json, sys
work = sys.argv[1]
model = json.load(open(f"{work}/modes.json"))
period_s = 1.0 / model["modes"][model["inter_area_mode"]]["freq_hz"]
with open(f"{work}/square.csv", "w") as fh:
    fh.write("t_s,p_mw\n")
    for k in range(401):
        t = k * 0.02
        high = t >= 1.0 and ((t - 1.0) % period_s) < period_s / 2
        fh.write(f"{t:.2f},{120.0 if high else 100.0}\n")
json.dump({"step_ms": 20, "windows": [{"name": "ci/square", "file": "square.csv"}]},
          open(f"{work}/windows.json", "w"))
PYEOF
step play "$PY" -m powerlab_andes play --case kundur/kundur_full.xlsx --bus 7 \
  --windows "$WORK/windows.json" --out-dir "$WORK/play"
"$PY" - "$WORK/play" <<'PYEOF'
import csv, json, math, sys
out = sys.argv[1]
play = json.load(open(f"{out}/play.json"))
w = play["windows"][0]
rows = list(csv.DictReader(open(f"{out}/{w['file']}")))
tie = [float(r["p_tie_mw"]) for r in rows]
f = [float(r["f_coi_hz"]) for r in rows]
ok = w["converged"] and len(rows) == 401 and all(map(math.isfinite, tie + f)) and max(tie) - min(tie) > 1.0
print(f"play: {w['name']} converged={w['converged']} rows={len(rows)} sim_s={w['sim_s']} "
      f"wall_s={w['wall_s']} tie p-p {max(tie) - min(tie):.2f} MW, f_coi p-p {1e3 * (max(f) - min(f)):.2f} mHz")
sys.exit(0 if ok else 1)
PYEOF
step check-linear "$PY" "$PKG/check_linear.py" --short
