#!/usr/bin/env bash
# Prints the newest GLIBC_x.y symbol version an ELF binary asks for: the
# oldest glibc it runs on. Reads the dynamic symbols with readelf, which
# understands any ELF machine (an aarch64 binary on an x86_64 host too).
#   usage: scripts/ci/glibc-floor.sh BINARY
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 BINARY" >&2; exit 2; }
[ -f "$1" ] || { echo "glibc-floor: $1: no such file" >&2; exit 2; }
newest=$(readelf -W --dyn-syms "$1" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -V -u | tail -1 || true)
[ -n "$newest" ] || { echo "glibc-floor: $1 asks for no GLIBC symbol version (not a dynamically linked glibc ELF binary?)" >&2; exit 1; }
echo "$newest"
