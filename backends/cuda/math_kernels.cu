// CUDA kernels of bias_add and bias_add_grad, and their launchers.
#include <algorithm>

#include "tower/backends/cuda/math_launchers.h"
#include "tower/backends/cuda/launch.cuh"

namespace tower::cuda {

namespace {

// Half types add in float and round once (Compute<T>, launch.cuh).
template <typename T>
__global__ void bias_add_kernel(const T* x, const T* bias, T* y, std::int64_t n, std::int64_t c, bool relu) {
  using C = Compute<T>;
  TOWER_GRID_STRIDE(i, n) {
    const C v = static_cast<C>(x[i]) + static_cast<C>(bias[i % c]);
    y[i] = T(relu && v < C(0) ? C(0) : v);  // as the relu kernel
  }
}

// One block per column: its threads sum strided rows, then a shared-memory tree adds the partial
// sums (deterministic: the same order every run).
template <typename T>
__global__ void column_sum_kernel(const T* dy, T* db, std::int64_t rows, std::int64_t c) {
  __shared__ T partial[kThreads];
  for (std::int64_t col = blockIdx.x; col < c; col += gridDim.x) {
    T sum = 0;
    for (std::int64_t r = threadIdx.x; r < rows; r += blockDim.x) sum += dy[r * c + col];
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
      __syncthreads();
    }
    if (threadIdx.x == 0) db[col] = partial[0];
    __syncthreads();
  }
}

}  // namespace

template <typename T>
cudaError_t launch_bias_add(const T* x, const T* bias, T* y, std::int64_t rows, std::int64_t c, bool relu,
                            cudaStream_t stream) {
  const std::int64_t n = rows * c;
  if (n == 0) return cudaSuccess;
  bias_add_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(x, bias, y, n, c, relu);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_bias_add_grad(const T* dy, T* db, std::int64_t rows, std::int64_t c, cudaStream_t stream) {
  if (c == 0) return cudaSuccess;
  const unsigned blocks = static_cast<unsigned>(std::min<std::int64_t>(c, 65535));
  column_sum_kernel<T><<<blocks, kThreads, 0, stream>>>(dy, db, rows, c);
  return cudaGetLastError();
}

template cudaError_t launch_bias_add<float>(const float*, const float*, float*, std::int64_t, std::int64_t, bool,
                                            cudaStream_t);
template cudaError_t launch_bias_add<double>(const double*, const double*, double*, std::int64_t, std::int64_t, bool,
                                             cudaStream_t);
template cudaError_t launch_bias_add<float16_t>(const float16_t*, const float16_t*, float16_t*, std::int64_t,
                                                std::int64_t, bool, cudaStream_t);
template cudaError_t launch_bias_add<bfloat16_t>(const bfloat16_t*, const bfloat16_t*, bfloat16_t*, std::int64_t,
                                                 std::int64_t, bool, cudaStream_t);
template cudaError_t launch_bias_add_grad<float>(const float*, float*, std::int64_t, std::int64_t, cudaStream_t);
template cudaError_t launch_bias_add_grad<double>(const double*, double*, std::int64_t, std::int64_t, cudaStream_t);

}  // namespace tower::cuda
