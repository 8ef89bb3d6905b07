#!/usr/bin/env bash
# Issue 16 in CI: the node power sources against real services. Installs
# the OpenStack sushy-tools Redfish emulators (sushy-static, sushy-emulator)
# from PyPI into a virtualenv, then runs the ignored tests of
# crates/powerlab/tests/node_power.rs, which start the emulators (HTTP,
# HTTPS with a self-signed certificate, basic auth), a Prometheus exporter
# and the simulated node in real time. Reuses the workspace's test build.
set -euo pipefail
cd "$(dirname "$0")/../.."

venv="${POWERLAB_SUSHY_VENV:-${TMPDIR:-/tmp}/powerlab-sushy-venv}"
if [ ! -x "$venv/bin/sushy-static" ] || [ ! -x "$venv/bin/sushy-emulator" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'sushy-tools>=2.0' bcrypt
fi
command -v openssl >/dev/null || { echo "ci-redfish: openssl is needed for the self-signed certificate" >&2; exit 1; }
"$venv/bin/sushy-static" --help >/dev/null
"$venv/bin/pip" show sushy-tools | sed -n 's/^Version: /sushy-tools /p'

POWERLAB_SUSHY_BIN="$venv/bin" cargo test --locked -p powerlab --test main node_power:: -- --ignored --test-threads 1
