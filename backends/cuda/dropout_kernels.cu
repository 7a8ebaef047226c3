// The CUDA inverted-dropout kernel: one Philox block per four elements, as the CPU kernel draws.
#include <algorithm>

#include "backends/cuda/dropout_launchers.h"
#include "backends/cuda/launch.cuh"
#include "core/philox.h"

namespace tower::cuda {

namespace {

template <typename T>
__global__ void dropout_kernel(const T* x, T* y, T* mask, std::int64_t n, double keep, T scale, std::uint64_t seed,
                               std::uint64_t counter) {
  const std::int64_t quads = (n + 3) / 4;
  TOWER_GRID_STRIDE(q, quads) {
    const PhiloxBlock block = philox4x32_block(seed, counter, static_cast<std::uint64_t>(q));
    for (int k = 0; k < 4 && 4 * q + k < n; ++k) {
      const std::int64_t i = 4 * q + k;
      const double u = block.word[k] * kPhiloxInv2Pow32;  // as uniform_at
      mask[i] = u < keep ? scale : T(0);
      y[i] = x[i] * mask[i];
    }
  }
}

}  // namespace

template <typename T>
cudaError_t launch_dropout(const T* x, T* y, T* mask, std::int64_t n, double keep, std::uint64_t seed,
                           std::uint64_t counter, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const std::int64_t quads = (n + 3) / 4;
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((quads + kThreads - 1) / kThreads, 65535));
  dropout_kernel<T><<<blocks, kThreads, 0, stream>>>(x, y, mask, n, keep, static_cast<T>(1.0 / keep), seed, counter);
  return cudaGetLastError();
}

template cudaError_t launch_dropout<float>(const float*, float*, float*, std::int64_t, double, std::uint64_t,
                                           std::uint64_t, cudaStream_t);
template cudaError_t launch_dropout<double>(const double*, double*, double*, std::int64_t, double, std::uint64_t,
                                            std::uint64_t, cudaStream_t);

}  // namespace tower::cuda
