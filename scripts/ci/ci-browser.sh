#!/usr/bin/env bash
# Issue 15 in CI: the self-contained report.html opened in a real headless
# Chromium (Debian's chromium package, driven by playwright-core from npm).
# A simulated demo run is collated with the test build's binary; the check
# asserts that the answer block comes first and every plot renders (inline
# SVG with a size, no broken image, no script error, no external request),
# and that the two verdict plots render above the answer's first words.
# Then a copy with one plot removed, and a copy with the verdict plots
# moved below the answer, must each fail the same check.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$(pwd)

export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
if [ ! -x /usr/bin/chromium ]; then
  $SUDO apt-get install -y --no-install-recommends chromium >/dev/null \
    || { $SUDO apt-get update >/dev/null && $SUDO apt-get install -y --no-install-recommends chromium >/dev/null; }
fi
/usr/bin/chromium --version
(cd scripts/ci/browser && npm ci --no-audit --no-fund --silent)

BIN="${POWERLAB_BIN:-${CARGO_TARGET_DIR:-$REPO/target}/debug/powerlab}"
[ -x "$BIN" ] || cargo build --locked -p powerlab
work=$(mktemp -d /tmp/powerlab-browser.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$BIN" run campaigns/demo.toml --backend sim --sim-gpus 4 --results "$work/runs" > "$work/run.log" 2>&1 \
  || { tail -20 "$work/run.log"; exit 1; }
html=$(ls "$work"/runs/*/report/report.html)
plots=$(grep -c '^!\[' "$(dirname "$html")/report.md")
echo "ci-browser: $html names $plots plots"
node scripts/ci/browser/check-report.mjs "$html" "$plots"

# The check must be able to fail: the same page with one plot's markup gone.
broken="$work/broken.html"
python3 - "$html" "$broken" <<'PY'
import re, sys
page = open(sys.argv[1]).read()
page, n = re.subn(r'<figure class="plot"[^>]*><svg.*?</svg>', '<figure class="plot" data-src="gone.svg">', page, count=1, flags=re.S)
assert n == 1, "no plot to remove"
open(sys.argv[2], "w").write(page)
PY
if node scripts/ci/browser/check-report.mjs "$broken" "$plots" 2> "$work/broken.err"; then
  echo "ci-browser: FAILED: a page with a plot removed passed the check" >&2
  exit 1
fi
echo "ci-browser: the page with a plot removed fails as it should: $(head -1 "$work/broken.err")"

# And it must fail when the verdict plots sit below the answer's words.
moved="$work/moved.html"
python3 - "$html" "$moved" <<'PY'
import re, sys
page = open(sys.argv[1]).read()
figs = []
for src in ("plots/verdict_swing.svg", "plots/verdict_envelope.svg"):
    page, n = re.subn(r'<figure class="plot" data-src="%s">.*?</figure>' % re.escape(src),
                      lambda m: figs.append(m.group(0)) or "", page, count=1, flags=re.S)
    assert n == 1, "no verdict plot " + src
m = re.search(r'<h2>The answer.*?</ul>', page, flags=re.S)
assert m, "no answer block"
page = page[:m.end()] + "".join(figs) + page[m.end():]
open(sys.argv[2], "w").write(page)
PY
if node scripts/ci/browser/check-report.mjs "$moved" "$plots" 2> "$work/moved.err"; then
  echo "ci-browser: FAILED: a page with the verdict plots below the answer passed the check" >&2
  exit 1
fi
grep -q "is not above the answer" "$work/moved.err" \
  || { echo "ci-browser: FAILED: the moved page failed for another reason: $(cat "$work/moved.err")" >&2; exit 1; }
echo "ci-browser: the page with the verdict plots below the answer fails as it should: $(head -1 "$work/moved.err")"

# Issue 49: the verdict table is the first element after the verdict plots,
# and every row agrees with envelope.csv / grid.csv beside the page.
node scripts/ci/browser/check-verdicts.mjs "$html"
# It must refuse every wrong table: a verdict flipped or blanked, a row
# pointed at a kinder rung, a limit, margin or count changed, a row
# deleted, hidden or moved below the answer (scripts/ci/browser/tamper.py).
python3 scripts/ci/browser/tamper.py "$html" "$work/tampered" > "$work/tampered.list"
n=0
while read -r bad; do
  name=$(basename "$(dirname "$(dirname "$bad")")")
  if node scripts/ci/browser/check-verdicts.mjs "$bad" > /dev/null 2> "$work/bad.err"; then
    echo "ci-browser: FAILED: the tampered table '$name' passed the verdict check" >&2
    exit 1
  fi
  echo "ci-browser: tampered '$name' refused: $(head -1 "$work/bad.err")"
  n=$((n + 1))
done < "$work/tampered.list"
[ "$n" -ge 13 ] || { echo "ci-browser: FAILED: only $n tampered tables were made" >&2; exit 1; }

# The prediction's report (issue 34): a job of 4096 GPUs in nodes of 4
# built from the demo run's measured responses, opened the same way; its
# waveform and envelope plots above its answer block.
pred="$work/prediction"
"$BIN" predict "$(dirname "$(dirname "$html")")" --gpus 4096 --gpus-per-node 4 --iteration-ms 700 \
  --compute-fraction 0.6 --spread-sigma-ms 5 --span-s 60 --out "$pred" > "$work/predict.log" 2>&1 \
  || { tail -20 "$work/predict.log"; exit 1; }
pplots=$(grep -c '^!\[' "$pred/report.md")
echo "ci-browser: $pred/report.html names $pplots plots"
VERDICT_PLOTS="plots/waveform.svg,plots/verdict_envelope.svg" node scripts/ci/browser/check-report.mjs "$pred/report.html" "$pplots"
# Its verdict table first, agreeing with its envelope.csv and grid.csv.
VERDICT_PLOTS="plots/waveform.svg,plots/verdict_envelope.svg" node scripts/ci/browser/check-verdicts.mjs "$pred/report.html"

# A prediction with every kind of row (grid modes in modes.csv, lifecycle
# limits in study/lifecycle.json, [grid.system] limits in
# grid_response.csv: the screen's, the simulator left to the ANDES step):
# schedules/llm-100k.toml from the
# committed H100 lifecycle run, its table checked against those files too.
lc="$work/lifecycle-run"
cp -r results/h100x1-2026-12-06-lifecycle/run "$lc"
"$BIN" predict "$lc" --square-waves --schedule schedules/llm-100k.toml --no-grid-playback --out "$work/lc-predict" > "$work/lc-predict.log" 2>&1 \
  || { tail -20 "$work/lc-predict.log"; exit 1; }
VERDICT_PLOTS="plots/waveform.svg,plots/verdict_envelope.svg" node scripts/ci/browser/check-verdicts.mjs "$work/lc-predict/report.html"
grep -q 'modes.csv' "$work/lc-predict/report.md" && grep -q 'study/lifecycle.json' "$work/lc-predict/report.md" \
  || { echo "ci-browser: FAILED: the lifecycle prediction's verdict table has no grid-mode or lifecycle row" >&2; exit 1; }
