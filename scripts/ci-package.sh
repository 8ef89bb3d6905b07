#!/usr/bin/env bash
# CI: builds the x86_64 release tarball for the glibc 2.28 baseline (with
# cargo-zigbuild), unpacks it into an empty directory outside the repository
# and uses it from there as a user on a GPU node would: --version,
# validate, plan and the simulated demo; the completions and the man page
# must be there, and the binary must not ask for a glibc newer than 2.28.
# The demo's Parquet files are read with DuckDB and compared with its CSVs.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

if ! command -v cargo-zigbuild >/dev/null 2>&1; then
  python3 -m pip install --quiet cargo-zigbuild ziglang
  # pip puts the command with the interpreter's scripts (or the user's).
  PATH="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$(python3 -m site --user-base)/bin:$PATH"
  export PATH
  command -v cargo-zigbuild >/dev/null 2>&1 || { echo "ci-package: cargo-zigbuild installed but not found on PATH" >&2; exit 1; }
fi
# DuckDB: an independent reader for the Parquet files the demo writes.
python3 -c 'import duckdb' 2>/dev/null || python3 -m pip install --quiet duckdb
PY=$(command -v python3)
FLOOR=2.28
TARGET=x86_64-unknown-linux-gnu.$FLOOR
tarball=$(ZIGBUILD=1 bash scripts/package.sh --target "$TARGET" --out "$REPO/dist" | tail -1)
echo "package: $tarball ($(du -h "$tarball" | cut -f1))"

fail() { echo "ci-package: FAILED: $*" >&2; exit 1; }
(cd "$(dirname "$tarball")" && sha256sum -c "$(basename "$tarball").sha256") || fail "checksum"

work=$(mktemp -d /tmp/powerlab-unpack.XXXXXX)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xzf "$tarball"
root=$(ls -d "$work"/powerlab-*)
cd "$root"
# Nothing from the repository or a Rust toolchain on the way.
export PATH=/usr/bin:/bin

v=$(bin/powerlab --version)
echo "$v"
rev=$(git -C "$REPO" rev-parse --short=12 HEAD)
case "$v" in *"git $rev"*"CUDA 13"*"features:"*) ;; *) fail "--version lacks the revision $rev, CUDA major or features: $v" ;; esac

for f in completions/powerlab.bash completions/_powerlab completions/powerlab.fish man/man1/powerlab.1 man/man1/powerlab-run.1 INSTALL.md scripts/bootstrap.sh; do
  [ -s "$f" ] || fail "$f missing or empty in the tarball"
done
grep -q 'powerlab' man/man1/powerlab.1 || fail "the man page does not name powerlab"
bash -n completions/powerlab.bash || fail "bash completions do not parse"

newest=$(objdump -T bin/powerlab | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V -u | tail -1)
echo "newest glibc symbol version asked for: $newest (floor $FLOOR)"
[ "$(printf '%s\n%s\n' "$newest" "$FLOOR" | sort -V | tail -1)" = "$FLOOR" ] || fail "the binary needs glibc $newest, above the $FLOOR floor"
grep -q "glibc floor:\*\* $newest" INSTALL.md || fail "INSTALL.md does not state the floor $newest"

bin/powerlab validate campaigns/demo.toml
bin/powerlab validate --json campaigns/demo.toml | grep -q '"ok":true' || fail "validate --json"
bin/powerlab plan campaigns/demo.toml | tail -3
bin/powerlab run campaigns/demo.toml --backend sim --results "$work/results" | tail -5
ls "$work"/results/*/report/report.md >/dev/null || fail "the simulated demo wrote no report"
"$PY" "$REPO/scripts/check_parquet.py" "$(ls -d "$work"/results/*/ | head -1)" || fail "the Parquet files differ from the CSVs"
echo "ci-package: the unpacked tarball works ($(basename "$tarball"))"
