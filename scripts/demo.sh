#!/usr/bin/env bash
# The README's first command: installs what is missing, fetches the data (Fashion-MNIST from Debian's
# package; MNIST from the public mirrors when online), builds train_mnist and only what it needs (no
# tests, no other programs: scripts/build.sh builds the rest), and trains MNIST with apps/train_mnist
# (pass its options through, e.g. scripts/demo.sh --model cnn --epochs 2; see train_mnist --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/fetch_data.sh
configure=()
# A first build on a machine without a visible GPU skips the CUDA backend even when the toolkit is
# installed: train_mnist would not use it, and its kernels are most of a first build's time. An
# existing build/ keeps its own choice; scripts/build.sh -DTOWER_CUDA=AUTO turns it back on.
if [ ! -f build/CMakeCache.txt ] && ! { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }; then
  echo "demo: no GPU visible: building the CPU backend only"
  configure+=(-DTOWER_CUDA=OFF)
fi
scripts/build.sh "${configure[@]}" --target train_mnist
# Five epochs unless the caller chose (train_mnist takes each option once).
epochs=(--epochs 5)
for arg in "$@"; do
  case $arg in --epochs | --epochs=*) epochs=() ;; esac
done
build/apps/train_mnist "${epochs[@]}" "$@"
