#!/usr/bin/env bash
# The README's pictures: report.html of the simulated demo and predict's
# report for a 100,000-GPU job built from it (schedules/llm-100k.toml),
# each as headless Chromium shows its top, written to docs/img/; and the
# README's excerpt of the demo report (its verdict table and first findings).
#   usage: scripts/docs/screenshots.sh [path/to/powerlab]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN="${1:-target/release/powerlab}"
[ -x "$BIN" ] || { echo "no binary at $BIN: cargo build --release first, or name one" >&2; exit 2; }
(cd scripts/ci/browser && [ -d node_modules ] || npm ci --no-audit --no-fund --silent)
work=$(mktemp -d /tmp/powerlab-shots.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$BIN" run campaigns/demo.toml --backend sim --results "$work/runs" > "$work/run.log"
run=$(ls -d "$work"/runs/*/)
"$BIN" predict "$run" --schedule schedules/llm-100k.toml --no-lifecycle --out "$work/predict" > "$work/predict.log"
export NODE_PATH="$PWD/scripts/ci/browser/node_modules"
cp scripts/docs/screenshot.mjs scripts/ci/browser/.screenshot.mjs
trap 'rm -rf "$work" scripts/ci/browser/.screenshot.mjs' EXIT
node scripts/ci/browser/.screenshot.mjs "$run/report/report.html" docs/img/report.png 2100
node scripts/ci/browser/.screenshot.mjs "$work/predict/report.html" docs/img/predict.png 1900
# The README's excerpt: the verdict table and the answer's first findings,
# between its two marker comments.
python3 - "$run/report/report.md" README.md <<'PY'
import re, sys
md = open(sys.argv[1]).read().splitlines()
start = next(i for i, l in enumerate(md) if l.startswith("| spec item |"))
table = []
for l in md[start:]:
    if not l.startswith("|"):
        break
    table.append(l)
answer = next(i for i, l in enumerate(md) if l.startswith("## The answer"))
findings = [l for l in md[answer + 1:] if l.startswith("- ")][:5]
block = "\n".join(table) + "\n\n```text\n" + "\n".join(findings) + "\n```"
readme = open(sys.argv[2]).read()
readme, n = re.subn(r"(<!-- demo-answer-excerpt -->\n).*?(<!-- /demo-answer-excerpt -->)",
                    lambda m: m.group(1) + block + "\n" + m.group(2), readme, flags=re.S)
assert n == 1, "README.md has no excerpt markers"
open(sys.argv[2], "w").write(readme)
print("README.md: excerpt refreshed")
PY
