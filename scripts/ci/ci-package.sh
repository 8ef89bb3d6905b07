#!/usr/bin/env bash
# CI: builds the release tarballs (at the `ci-package` profile: unoptimised,
# the same layout and glibc floor as `release`) for the glibc 2.28 baseline (with
# cargo-zigbuild), x86_64 and aarch64 (Grace nodes: GH200, GB200).
# The x86_64 one is unpacked into an empty directory outside the repository
# and used from there as a user on a GPU node would: --version, validate,
# plan and the simulated demo; the completions and the man page must be
# there, and the binary must not ask for a glibc newer than 2.28. The demo's
# Parquet files are read with DuckDB and compared with its CSVs.
# The aarch64 one is unpacked likewise and its binary run under qemu-user
# (Debian's qemu-user, with Debian's aarch64 C library) for --version and
# validate, with the same glibc check.
set -euo pipefail
cd "$(dirname "$0")/../.."
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
t0=$SECONDS
tarball=$(PROFILE=ci-package ZIGBUILD=1 bash scripts/ci/package.sh --target "$TARGET" --out "$REPO/dist" | tail -1)
echo "package: $tarball ($(du -h "$tarball" | cut -f1)), built in $((SECONDS - t0)) s"

fail() { echo "ci-package: FAILED: $*" >&2; exit 1; }
(cd "$(dirname "$tarball")" && sha256sum -c "$(basename "$tarball").sha256") || fail "checksum"

work=$(mktemp -d /tmp/powerlab-unpack.XXXXXX)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xzf "$tarball"
root=$(ls -d "$work"/powerlab-*)
cd "$root"
# Nothing from the repository or a Rust toolchain on the way.
SAVED_PATH=$PATH
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

newest=$(bash "$REPO/scripts/ci/glibc-floor.sh" bin/powerlab) || fail "no glibc floor could be read off the x86_64 binary"
echo "newest glibc symbol version asked for: $newest (floor $FLOOR)"
[ "$(printf '%s\n%s\n' "$newest" "$FLOOR" | sort -V | tail -1)" = "$FLOOR" ] || fail "the binary needs glibc $newest, above the $FLOOR floor"
grep -q "glibc floor:\*\* $newest" INSTALL.md || fail "INSTALL.md does not state the floor $newest"

bin/powerlab validate campaigns/demo.toml
bin/powerlab validate --json campaigns/demo.toml | grep -q '"ok":true' || fail "validate --json"
bin/powerlab plan campaigns/demo.toml | tail -3
bin/powerlab run campaigns/demo.toml --backend sim --results "$work/results" | tail -5
ls "$work"/results/*/report/report.md >/dev/null || fail "the simulated demo wrote no report"
"$PY" "$REPO/scripts/ci/check_parquet.py" "$(ls -d "$work"/results/*/ | head -1)" || fail "the Parquet files differ from the CSVs"
echo "ci-package: the unpacked tarball works ($(basename "$tarball"))"

# --- aarch64 -------------------------------------------------------------
export PATH=$SAVED_PATH
cd "$REPO"
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
if ! command -v qemu-aarch64 >/dev/null 2>&1 || [ ! -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ]; then
  pkgs="qemu-user libc6-arm64-cross libgcc-s1-arm64-cross"
  # shellcheck disable=SC2086
  $SUDO apt-get install -y --no-install-recommends $pkgs >/dev/null \
    || { $SUDO apt-get update >/dev/null && $SUDO apt-get install -y --no-install-recommends $pkgs >/dev/null; } \
    || fail "could not install $pkgs from the distribution's packages"
fi
ATRIPLE=aarch64-unknown-linux-gnu
if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed | grep -qx "$ATRIPLE"; then
  rustup target add "$ATRIPLE" || fail "rustup could not add the $ATRIPLE standard library"
fi
[ -d "$(rustc --print sysroot)/lib/rustlib/$ATRIPLE" ] \
  || fail "the $ATRIPLE standard library is not installed (rustup target add $ATRIPLE)"
QEMU="qemu-aarch64 -L /usr/aarch64-linux-gnu"
t0=$SECONDS
atarball=$(PROFILE=ci-package ZIGBUILD=1 RUNNER="$QEMU" bash scripts/ci/package.sh --target "$ATRIPLE.$FLOOR" --out "$REPO/dist" | tail -1)
echo "package: $atarball ($(du -h "$atarball" | cut -f1)), built in $((SECONDS - t0)) s"
(cd "$(dirname "$atarball")" && sha256sum -c "$(basename "$atarball").sha256") || fail "aarch64 checksum"
awork=$(mktemp -d /tmp/powerlab-unpack-aarch64.XXXXXX)
trap 'rm -rf "$work" "$awork"' EXIT
tar -C "$awork" -xzf "$atarball"
aroot=$(ls -d "$awork"/powerlab-*)
cd "$aroot"
machine=$(readelf -h bin/powerlab | sed -n 's/^ *Machine: *//p')
case "$machine" in *AArch64*) ;; *) fail "the aarch64 tarball holds a binary for $machine" ;; esac
for f in completions/powerlab.bash man/man1/powerlab.1 INSTALL.md; do
  [ -s "$f" ] || fail "$f missing or empty in the aarch64 tarball"
done
av=$($QEMU bin/powerlab --version)
echo "$av"
case "$av" in *"git $rev"*"$ATRIPLE"*) ;; *) fail "aarch64 --version lacks the revision $rev or the target: $av" ;; esac
anewest=$(bash "$REPO/scripts/ci/glibc-floor.sh" bin/powerlab) || fail "no glibc floor could be read off the aarch64 binary"
echo "aarch64: newest glibc symbol version asked for: $anewest (floor $FLOOR)"
[ "$(printf '%s\n%s\n' "$anewest" "$FLOOR" | sort -V | tail -1)" = "$FLOOR" ] || fail "the aarch64 binary needs glibc $anewest, above the $FLOOR floor"
grep -q "glibc floor:\*\* $anewest" INSTALL.md || fail "the aarch64 INSTALL.md does not state the floor $anewest"
$QEMU bin/powerlab validate campaigns/demo.toml
$QEMU bin/powerlab validate --json campaigns/demo.toml | grep -q '"ok":true' || fail "aarch64 validate --json"
rc=0
$QEMU bin/powerlab validate "$REPO/scripts/ci/glibc-floor.sh" >/dev/null 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "aarch64 validate of a file that is not a campaign exited $rc, not 1"
echo "ci-package: the aarch64 tarball runs under qemu-user ($(basename "$atarball"))"
