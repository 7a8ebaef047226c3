#!/usr/bin/env bash
# Fills data/ with MNIST-style IDX sets for the examples and train_mnist:
#   data/fashion-mnist  from Debian's dataset-fashion-mnist package (installed when missing);
#   data/mnist          from the public MNIST mirrors, when this machine is online (checked by MD5).
# Any directory holding the four IDX files works with --data DIR; this script is only a convenience.
# Usage: scripts/fetch_data.sh [DEST]   (default: data/ in the repository)
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${1:-data}"
mkdir -p "$dest"

# Fashion-MNIST: Debian ships it.
fashion=/usr/share/datasets/fashion-mnist
if [ ! -d "$fashion" ]; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get install -y -qq --no-install-recommends dataset-fashion-mnist
fi
mkdir -p "$dest/fashion-mnist"
cp -u "$fashion"/*-ubyte.gz "$dest/fashion-mnist/"
echo "fetch_data: Fashion-MNIST in $dest/fashion-mnist"

# MNIST: the original files, from the first mirror that answers.
declare -A md5=(
  [train-images-idx3-ubyte.gz]=f68b3c2dcbeaaa9fbdd348bbdeb94873
  [train-labels-idx1-ubyte.gz]=d53e105ee54ea40749a09fcbcd1e9432
  [t10k-images-idx3-ubyte.gz]=9fb629c4189551a2d022fa330f9573f3
  [t10k-labels-idx1-ubyte.gz]=ec29112dd5afa0611ce80d1b7f02629c
)
mirrors=(
  https://ossci-datasets.s3.amazonaws.com/mnist
  https://storage.googleapis.com/cvdf-datasets/mnist
)
mkdir -p "$dest/mnist"
for file in "${!md5[@]}"; do
  target="$dest/mnist/$file"
  if [ -f "$target" ] && echo "${md5[$file]}  $target" | md5sum -c --quiet 2>/dev/null; then continue; fi
  ok=""
  for mirror in "${mirrors[@]}"; do
    # Download beside the target and rename only a verified file: a failed fetch never leaves a torn one.
    if curl -fsSL --max-time 120 -o "$target.part" "$mirror/$file" &&
       echo "${md5[$file]}  $target.part" | md5sum -c --quiet 2>/dev/null; then
      mv "$target.part" "$target"; ok=1; break
    fi
    rm -f "$target.part"
  done
  if [ -z "$ok" ]; then
    echo "fetch_data: could not download MNIST's $file (offline?); use Fashion-MNIST or pass --data DIR" >&2
    rmdir "$dest/mnist" 2>/dev/null || true
    exit 0
  fi
done
echo "fetch_data: MNIST in $dest/mnist"
