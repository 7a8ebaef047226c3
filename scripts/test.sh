#!/usr/bin/env bash
# The README's second command (and CI's): installs what is missing, builds, runs every test.
# GPU tests report "skipped" when no CUDA device is visible.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
# AUTO: the CUDA backend is compiled whenever the toolkit is there, also in a build/ that
# scripts/demo.sh configured without it.
scripts/build.sh -DTOWER_CUDA=AUTO "$@"
ctest --test-dir build --output-on-failure -j "$(nproc)"
# The unit suites again under AddressSanitizer and UBSan (CPU build in build-asan/; any report fails).
# TOWER_SANITIZE=0 skips it.
if [ "${TOWER_SANITIZE:-1}" != 0 ]; then scripts/sanitize.sh; fi
# A short, deterministic libFuzzer run of the file readers (docs/fuzzing.md; clang build in
# build-fuzz/). TOWER_FUZZ_SHORT=0 skips it.
if [ "${TOWER_FUZZ_SHORT:-1}" != 0 ]; then scripts/fuzz.sh short; fi
