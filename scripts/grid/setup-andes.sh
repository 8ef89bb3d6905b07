#!/usr/bin/env bash
# Make the pinned Python environment that `powerlab predict` runs ANDES in.
#
#   bash scripts/grid/setup-andes.sh [VENV_DIR]     (default: .venv-andes at the repo root)
#
# Creates a venv with python3, installs python/powerlab-andes/requirements.lock
# (ANDES 2.0.0 and every dependency at an exact version, --no-deps so nothing
# unpinned slips in; --no-compile: Python compiles what it imports on first
# use, and pip's byte-compiling of every module of the lock (IPython,
# pandas, sympy, ...) took two thirds of the setup's time), then the
# powerlab_andes package itself (editable, so a
# checkout's changes take effect), and checks it with `python -m powerlab_andes
# version`. `powerlab predict` finds .venv-andes/bin/python by itself; for
# another folder pass --andes-python VENV_DIR/bin/python or set
# POWERLAB_ANDES_PYTHON.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${1:-$root/.venv-andes}"
pkg="$root/python/powerlab-andes"
python="${PYTHON:-python3}"

if ! command -v "$python" >/dev/null; then
    echo "setup-andes: $python not found; install Python 3.11 or newer (Debian: apt-get install python3 python3-venv)" >&2
    exit 1
fi
if ! "$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
    echo "setup-andes: $("$python" --version) is too old; the pinned lock (numpy 2.4) needs Python 3.11 or newer (set PYTHON=python3.11)" >&2
    exit 1
fi
if ! "$python" -m venv "$venv"; then
    echo "setup-andes: could not create a venv at $venv (Debian: apt-get install python3-venv)" >&2
    exit 1
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-compile --no-deps -r "$pkg/requirements.lock"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e "$pkg"
"$venv/bin/python" -m powerlab_andes version
echo "setup-andes: ready; interpreter $venv/bin/python"
