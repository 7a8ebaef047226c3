// Launchers of the math CUDA kernels (bias_add and its gradient). Plain pointers only, as in
// elementwise_launchers.h. Each returns the launch status for CUDA_CHECK.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "tower/core/half.h"

namespace tower::cuda {

// y (rows, c) = x (rows, c) + bias (c,), then max(0, ·) with relu. Also for float16_t and bfloat16_t
// (added in float, rounded once: the sum a half dense or convolution falls back to).
template <typename T>
cudaError_t launch_bias_add(const T* x, const T* bias, T* y, std::int64_t rows, std::int64_t c, bool relu,
                            cudaStream_t stream);
// db (c,) = the sum of dy (rows, c) over its rows
template <typename T>
cudaError_t launch_bias_add_grad(const T* dy, T* db, std::int64_t rows, std::int64_t c, cudaStream_t stream);

}  // namespace tower::cuda
