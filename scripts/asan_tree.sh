#!/usr/bin/env bash
# Sourced by scripts/sanitize.sh and scripts/fuzz.sh: the one sanitizer tree, build-asan/, that both use.
# clang, CPU only, AddressSanitizer + UBSan with -fno-sanitize-recover=all (any report fails), and the
# library also instrumented for libFuzzer (TOWER_FUZZ=ON: coverage and comparison tracing, outside
# backends/: tests/fuzz/coverage_ignorelist.txt), so that the unit suites and the fuzz targets link the
# same libtower: CI compiles the library twice (this tree and the regular one), not three times. The
# library at -O1 -g1: a quicker build than -O2 -g, with stacks that still name every function, file and
# line. The test sources at -O0 (TOWER_TEST_COMPILE_OPTIONS): their loops are not where the time goes.
# Asserts stay on (no NDEBUG).
asan_build=build-asan

# clang 16, libFuzzer's runtime and llvm-symbolizer (Debian: clang-16, libclang-rt-16-dev, llvm-16), installed
# when missing. 16: the first clang that captures structured bindings in lambdas (C++20), as the suites do.
# The symbolizer: clang 16's runtimes look for their own version's; without it reports carry bare
# addresses, and scripts/fuzz.sh cannot tell a libhdf5 finding from tower's.
clang_version=16
symbolizer=/usr/lib/llvm-$clang_version/bin/llvm-symbolizer
export ASAN_SYMBOLIZER_PATH=$symbolizer
install_clang() {
  local probe='extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }'
  links() { command -v "clang++-$clang_version" >/dev/null &&
            echo "$probe" | "clang++-$clang_version" -x c++ -fsanitize=fuzzer - -o /dev/null 2>/dev/null; }
  links && [ -x "$symbolizer" ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "asan_tree.sh: installing clang-$clang_version libclang-rt-$clang_version-dev llvm-$clang_version"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "clang-$clang_version" \
    "libclang-rt-$clang_version-dev" "llvm-$clang_version"
  links || { echo "asan_tree.sh: clang++-$clang_version -fsanitize=fuzzer does not link; install libFuzzer" >&2; return 1; }
}

configure_asan_tree() {
  install_clang
  local flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
  source scripts/ccache.sh
  # TOWER_INSTALL=OFF: the installed package is checked by the regular build.
  cmake -S . -B "$asan_build" -G Ninja "${ccache_launcher[@]}" -DCMAKE_C_COMPILER="clang-$clang_version" \
    -DCMAKE_CXX_COMPILER="clang++-$clang_version" \
    -DTOWER_CUDA=OFF -DTOWER_INSTALL=OFF -DTOWER_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DTOWER_TEST_COMPILE_OPTIONS=-O0 -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" >/dev/null
}
