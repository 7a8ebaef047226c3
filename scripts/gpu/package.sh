#!/usr/bin/env bash
# Builds the GPU test and benchmark programs for sm_90 (H100/H200) into build-gpu/ and packs what the
# device machine needs into gpu-pack.tar.xz: the programs, the non-CUDA shared libraries they use (the
# device has CUDA 13 and cuDNN but not Debian's OpenBLAS, fmt or Boost) and the 10,000 MNIST digits of
# ../shared for the benchmarks. Compressed, because the device tool carries at most 64 MiB.
# Then, from the agent: device run with carry ["gpu-pack.tar.xz"] and
#   scripts/gpu/run_tests.sh      (the gpu-labelled suites)
#   scripts/gpu/bench.sh          (docs/benchmarks.md's GPU figures; writes $OUT/bench.txt)
#   scripts/gpu/sanitize.sh       (each suite under compute-sanitizer memcheck, racecheck, synccheck)
# Usage: scripts/gpu/package.sh [targets...]
set -euo pipefail
cd "$(dirname "$0")/../.."
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(test_cuda test_cuda_logical test_cuda_nn test_cuda_graph test_cuda_half test_towers_gpu bench_mnist bench_gemm bench_gpus bench_resnet)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DTOWER_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  "${launcher[@]}" > /dev/null
ninja -C build-gpu "${targets[@]}"
rm -rf gpu-pack gpu-pack.tar.xz && mkdir -p gpu-pack/lib gpu-pack/data
for t in "${targets[@]}"; do cp "$(find build-gpu -name "$t" -type f -perm -u+x | head -1)" gpu-pack/; done
# Shared libraries except the C library's, the C++ runtime's (the device's libstdc++ is newer than
# Debian 12's, and a packed one would shadow it) and the CUDA driver's/toolkit's own (unpack.sh finds
# those on the device).
for bin in gpu-pack/*; do
  [ -f "$bin" ] || continue
  ldd "$bin" | awk '/=> \// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libstdc++*|libgcc_s*|libcuda.so*|libcudart*|libcublas*|libcudnn*|libnvrtc*|libnccl*) ;;
      *) cp -Ln "$lib" gpu-pack/lib/ ;;
    esac
  done
done
digits=../shared/data/mnist-digits-10k
ls "$digits"/*-ubyte.gz > /dev/null 2>&1 || { echo "package: no MNIST digits in $digits (bench.sh needs them)" >&2; exit 2; }
cp "$digits"/*-ubyte.gz gpu-pack/data/
tar -cf - gpu-pack | xz -T2 -6 > gpu-pack.tar.xz
du -sh gpu-pack gpu-pack.tar.xz
