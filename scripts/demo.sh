#!/usr/bin/env bash
# The README's first command: installs what is missing (Fashion-MNIST included), builds, and trains
# Keras's mnist_mlp example on Fashion-MNIST (pass other mnist_mlp options through, e.g. --epochs 20).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh
build/apps/mnist_mlp --epochs 5 "$@"
