#!/usr/bin/env bash
# Installs every Debian package tower's build needs. Idempotent: installs only what is missing;
# uses sudo when not root. The CUDA toolkit is optional (the build enables CUDA when nvcc exists).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache
  libopenblas-dev libhdf5-dev zlib1g-dev libboost-program-options-dev
  doctest-dev nlohmann-json3-dev libfmt-dev
  dataset-fashion-mnist
  openmpi-bin libopenmpi-dev  # multi-worker jobs (mpirun) and their tests
  # The sanitizer tree (scripts/asan_tree.sh: the ASan/UBSan suites and libFuzzer's targets). clang 16: the
  # first that captures structured bindings in lambdas (C++20), as the suites do; llvm-16: its symbolizer.
  clang-16 libclang-rt-16-dev llvm-16
  libdnnl-dev  # oneDNN: the CPU convolutions and GEMMs (backends/cpu/onednn.cpp)
  graphviz libcairo2-dev  # utils::plot_model runs Graphviz's dot; utils::plot_history draws with cairo
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install_deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
