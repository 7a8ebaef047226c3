#!/usr/bin/env bash
# The README's second command (and CI's): installs what is missing, builds, runs every test.
# GPU tests report "skipped" when no CUDA device is visible. Each phase prints how long it took
# (docs/benchmarks.md, "CI run": the budget is 35 minutes for a clean clone on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
phase_start=$SECONDS
phase_done() { echo "test.sh: $1 took $((SECONDS - phase_start)) s"; phase_start=$SECONDS; }
scripts/install_deps.sh
# AUTO: the CUDA backend is compiled whenever the toolkit is there, also in a build/ that
# scripts/demo.sh configured without it.
scripts/build.sh -DTOWER_CUDA=AUTO "$@"
phase_done "the build (build/)"
ctest --test-dir build --output-on-failure -j "$(nproc)"
phase_done "ctest"
# The unit suites again under AddressSanitizer and UBSan (clang CPU build in build-asan/, the tree
# scripts/asan_tree.sh describes; any report fails).
# TOWER_SANITIZE=0 skips it.
if [ "${TOWER_SANITIZE:-1}" != 0 ]; then scripts/sanitize.sh; phase_done "scripts/sanitize.sh"; fi
# A short, deterministic libFuzzer run of the file readers (docs/fuzzing.md; the targets link
# build-asan/'s library). TOWER_FUZZ_SHORT=0 skips it.
if [ "${TOWER_FUZZ_SHORT:-1}" != 0 ]; then scripts/fuzz.sh short; phase_done "scripts/fuzz.sh short"; fi
echo "test.sh: all phases took $SECONDS s"
