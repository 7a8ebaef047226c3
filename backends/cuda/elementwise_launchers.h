// Launchers of the elementwise CUDA kernels (fill, scale, cast, broadcasting binary ops): a kernel
// library shared by the basic, math and reduce families, whose KernelContext glue lives in
// basic_ops.cpp, math_ops.cpp, reduce_ops.cpp and strided.cpp. Plain pointers only: .cu files stay
// free of tower's C++ headers (nvcc cannot compile fmt's compile-time checks). Each returns the
// launch status for CUDA_CHECK.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "tower/core/half.h"

namespace tower::cuda {

template <typename T>
cudaError_t launch_fill(T* y, std::int64_t n, T value, cudaStream_t stream);
template <typename T>
cudaError_t launch_scale(const T* x, T* y, std::int64_t n, T factor, cudaStream_t stream);

// y = static_cast<D>(x) for any pair of float32, float64, int32, int64, uint8, float16_t and bfloat16_t
// (the half types convert through core/half.h's functions, rounding as the CPU does, bit for bit).
template <typename S, typename D>
cudaError_t launch_cast(const S* x, D* y, std::int64_t n, cudaStream_t stream);

// The compare ops give 1 where the comparison holds and 0 elsewhere (compare_mask).
enum class BinaryOp { add, subtract, multiply, divide, maximum, minimum, equal, greater, greater_equal, less, less_equal };

// How two operands broadcast against the output (NumPy rules), passed to the kernel by value.
struct BroadcastLayout {
  static constexpr int kMaxRank = 8;
  int rank = 0;
  std::int64_t dims[kMaxRank] = {};      // the output's
  std::int64_t strides_a[kMaxRank] = {};  // 0 along broadcast axes
  std::int64_t strides_b[kMaxRank] = {};
};

// y = op(a, b); layout null: a, b and y have the same shape.
template <typename T>
cudaError_t launch_binary(BinaryOp op, const T* a, const T* b, T* y, std::int64_t n, const BroadcastLayout* layout,
                          cudaStream_t stream);

// y = x * factor with x broadcast to y's shape through layout.strides_a (broadcast_like,
// broadcast_reduced).
template <typename T>
cudaError_t launch_broadcast(const T* x, T* y, std::int64_t n, const BroadcastLayout& layout, T factor,
                             cudaStream_t stream);

}  // namespace tower::cuda
