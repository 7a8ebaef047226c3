#!/usr/bin/env bash
# ThreadSanitizer run of the suites with concurrent device lanes (the executor, parallel/): a CPU-only
# build in build-tsan/. ASLR is turned off for the run (setarch -R): this kernel's mmap layout makes
# TSan's shadow mapping fail otherwise. Usage: scripts/tsan.sh [test names...]
set -euo pipefail
cd "$(dirname "$0")/.."
tests=("$@")
[ ${#tests[@]} -eq 0 ] && tests=(test_core test_parallel)
source scripts/ccache.sh
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTOWER_CUDA=OFF \
  -DCMAKE_CXX_FLAGS=-fsanitize=thread -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread "${ccache_launcher[@]}" > /dev/null
cmake --build build-tsan -j "$(nproc)" --target "${tests[@]}"
for t in "${tests[@]}"; do
  echo "== $t"
  TSAN_OPTIONS="halt_on_error=1" setarch "$(uname -m)" -R "build-tsan/tests/$t"
done
