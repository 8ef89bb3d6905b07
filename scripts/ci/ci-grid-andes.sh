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

# 4. `powerlab predict` with [grid.system] and the simulator: the committed
#    H100 lifecycle run predicted with schedules/llm-100k.toml, shortened
#    for CI (a 15-minute lifecycle with one checkpoint and one crash, 8 s
#    steady and 4 s event windows, so every window ANDES plays is short):
#    every window must come back converged, beside the screen's row for the
#    same window, and the steady window's oscillation from the two must
#    agree within 25 % (the screen is linear, the simulator not; the 15 %
#    check at resonance is crates/predict/tests/grid_andes.rs, ~8 minutes).
BIN=${POWERLAB_BIN:-target/debug/powerlab}
if [ -x "$BIN" ]; then
  cp -r results/h100x1-2026-12-06-lifecycle/run "$WORK/lc-run"
  sed -e 's/^span_s = 7200/span_s = 900/' -e 's/^checkpoint_every_s = 1800/checkpoint_every_s = 300/' \
      -e 's/^crash_at_s = \[4000\]/crash_at_s = [500]/' -e 's/^restart_after_s = 600/restart_after_s = 100/' \
      -e 's/^end_at_s = 7000/end_at_s = 800/' -e 's/^steady_window_s = 60/steady_window_s = 8/' \
      -e 's/^event_window_s = 20/event_window_s = 4/' schedules/llm-100k.toml > "$WORK/ci-100k.toml"
  step predict "$BIN" predict "$WORK/lc-run" --square-waves --schedule "$WORK/ci-100k.toml" \
    --andes-python "$PY" --out "$WORK/lc-predict" > "$WORK/predict.log" 2>&1 \
    || { tail -30 "$WORK/predict.log"; exit 1; }
  "$PY" - "$WORK/lc-predict/grid_response.csv" <<'PYEOF'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
by = {}
for r in rows:
    if r["source"] in ("screen", "andes"):
        by.setdefault((r["scenario"], r["window"]), {})[r["source"]] = r
bad = [k for k, v in by.items() if "andes" not in v or v["andes"]["error"]]
for (sc, win), v in sorted(by.items()):
    a, s = v.get("andes", {}), v.get("screen", {})
    print(f"predict: {sc}/{win}: |df| bus screen {s.get('max_df_bus_mhz')} andes {a.get('max_df_bus_mhz')} mHz; "
          f"RoCoF COI 500 ms screen {s.get('rocof_coi_500ms_hz_per_s')} andes {a.get('rocof_coi_500ms_hz_per_s')} Hz/s"
          + (f"; error {a.get('error')}" if a.get("error") else ""))
steady = [v for (sc, win), v in by.items() if win == "steady" and "andes" in v and "screen" in v]
off = []
for v in steady:
    s, a = float(v["screen"]["osc_pp_bus_mhz"]), float(v["andes"]["osc_pp_bus_mhz"])
    print(f"predict: steady p-p at the bus: screen {s:.3f} mHz, andes {a:.3f} mHz ({100 * (s / a - 1):+.1f} %)")
    if abs(s / a - 1) > 0.25:
        off.append((s, a))
if not by or bad or not steady or off:
    print(f"predict: FAILED: windows without a simulator figure {bad}, steady pairs {len(steady)}, beyond 25 % {off}")
    sys.exit(1)
PYEOF
else
  echo "ci-grid-andes: no powerlab binary at $BIN (cargo build -p powerlab): predict's playback not checked" >&2
  exit 1
fi
