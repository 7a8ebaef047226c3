// What every .cu file launches with: the block size, a bounded grid for n elements, and the
// grid-stride loop (any n with that grid). For nvcc only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "tower/core/half.h"

namespace tower::cuda {

constexpr int kThreads = 256;

// The type a kernel computes in for elements of type T: float for the half types (storage only,
// core/half.h: load, widen, compute, round the result once), T itself otherwise.
template <typename T>
using Compute = std::conditional_t<std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>, float, T>;

// Enough blocks of kThreads for n elements, at least 1 and at most 65535.
inline unsigned blocks_for(std::int64_t n) {
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min<std::int64_t>((n + kThreads - 1) / kThreads, 65535)));
}

// The element offset of row-major index i over `dims` (rank of them) in an operand with `strides`
// (0 along broadcast axes): how broadcasting, transposing and reducing kernels find their input.
__device__ inline std::int64_t strided_offset(std::int64_t i, int rank, const std::int64_t* dims,
                                              const std::int64_t* strides) {
  std::int64_t offset = 0;
  for (int d = rank - 1; d >= 0; --d) {
    offset += (i % dims[d]) * strides[d];
    i /= dims[d];
  }
  return offset;
}

}  // namespace tower::cuda

// for (i over [0, n)) spread over the whole grid.
#define TOWER_GRID_STRIDE(i, n)                                                                  \
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
