#!/usr/bin/env bash
# Issue 15 in CI: the self-contained report.html opened in a real headless
# Chromium (Debian's chromium package, driven by playwright-core from npm).
# A simulated demo run is collated with the test build's binary; the check
# asserts that the answer block comes first and every plot renders (inline
# SVG with a size, no broken image, no script error, no external request).
# Then a copy with one plot removed must fail the same check.
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
