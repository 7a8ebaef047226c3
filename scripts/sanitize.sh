#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer run of the unit suites (CI runs it from scripts/test.sh):
# a CPU-only clang build in build-asan/ (scripts/asan_tree.sh; scripts/fuzz.sh links its targets in the
# same tree) with -fno-sanitize-recover=all, so that any report (a leak, an out-of-bounds access, a
# signed overflow, a misaligned or null access) fails its test. The apps the tests start (train_mnist,
# bench_gpus) are built the same way. Usage: scripts/sanitize.sh [ctest args...]
# (default: every test labelled unit; docs/refusals.md, "How it is tested").
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/asan_tree.sh
configure_asan_tree
build=$asan_build
# By default only what the unit suites run (target unit_tests: no benchmarks, no MPI suites).
if [ $# -eq 0 ]; then
  cmake --build "$build" -j "$(nproc)" --target unit_tests
else
  cmake --build "$build" -j "$(nproc)"
fi
# Leaks inside libhdf5 on corrupt files are libhdf5's (docs/fuzzing.md); tower's own leaks still fail.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
if [ $# -eq 0 ]; then set -- -L unit -LE slow; fi
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" "$@"
