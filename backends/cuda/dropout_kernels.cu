// The CUDA inverted-dropout and random-tensor kernels: one Philox block per four elements, as the CPU
// kernels draw.
#include <algorithm>

#include "tower/backends/cuda/dropout_launchers.h"
#include "tower/backends/cuda/launch.cuh"
#include "tower/core/philox.h"

namespace tower::cuda {

namespace {

// quads: Philox blocks covering elements first .. first + n - 1 (one more than n needs when first
// is not a multiple of 4).
template <typename T>
__global__ void dropout_kernel(const T* x, T* y, T* mask, std::int64_t n, const std::int64_t* row_offset,
                               std::int64_t row_elements, std::int64_t quads, double keep, T scale,
                               std::uint64_t seed, std::uint64_t counter, const std::uint64_t* counter_at) {
  if (counter_at) counter = *counter_at;  // a recorded step's counter, written before each replay
  const std::int64_t first = row_offset ? *row_offset * row_elements : 0, end = first + n;
  TOWER_GRID_STRIDE(j, quads) {
    const std::int64_t q = first / 4 + j;
    const PhiloxBlock block = philox4x32_block(seed, counter, static_cast<std::uint64_t>(q));
    const std::int64_t g_begin = 4 * q > first ? 4 * q : first, g_end = 4 * q + 4 < end ? 4 * q + 4 : end;
    for (std::int64_t g = g_begin; g < g_end; ++g) {
      const std::int64_t i = g - first;
      const double u = block.word[g - 4 * q] * kPhiloxInv2Pow32;  // as uniform_at
      mask[i] = u < keep ? scale : T(0);
      y[i] = x[i] * mask[i];
    }
  }
}

// y[i] = lo + width u (uniform) or lo + width z (normal: philox_normal) for element g = first + i.
template <typename T>
__global__ void random_kernel(T* y, std::int64_t n, const std::int64_t* row_offset, std::int64_t row_elements,
                              std::int64_t quads, bool normal, double lo, double width, std::uint64_t seed,
                              std::uint64_t counter, const std::uint64_t* counter_at) {
  if (counter_at) counter = *counter_at;
  const std::int64_t first = row_offset ? *row_offset * row_elements : 0, end = first + n;
  TOWER_GRID_STRIDE(j, quads) {
    const std::int64_t q = first / 4 + j;
    const PhiloxBlock block = philox4x32_block(seed, counter, static_cast<std::uint64_t>(q));
    const std::int64_t g_begin = 4 * q > first ? 4 * q : first, g_end = 4 * q + 4 < end ? 4 * q + 4 : end;
    for (std::int64_t g = g_begin; g < g_end; ++g) {
      const int w = static_cast<int>(g - 4 * q);
      const double v = normal ? philox_normal(block, w) : block.word[w] * kPhiloxInv2Pow32;
      y[g - first] = static_cast<T>(lo + width * v);
    }
  }
}

}  // namespace

template <typename T>
cudaError_t launch_random(T* y, std::int64_t n, const std::int64_t* row_offset, std::int64_t row_elements,
                          bool normal, double lo, double width, std::uint64_t seed, std::uint64_t counter,
                          const std::uint64_t* counter_at, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const std::int64_t quads = (n + 3) / 4 + (row_offset ? 1 : 0);
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((quads + kThreads - 1) / kThreads, 65535));
  random_kernel<T><<<blocks, kThreads, 0, stream>>>(y, n, row_offset, row_elements, quads, normal, lo, width, seed,
                                                    counter, counter_at);
  return cudaGetLastError();
}

template cudaError_t launch_random<float>(float*, std::int64_t, const std::int64_t*, std::int64_t, bool, double,
                                          double, std::uint64_t, std::uint64_t, const std::uint64_t*, cudaStream_t);
template cudaError_t launch_random<double>(double*, std::int64_t, const std::int64_t*, std::int64_t, bool, double,
                                           double, std::uint64_t, std::uint64_t, const std::uint64_t*, cudaStream_t);

template <typename T>
cudaError_t launch_dropout(const T* x, T* y, T* mask, std::int64_t n, const std::int64_t* row_offset,
                           std::int64_t row_elements, double keep, std::uint64_t seed, std::uint64_t counter,
                           const std::uint64_t* counter_at, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const std::int64_t quads = (n + 3) / 4 + (row_offset ? 1 : 0);
  const auto blocks = static_cast<unsigned>(std::min<std::int64_t>((quads + kThreads - 1) / kThreads, 65535));
  dropout_kernel<T><<<blocks, kThreads, 0, stream>>>(x, y, mask, n, row_offset, row_elements, quads, keep,
                                                     static_cast<T>(1.0 / keep), seed, counter, counter_at);
  return cudaGetLastError();
}

template cudaError_t launch_dropout<float>(const float*, float*, float*, std::int64_t, const std::int64_t*,
                                           std::int64_t, double, std::uint64_t, std::uint64_t, const std::uint64_t*, cudaStream_t);
template cudaError_t launch_dropout<double>(const double*, double*, double*, std::int64_t, const std::int64_t*,
                                            std::int64_t, double, std::uint64_t, std::uint64_t, const std::uint64_t*, cudaStream_t);

}  // namespace tower::cuda
