#!/usr/bin/env bash
# Packs Open MPI from this machine's Debian packages into .device/openmpi.tar.gz,
# for GPU machines that have no MPI (the lent H200 machines): the packages
# openmpi-bin, libopenmpi3, openmpi-common and every library they link (ldd)
# except the C library itself, unpacked under one prefix. On the GPU machine,
# `source scripts/device/with-openmpi.sh .device/openmpi.tar.gz` unpacks it and sets
# OPAL_PREFIX, PATH, LD_LIBRARY_PATH and the single-host MCA settings.
set -euo pipefail
cd "$(dirname "$0")/../.."
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
P="$W/openmpi"
mkdir -p "$P" .device
(cd "$W" && apt-get download openmpi-bin libopenmpi3 openmpi-common >/dev/null 2>&1)
for deb in "$W"/*.deb; do dpkg -x "$deb" "$P"; done
LIB="$P/usr/lib/x86_64-linux-gnu"
# The packages link mpirun through Debian's alternatives (/etc/alternatives): point it at orterun.
for name in mpirun mpiexec; do ln -sfn orterun "$P/usr/bin/$name"; done
# Libraries they link, found on this machine; the C library family stays (the GPU machine's is newer).
skip='^(libc|libm|libdl|libpthread|librt|ld-linux-x86-64|libresolv|libutil)\.so'
for _ in 1 2 3; do
  find "$P" -type f \( -name '*.so*' -o -perm -u+x \) -print0 |
    { xargs -0 -r env LD_LIBRARY_PATH="$LIB" ldd 2>/dev/null || true; } |
    awk '/=>/ && $3 ~ /^\// {print $3}' | sort -u |
    while read -r lib; do
      base=$(basename "$lib")
      [[ "$base" =~ $skip ]] && continue
      [ -e "$LIB/$base" ] || cp -L "$lib" "$LIB/$base"
    done
done
tar -C "$W" -czf .device/openmpi.tar.gz openmpi
echo ".device/openmpi.tar.gz: $(du -h .device/openmpi.tar.gz | cut -f1) ($(find "$LIB" -maxdepth 1 -name '*.so*' | wc -l) libraries)"
