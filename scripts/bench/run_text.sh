#!/usr/bin/env bash
# keras.io's transformer text classifier and the Conv1D one (batch 32, 200 tokens, 20,000 words):
# training throughput in tower, PyTorch (TORCH_PYTHON: a venv with torch 2.x from PyPI, default
# /tmp/venv-torch/bin/python) and tf.keras (TF_PYTHON, default /tmp/venv-tf/bin/python), one after
# the other on the same threads. Usage: scripts/bench/run_text.sh [build dir]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-build}"
threads="${THREADS:-2}"
torch_python="${TORCH_PYTHON:-/tmp/venv-torch/bin/python}"
tf_python="${TF_PYTHON:-/tmp/venv-tf/bin/python}"
export TOWER_CPU_THREADS="$threads" OMP_NUM_THREADS="$threads"
for model in transformer conv1d; do
  "$build/apps/bench_text" --model "$model"
  if [ -x "$torch_python" ]; then "$torch_python" "$here/text_torch.py" --model "$model" --threads "$threads"; fi
  if [ -x "$tf_python" ]; then "$tf_python" "$here/text_keras.py" --model "$model" --threads "$threads" 2>/dev/null; fi
done
