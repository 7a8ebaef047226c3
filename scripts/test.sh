#!/usr/bin/env bash
# The README's second command (and CI's): installs what is missing, builds, runs every test.
# GPU tests report "skipped" when no CUDA device is visible.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh "$@"
ctest --test-dir build --output-on-failure -j "$(nproc)"
