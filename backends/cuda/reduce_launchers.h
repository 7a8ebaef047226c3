// Launchers of the reduction CUDA kernels (sum, mean, max over any axes, max's gradient, argmax). Plain pointers only, as
// in elementwise_launchers.h. Each returns the launch status for CUDA_CHECK.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace tower::cuda {

// x's axes split into kept ones (the output's, in order: output element o is row-major over them)
// and reduced ones, each with x's element stride.
struct ReduceAxes {
  static constexpr int kMaxRank = 8;
  int kept_rank = 0, reduced_rank = 0;
  std::int64_t kept_dims[kMaxRank] = {}, kept_strides[kMaxRank] = {};
  std::int64_t reduced_dims[kMaxRank] = {}, reduced_strides[kMaxRank] = {};
  std::int64_t outputs = 1, reduced = 1;  // products of kept_dims and reduced_dims
};

enum class ReduceOp { sum, mean, max };

// One block per output element; its threads combine strided parts of the reduced elements, then
// cub::BlockReduce combines those (the same order every run: deterministic). T: float32, float64,
// int32, int64, uint8 (mean: the floating ones).
template <typename T>
cudaError_t launch_reduce(ReduceOp op, const T* x, T* y, const ReduceAxes& axes, cudaStream_t stream);

// dx (x's shape) = dy / ties where x equals y (its maximum over the reduced axes), 0 elsewhere.
template <typename T>
cudaError_t launch_reduce_max_grad(const T* dy, const T* x, const T* y, T* dx, const ReduceAxes& axes,
                                   cudaStream_t stream);

// y (int64, one per output) = the index along the reduced axis (exactly one) of the largest element,
// the first one among equals.
template <typename T>
cudaError_t launch_argmax(const T* x, std::int64_t* y, const ReduceAxes& axes, cudaStream_t stream);

}  // namespace tower::cuda
