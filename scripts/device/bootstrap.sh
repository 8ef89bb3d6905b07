#!/usr/bin/env bash
# First thing on a freshly booked GPU node. Before building anything it reads
# the NVSwitch fabric state and NVML power on every GPU (a second each), then
# builds powerlab (or uses a prebuilt binary: the argument, or bin/powerlab
# of an unpacked release tarball) and runs its preflight. Any
# failure prints BOOTSTRAP FAILED and exits non-zero.
#   usage: scripts/device/bootstrap.sh [path/to/prebuilt/powerlab] [--needs-nccl]
#   (scripts/bootstrap.sh in an unpacked release tarball)
set -uo pipefail
# Work from the top: the repository (this is scripts/device/) or the
# tarball (scripts/).
here=$(cd "$(dirname "$0")" && pwd)
case "$here" in
  */scripts/device) cd "$here/../.." || exit 1 ;;
  *) cd "$here/.." || exit 1 ;;
esac
say() { echo "bootstrap: $*"; }
die() { echo "BOOTSTRAP FAILED — do not start the campaign: $*"; exit 1; }

command -v nvidia-smi >/dev/null 2>&1 || die "nvidia-smi not found: the NVIDIA driver is not installed"
NGPU=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
[ "$NGPU" -gt 0 ] || die "nvidia-smi lists no GPU"
say "$NGPU GPU(s)"

say "fabric state on every GPU"
fail=0
q=$(nvidia-smi -q 2>/dev/null)
states=$(printf '%s\n' "$q" | awk '/^    Fabric/{f=1;next} f&&/State/{print $NF; f=0}')
cliques=$(printf '%s\n' "$q" | awk '/^    Fabric/{f=1} f&&/CliqueId/{print $NF; f=0}')
if [ -z "$states" ]; then
  say "  no Fabric block (no NVSwitch): nothing to register"
else
  i=0
  while read -r s; do
    c=$(printf '%s\n' "$cliques" | sed -n "$((i+1))p")
    case "$s" in
      Completed) say "  gpu$i fabric Completed, CliqueId $c" ;;
      N/A) say "  gpu$i fabric N/A (not supported)" ;;
      *) say "  FAIL: gpu$i fabric State $s, CliqueId $c (CUDA will return 802 until the fabric registers)"; fail=1 ;;
    esac
    i=$((i+1))
  done <<< "$states"
fi

say "NVML power readable on every GPU"
for g in $(seq 0 $((NGPU-1))); do
  p=$(nvidia-smi --id="$g" --query-gpu=power.draw --format=csv,noheader 2>/dev/null)
  case "$p" in
    *W*) say "  gpu$g power.draw $p" ;;
    *) say "  FAIL: gpu$g reports power.draw='$p'"; fail=1 ;;
  esac
done
[ "$fail" = 0 ] || die "fabric or NVML power check failed (see above)"

BIN=${1:-}
if [ -z "$BIN" ] || [ "${BIN#--}" != "$BIN" ]; then
  if [ -x bin/powerlab ]; then
    # An unpacked release tarball: its own binary, no Rust needed.
    BIN=bin/powerlab
  elif command -v cargo >/dev/null 2>&1; then
    say "building powerlab"
    cargo build --release --quiet || die "cargo build failed"
    BIN=target/release/powerlab
  else
    die "no cargo on this node and no prebuilt binary given ($0 path/to/powerlab)"
  fi
else
  shift
fi
[ -x "$BIN" ] || die "$BIN is not an executable"
say "preflight"
"$BIN" preflight --out "${PREFLIGHT_OUT:-.}" "$@" || die "powerlab preflight failed (see health-report.md)"
say "OK: node is fit for a campaign"
