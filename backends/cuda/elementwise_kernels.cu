// CUDA kernels of the first elementwise ops (fill, scale, add of equal shapes) and their launchers.
#include <algorithm>

#include "backends/cuda/elementwise_launchers.h"

namespace tower::cuda {

namespace {

// Grid-stride loops: any n with a bounded grid.
template <typename T>
__global__ void fill_kernel(T* y, std::int64_t n, T value) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    y[i] = value;
}

template <typename T>
__global__ void scale_kernel(const T* x, T* y, std::int64_t n, T factor) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    y[i] = x[i] * factor;
}

template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* y, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    y[i] = a[i] + b[i];
}

constexpr int kThreads = 256;
unsigned blocks_for(std::int64_t n) {
  return static_cast<unsigned>(std::min<std::int64_t>((n + kThreads - 1) / kThreads, 65535));
}

}  // namespace

template <typename T>
cudaError_t launch_fill(T* y, std::int64_t n, T value, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  fill_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(y, n, value);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_scale(const T* x, T* y, std::int64_t n, T factor, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  scale_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(x, y, n, factor);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_add(const T* a, const T* b, T* y, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  add_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(a, b, y, n);
  return cudaGetLastError();
}

#define TOWER_INSTANTIATE(T)                                                                \
  template cudaError_t launch_fill<T>(T*, std::int64_t, T, cudaStream_t);                   \
  template cudaError_t launch_scale<T>(const T*, T*, std::int64_t, T, cudaStream_t);        \
  template cudaError_t launch_add<T>(const T*, const T*, T*, std::int64_t, cudaStream_t);
TOWER_INSTANTIATE(float)
TOWER_INSTANTIATE(double)
#undef TOWER_INSTANTIATE

}  // namespace tower::cuda
