// CUDA kernels of the reductions over any axes, and their launcher.
#include <algorithm>
#include <cfloat>

#include "backends/cuda/reduce_launchers.h"
#include "backends/cuda/launch.cuh"

namespace tower::cuda {

namespace {

template <typename T>
__device__ T lowest();
template <>
__device__ float lowest<float>() { return -FLT_MAX; }
template <>
__device__ double lowest<double>() { return -DBL_MAX; }

template <ReduceOp op, typename T>
__device__ T combine(T a, T b) {
  if constexpr (op == ReduceOp::max) return b > a ? b : a;
  else return a + b;
}

template <ReduceOp op, typename T>
__global__ void reduce_kernel(const T* x, T* y, ReduceAxes axes) {
  __shared__ T partial[kThreads];
  const T init = op == ReduceOp::max ? lowest<T>() : T(0);
  for (std::int64_t o = blockIdx.x; o < axes.outputs; o += gridDim.x) {
    const std::int64_t base = strided_offset(o, axes.kept_rank, axes.kept_dims, axes.kept_strides);
    T acc = init;
    for (std::int64_t r = threadIdx.x; r < axes.reduced; r += blockDim.x)
      acc = combine<op>(acc, x[base + strided_offset(r, axes.reduced_rank, axes.reduced_dims, axes.reduced_strides)]);
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half) partial[threadIdx.x] = combine<op>(partial[threadIdx.x], partial[threadIdx.x + half]);
      __syncthreads();
    }
    if (threadIdx.x == 0)
      y[o] = op == ReduceOp::mean ? partial[0] / static_cast<T>(axes.reduced > 0 ? axes.reduced : 1) : partial[0];
    __syncthreads();
  }
}

}  // namespace

template <typename T>
cudaError_t launch_reduce(ReduceOp op, const T* x, T* y, const ReduceAxes& axes, cudaStream_t stream) {
  if (axes.outputs == 0) return cudaSuccess;
  const unsigned blocks = static_cast<unsigned>(std::min<std::int64_t>(axes.outputs, 65535));
  switch (op) {
    case ReduceOp::sum: reduce_kernel<ReduceOp::sum, T><<<blocks, kThreads, 0, stream>>>(x, y, axes); break;
    case ReduceOp::mean: reduce_kernel<ReduceOp::mean, T><<<blocks, kThreads, 0, stream>>>(x, y, axes); break;
    case ReduceOp::max: reduce_kernel<ReduceOp::max, T><<<blocks, kThreads, 0, stream>>>(x, y, axes); break;
  }
  return cudaGetLastError();
}

template cudaError_t launch_reduce<float>(ReduceOp, const float*, float*, const ReduceAxes&, cudaStream_t);
template cudaError_t launch_reduce<double>(ReduceOp, const double*, double*, const ReduceAxes&, cudaStream_t);

}  // namespace tower::cuda
