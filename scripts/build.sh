#!/usr/bin/env bash
# Configures and builds tower in build/ (Release). Extra arguments go to cmake's configure step,
# e.g. scripts/build.sh -DTOWER_CUDA=OFF or -DCMAKE_CUDA_ARCHITECTURES=90.
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build -G Ninja "${launcher[@]}" "$@"
cmake --build build -j "$(nproc)"
