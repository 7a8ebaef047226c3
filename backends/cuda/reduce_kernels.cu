// CUDA kernels of the reductions over any axes (sum, mean, max), max's gradient and argmax, and their
// launchers. One block per output element combines its reduced elements with cub::BlockReduce.
#include <algorithm>

#include <cub/block/block_reduce.cuh>
#include <cuda/std/limits>

#include "tower/backends/cuda/launch.cuh"
#include "tower/backends/cuda/reduce_launchers.h"

namespace tower::cuda {

namespace {

template <ReduceOp op, typename T>
struct Combine {
  __device__ T operator()(T a, T b) const {
    if constexpr (op == ReduceOp::max) return b > a ? b : a;
    else return a + b;
  }
};

// Where output o's reduced elements start in x, and where its r-th one is from there.
__device__ std::int64_t kept_offset(std::int64_t o, const ReduceAxes& axes) {
  return strided_offset(o, axes.kept_rank, axes.kept_dims, axes.kept_strides);
}
__device__ std::int64_t reduced_offset(std::int64_t r, const ReduceAxes& axes) {
  return strided_offset(r, axes.reduced_rank, axes.reduced_dims, axes.reduced_strides);
}

// Each thread combines a strided share of the reduced elements; BlockReduce combines the threads'
// results in a fixed order (deterministic).
template <ReduceOp op, typename T>
__global__ void reduce_kernel(const T* x, T* y, ReduceAxes axes) {
  using BlockReduce = cub::BlockReduce<T, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  // max starts at -inf for floats (a row of -inf reduces to -inf, not -FLT_MAX), lowest() for integers.
  using Limits = ::cuda::std::numeric_limits<T>;
  const T init = op != ReduceOp::max ? T(0) : Limits::has_infinity ? -Limits::infinity() : Limits::lowest();
  for (std::int64_t o = blockIdx.x; o < axes.outputs; o += gridDim.x) {
    const std::int64_t base = kept_offset(o, axes);
    T acc = init;
    for (std::int64_t r = threadIdx.x; r < axes.reduced; r += blockDim.x)
      acc = Combine<op, T>{}(acc, x[base + reduced_offset(r, axes)]);
    const T total = BlockReduce(temp).Reduce(acc, Combine<op, T>{});
    if (threadIdx.x == 0)
      y[o] = op == ReduceOp::mean ? total / static_cast<T>(axes.reduced > 0 ? axes.reduced : 1) : total;
    __syncthreads();  // temp is reused by the next output
  }
}

// dx = dy / (the number of ties) where x equals its reduction's maximum y, 0 elsewhere.
template <typename T>
__global__ void reduce_max_grad_kernel(const T* dy, const T* x, const T* y, T* dx, ReduceAxes axes) {
  using BlockReduce = cub::BlockReduce<T, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ T ties;
  for (std::int64_t o = blockIdx.x; o < axes.outputs; o += gridDim.x) {
    const std::int64_t base = kept_offset(o, axes);
    const T max = y[o];
    T count = 0;
    for (std::int64_t r = threadIdx.x; r < axes.reduced; r += blockDim.x)
      count += x[base + reduced_offset(r, axes)] == max ? T(1) : T(0);
    const T total = BlockReduce(temp).Sum(count);
    if (threadIdx.x == 0) ties = total;
    __syncthreads();
    const T share = dy[o] / ties;
    for (std::int64_t r = threadIdx.x; r < axes.reduced; r += blockDim.x) {
      const std::int64_t i = base + reduced_offset(r, axes);
      dx[i] = x[i] == max ? share : T(0);
    }
    __syncthreads();
  }
}

// The largest value and its index; equal values keep the smaller index (the first, as the CPU).
template <typename T>
struct Candidate {
  T value;
  std::int64_t index;  // -1: none yet
};

template <typename T>
struct Better {
  __device__ Candidate<T> operator()(const Candidate<T>& a, const Candidate<T>& b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    if (b.value > a.value || (b.value == a.value && b.index < a.index)) return b;
    return a;
  }
};

template <typename T>
__global__ void argmax_kernel(const T* x, std::int64_t* y, ReduceAxes axes) {
  using BlockReduce = cub::BlockReduce<Candidate<T>, kThreads>;
  __shared__ typename BlockReduce::TempStorage temp;
  for (std::int64_t o = blockIdx.x; o < axes.outputs; o += gridDim.x) {
    const std::int64_t base = kept_offset(o, axes);
    Candidate<T> best{T(0), -1};
    for (std::int64_t r = threadIdx.x; r < axes.reduced; r += blockDim.x)
      best = Better<T>{}(best, Candidate<T>{x[base + reduced_offset(r, axes)], r});
    const Candidate<T> winner = BlockReduce(temp).Reduce(best, Better<T>{});
    if (threadIdx.x == 0) y[o] = winner.index;
    __syncthreads();
  }
}

unsigned blocks_for_outputs(const ReduceAxes& axes) {
  return static_cast<unsigned>(std::min<std::int64_t>(axes.outputs, 65535));
}

}  // namespace

template <typename T>
cudaError_t launch_reduce(ReduceOp op, const T* x, T* y, const ReduceAxes& axes, cudaStream_t stream) {
  if (axes.outputs == 0) return cudaSuccess;
  const unsigned blocks = blocks_for_outputs(axes);
  switch (op) {
    case ReduceOp::sum: reduce_kernel<ReduceOp::sum, T><<<blocks, kThreads, 0, stream>>>(x, y, axes); break;
    case ReduceOp::mean: reduce_kernel<ReduceOp::mean, T><<<blocks, kThreads, 0, stream>>>(x, y, axes); break;
    case ReduceOp::max: reduce_kernel<ReduceOp::max, T><<<blocks, kThreads, 0, stream>>>(x, y, axes); break;
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_reduce_max_grad(const T* dy, const T* x, const T* y, T* dx, const ReduceAxes& axes,
                                   cudaStream_t stream) {
  if (axes.outputs == 0 || axes.reduced == 0) return cudaSuccess;
  reduce_max_grad_kernel<T><<<blocks_for_outputs(axes), kThreads, 0, stream>>>(dy, x, y, dx, axes);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_argmax(const T* x, std::int64_t* y, const ReduceAxes& axes, cudaStream_t stream) {
  if (axes.outputs == 0) return cudaSuccess;
  argmax_kernel<T><<<blocks_for_outputs(axes), kThreads, 0, stream>>>(x, y, axes);
  return cudaGetLastError();
}

#define TOWER_REDUCE(T)                                                                                        \
  template cudaError_t launch_reduce<T>(ReduceOp, const T*, T*, const ReduceAxes&, cudaStream_t);              \
  template cudaError_t launch_argmax<T>(const T*, std::int64_t*, const ReduceAxes&, cudaStream_t);
TOWER_REDUCE(float)
TOWER_REDUCE(double)
TOWER_REDUCE(std::int32_t)
TOWER_REDUCE(std::int64_t)
TOWER_REDUCE(std::uint8_t)
#undef TOWER_REDUCE

template cudaError_t launch_reduce_max_grad<float>(const float*, const float*, const float*, float*,
                                                   const ReduceAxes&, cudaStream_t);
template cudaError_t launch_reduce_max_grad<double>(const double*, const double*, const double*, double*,
                                                    const ReduceAxes&, cudaStream_t);

}  // namespace tower::cuda
