#!/usr/bin/env bash
# Builds the GPU test programs for sm_90 (H100/H200) into build-gpu/ and gathers what the device
# machine needs to run them into gpu-pack/ (the binaries, and the non-CUDA shared libraries they use:
# the device has CUDA 13 but not Debian's OpenBLAS, HDF5 or fmt). Carry gpu-pack with the `device`
# tool and run scripts/gpu/run_tests.sh there. Usage: scripts/gpu/package.sh [targets...]
set -euo pipefail
cd "$(dirname "$0")/../.."
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(test_cuda test_cuda_logical test_cuda_nn)
cmake -S . -B build-gpu -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
  -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache > /dev/null
ninja -C build-gpu "${targets[@]}"
rm -rf gpu-pack && mkdir -p gpu-pack/lib
for t in "${targets[@]}"; do cp "$(find build-gpu -name "$t" -type f -perm -u+x | head -1)" gpu-pack/; done
# Shared libraries except the C library's and the CUDA driver's/toolkit's own.
for bin in gpu-pack/*; do
  [ -f "$bin" ] || continue
  ldd "$bin" | awk '/=> \// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libcuda.so*|libcudart*|libcublas*|libcudnn*|libnccl*) ;;
      *) cp -Ln "$lib" gpu-pack/lib/ ;;
    esac
  done
done
du -sh gpu-pack
