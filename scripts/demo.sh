#!/usr/bin/env bash
# The README's first command: installs what is missing, fetches the data (Fashion-MNIST from Debian's
# package; MNIST from the public mirrors when online), builds, and trains MNIST with apps/train_mnist
# (pass its options through, e.g. scripts/demo.sh --model cnn --epochs 2; see train_mnist --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/fetch_data.sh
scripts/build.sh
build/apps/train_mnist --epochs 5 "$@"
