// Launchers of the reduction CUDA kernels (sum, mean, max over any axes). Plain pointers only, as
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

// One block per output element; its threads combine strided parts of the reduced elements, then a
// shared-memory tree combines those (the same order every run: deterministic).
template <typename T>
cudaError_t launch_reduce(ReduceOp op, const T* x, T* y, const ReduceAxes& axes, cudaStream_t stream);

}  // namespace tower::cuda
