#!/usr/bin/env bash
# The live metrics endpoint against a real Prometheus: installs Debian's
# `prometheus` package (its service is never started: the test starts
# /usr/bin/prometheus itself, with a temporary config and storage on a free
# loopback port), then runs the ignored test
# metrics::prometheus_scrapes_a_simulated_run, which scrapes a simulated
# run every 100 ms and checks what Prometheus recorded against the run's
# raw files. A missing Prometheus fails this script; it is never skipped.
set -euo pipefail
cd "$(dirname "$0")/../.."

PROMETHEUS=${POWERLAB_PROMETHEUS:-/usr/bin/prometheus}
if [ ! -x "$PROMETHEUS" ]; then
  echo "installing prometheus (Debian package; its service is not started)" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  # policy-rc.d 101: the package's postinst must not start the service
  # (in a container without systemd it cannot, and CI starts its own).
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod +x /usr/sbin/policy-rc.d
    trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  $SUDO apt-get install -y --no-install-recommends prometheus >/dev/null \
    || { $SUDO apt-get update >/dev/null && $SUDO apt-get install -y --no-install-recommends prometheus >/dev/null; }
fi
if [ ! -x "$PROMETHEUS" ]; then
  echo "error: $PROMETHEUS is missing after installing the prometheus package" >&2
  exit 1
fi
"$PROMETHEUS" --version 2>&1 | head -1
# promtool (same package) evaluates the dashboard's node expression on
# stated series: a rank whose endpoint goes away.
if [ ! -x "$(dirname "$PROMETHEUS")/promtool" ]; then
  echo "error: $(dirname "$PROMETHEUS")/promtool is missing (it comes with the prometheus package)" >&2
  exit 1
fi

# The Grafana dashboard must be JSON Grafana can import.
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["panels"] and d["templating"]["list"], "no panels or variables"' docs/grafana/powerlab.json

# The test binary `cargo test --workspace --locked` built: nothing rebuilds.
POWERLAB_PROMETHEUS="$PROMETHEUS" cargo test --locked -p powerlab --test main \
  metrics::prometheus_scrapes_a_simulated_run -- --ignored --exact --nocapture
