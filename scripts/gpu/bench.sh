#!/usr/bin/env bash
# On the device machine: the GPU figures of docs/benchmarks.md. GEMM TFLOP/s through tower beside
# cuBLAS alone; mnist_mlp and mnist_cnn training samples/s and peak GPU memory at batch 128 and 1024
# in tower and, when the machine's Python has a CUDA PyTorch, in PyTorch eager on the same data
# (the 10,000 MNIST digits packed by package.sh); the overhead of 1, 2 and 3 logical towers on the
# one GPU against the plain model at the same global batch, and bench_gpus on 3 logical GPUs; on a
# machine with two or more GPUs, bench_gpus across them with NCCL and with the sum on one GPU.
# Mixed precision: mnist_cnn under mixed_float16 and mixed_bfloat16 and in TF32, and a ResNet-20 on
# CIFAR-size random images at batch 512 in float32, TF32, mixed_float16 and mixed_bfloat16 beside PyTorch
# eager and torch.compile in the same four (AMP for the half ones); torch.compile for the mnist models too.
# Each tower mnist line runs twice: --cuda-graphs 1 (steady-state steps replayed as CUDA graphs, the
# default) and --cuda-graphs 0 (the same steps launched kernel by kernel): their ratio is what the graphs
# win; the line says which it is ("cuda-graphs 1"). test_cuda_graph prints the same for a small model.
# Prints and writes $OUT/bench.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/unpack.sh
ls gpu-pack/data/*-ubyte.gz > /dev/null 2>&1 || { echo "bench: no MNIST digits in gpu-pack/data (package.sh packs them)" >&2; exit 2; }
out="${OUT:-.}/bench.txt"
epochs="${EPOCHS:-5}"
{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  tower_run gpu-pack/bench_gemm
  torch_ok=0
  if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else "torch sees no GPU")' 2>"${OUT:-.}/torch.err"; then
    torch_ok=1
  else
    echo "no PyTorch comparison: $(tail -n 1 "${OUT:-.}/torch.err")"
  fi
  [ $torch_ok = 1 ] && python3 -c 'import torch; print("pytorch", torch.__version__, "cuda", torch.version.cuda)'
  for model in mlp cnn; do
    for batch in 128 1024; do
      for graphs in 1 0; do
        tower_run gpu-pack/bench_mnist --device cuda:0 --model $model --batch-size $batch --epochs "$epochs" \
          --data gpu-pack/data --cuda-graphs $graphs
        tower_run gpu-pack/bench_mnist --device cuda:0 --model $model --batch-size $batch --epochs "$epochs" \
          --data gpu-pack/data --input dataset --cuda-graphs $graphs
      done
      if [ $torch_ok = 1 ]; then
        for compile in "" --compile; do
          python3 scripts/bench/mnist_torch.py --device cuda --model $model --batch-size $batch --epochs "$epochs" \
            --data gpu-pack/data --threads 8 $compile
        done
      fi
    done
  done
  for batch in 128 1024; do
    for how in "--tf32 1" "--dtype-policy mixed_float16" "--dtype-policy mixed_bfloat16"; do
      tower_run gpu-pack/bench_mnist --device cuda:0 --model cnn --batch-size $batch --epochs "$epochs" \
        --data gpu-pack/data $how
    done
  done
  for how in "" "--tf32 1" "--dtype-policy mixed_float16" "--dtype-policy mixed_bfloat16"; do
    tower_run gpu-pack/bench_resnet --device cuda:0 --batch-size 512 --samples 20480 --epochs "$epochs" $how
  done
  if [ $torch_ok = 1 ]; then
    for compile in "" --compile; do
      for how in "" --tf32 "--amp float16" "--amp bfloat16"; do
        python3 scripts/bench/resnet_torch.py --device cuda --batch-size 512 --samples 20480 --epochs "$epochs" \
          --threads 8 $compile $how
      done
    done
  fi
  # Towers on one GPU split into N logical GPUs, global batch 384 (shares of 384/N), mirrored variables.
  tower_run gpu-pack/bench_mnist --device cuda:0 --model cnn --batch-size 384 --epochs "$epochs" --data gpu-pack/data
  for n in 1 2 3; do
    towers=$(seq -s ' ' -f 'cuda:%g' 0 $((n - 1)))
    tower_run gpu-pack/bench_mnist --virtual-gpus $n --device cuda:0 --towers $towers --model cnn --batch-size 384 \
      --epochs "$epochs" --data gpu-pack/data
  done
  tower_run gpu-pack/bench_gpus --virtual-gpus 3 --gpus 3 --batches 128 --model cnn
  gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
  if [ "$gpus" -ge 2 ]; then
    for how in all_reduce one_device; do
      tower_run gpu-pack/bench_gpus --gpus "$gpus" --batches 256 --model cnn --cross-device-ops $how
    done
  fi
} 2>&1 | tee "$out"
