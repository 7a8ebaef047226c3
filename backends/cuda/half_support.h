// Which CUDA steps with float16/bfloat16 tensors run natively in half (no CUDA types: unit-tested
// without a GPU). The rest widen to float32 (half_ops.cpp).
#pragma once

#include <span>
#include <string_view>

#include "tower/core/dtype.h"

namespace tower::cuda {

// True for cast (any pair of dtypes), and for the GEMMs and cuDNN convolutions (matmul, batch_matmul,
// dense, conv2d/conv3d, conv2d_bias, their backward ops and the transposed ones) when every one of
// `dtypes` (the step's inputs and outputs) is the same half dtype: those kernels take half operands
// and accumulate in float32 on tensor cores. False for everything else.
bool runs_in_half(std::string_view op, std::span<const DType> dtypes);

}  // namespace tower::cuda
