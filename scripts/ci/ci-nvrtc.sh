#!/usr/bin/env bash
# Installs NVRTC (CUDA 13) from its pip wheel so the kernels can be compiled
# for sm_80 / sm_90 / sm_100 on a machine with no GPU, and writes
# .ci/nvrtc.env, which puts it on the loader path and makes the compile test
# mandatory.
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=.ci/pydeps
if [ ! -f "$dest/nvidia/cu13/lib/libnvrtc.so.13" ]; then
  python3 -m pip install --quiet --no-deps --target "$dest" "nvidia-cuda-nvrtc>=13,<14"
fi
lib="$(pwd)/$dest/nvidia/cu13/lib"
# cudarc asks for libnvrtc.so / libnvrtc.so.13; provide the unversioned name too.
ln -sf libnvrtc.so.13 "$lib/libnvrtc.so"
cat > .ci/nvrtc.env <<ENV
export LD_LIBRARY_PATH="$lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export POWERLAB_REQUIRE_NVRTC=1
ENV
echo "NVRTC ready in $lib"
