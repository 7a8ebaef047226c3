#!/usr/bin/env bash
# Runs the mnist_mlp / mnist_cnn training benchmark in tower, PyTorch (Debian's python3-torch, run by
# /usr/bin/python3) and
# tf.keras (a venv with tensorflow-cpu: TF_PYTHON, default /work/venv-tf/bin/python) on the same data,
# batch size and thread count, one after the other. Usage: scripts/bench/run_mnist.sh [build dir]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-build}"
threads="${THREADS:-2}"
tf_python="${TF_PYTHON:-/work/venv-tf/bin/python}"
export TOWER_CPU_THREADS="$threads" OMP_NUM_THREADS="$threads"
for model in mlp cnn; do
  samples=$([ "$model" = mlp ] && echo 0 || echo 12800)
  "$build/apps/bench_mnist" --model "$model" --samples "$samples"
  /usr/bin/python3 "$here/mnist_torch.py" --model "$model" --samples "$samples" --threads "$threads"
  if [ -x "$tf_python" ]; then "$tf_python" "$here/mnist_keras.py" --model "$model" --samples "$samples" --threads "$threads" 2>/dev/null; fi
done
