#!/usr/bin/env bash
# LSTM(128) and GRU(128) training throughput (batch 128, 50 steps) in tower, PyTorch (TORCH_PYTHON: a
# venv with torch 2.x from PyPI, default /tmp/venv-torch/bin/python) and tf.keras (TF_PYTHON, default
# /tmp/venv-tf/bin/python), one after the other on the same threads. Usage: scripts/bench/run_rnn.sh [build dir]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-build}"
threads="${THREADS:-2}"
torch_python="${TORCH_PYTHON:-/tmp/venv-torch/bin/python}"
tf_python="${TF_PYTHON:-/tmp/venv-tf/bin/python}"
export TOWER_CPU_THREADS="$threads" OMP_NUM_THREADS="$threads"
for cell in lstm gru; do
  "$build/apps/bench_rnn" --cell "$cell"
  if [ -x "$torch_python" ]; then "$torch_python" "$here/rnn_torch.py" --cell "$cell" --threads "$threads"; fi
  if [ -x "$tf_python" ]; then "$tf_python" "$here/rnn_keras.py" --cell "$cell" --threads "$threads" 2>/dev/null; fi
done
