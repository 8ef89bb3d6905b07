#!/usr/bin/env bash
# Fuzzes the campaign parser, the run-directory readers (raw samples,
# edges, collectives) and collation of damaged run directories for FUZZ_SECS seconds each (default 600) with proptest,
# in release mode. Prints how many cases each target ran.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS=${FUZZ_SECS:-600}
[ -f .ci/nvrtc.env ] && . .ci/nvrtc.env
export POWERLAB_FUZZ_SECS=$SECS
cargo test --release --locked -p powerlab-campaign --test main fuzz:: -- --nocapture --test-threads 2 2>&1 | grep -E "campaign parser|test result|panicked"
cargo test --release --locked -p powerlab-collate --test main fuzz_raw:: -- --nocapture 2>&1 | grep -E "run-directory readers|test result|panicked"
cargo test --release --locked -p powerlab --test main fuzz_damaged:: -- --nocapture 2>&1 | grep -E "damaged run directories|test result|panicked"
