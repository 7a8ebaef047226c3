#!/usr/bin/env bash
# Configures and builds tower in build/ (Release). Extra arguments go to cmake's configure step,
# e.g. scripts/build.sh -DTOWER_CUDA=OFF or -DCMAKE_CUDA_ARCHITECTURES=90, except `--target NAME`
# (repeatable), which builds only NAME and what it needs (scripts/demo.sh: --target train_mnist).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ccache.sh
configure=()
targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --target) targets+=(--target "${2:?scripts/build.sh: --target needs a name}"); shift 2 ;;
    *) configure+=("$1"); shift ;;
  esac
done
cmake -S . -B build -G Ninja "${ccache_launcher[@]}" "${configure[@]}"
cmake --build build -j "$(nproc)" "${targets[@]}"
