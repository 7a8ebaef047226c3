#!/usr/bin/env bash
# Runs the mnist_mlp / mnist_cnn training benchmark in tower, PyTorch and tf.keras on the same data,
# batch size and thread count, one after the other on the same cores.
#   PyTorch: TORCH_PYTHON (default /tmp/venv-torch/bin/python, torch 2.x from PyPI:
#            python3 -m venv /tmp/venv-torch && /tmp/venv-torch/bin/pip install torch), else Debian's
#            python3-torch through /usr/bin/python3.
#   tf.keras: TF_PYTHON (default /tmp/venv-tf/bin/python, a venv with tensorflow-cpu), skipped if missing.
# The torch venv has no numpy of its own: the tf venv's site-packages lend it theirs.
# Usage: scripts/bench/run_mnist.sh [build dir]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-build}"
threads="${THREADS:-2}"
tf_python="${TF_PYTHON:-/tmp/venv-tf/bin/python}"
torch_python="${TORCH_PYTHON:-/tmp/venv-torch/bin/python}"
[ -x "$torch_python" ] || torch_python=/usr/bin/python3
tf_packages="$(dirname "$(dirname "$tf_python")")/lib/python3.11/site-packages"
export TOWER_CPU_THREADS="$threads" OMP_NUM_THREADS="$threads" TF_CPP_MIN_LOG_LEVEL=3
for model in mlp cnn; do
  samples=$([ "$model" = mlp ] && echo 0 || echo 12800)
  "$build/apps/bench_mnist" --model "$model" --samples "$samples"
  PYTHONPATH="$tf_packages" "$torch_python" "$here/mnist_torch.py" --model "$model" --samples "$samples" --threads "$threads"
  if [ -x "$tf_python" ]; then "$tf_python" "$here/mnist_keras.py" --model "$model" --samples "$samples" --threads "$threads" 2>/dev/null; fi
done
