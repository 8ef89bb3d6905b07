#!/usr/bin/env bash
# Rack tests under a real MPI launcher: installs Open MPI (and libclang for
# the `mpi` crate's bindings) from the distribution's packages, then runs
# crates/powerlab/tests/rack.rs with the `mpi` feature: 4 ranks on this
# machine, each a simulated 8-GPU node.
set -euo pipefail
cd "$(dirname "$0")/../.."

have_libclang() { ldconfig -p 2>/dev/null | grep -q 'libclang[-.0-9]*\.so' || ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1; }
if ! command -v mpicc >/dev/null 2>&1 || ! have_libclang; then
  echo "installing Open MPI and libclang (Debian packages)" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y --no-install-recommends openmpi-bin libopenmpi-dev libclang-dev >/dev/null \
    || { $SUDO apt-get update >/dev/null && $SUDO apt-get install -y --no-install-recommends openmpi-bin libopenmpi-dev libclang-dev >/dev/null; }
fi
mpirun --version | head -1

# Root in CI containers: Open MPI refuses root without these.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cargo test --locked -p powerlab --features mpi --test main rack:: -- --test-threads 1
