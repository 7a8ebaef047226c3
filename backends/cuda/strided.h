// Shared by the CUDA kernel families' adapters: tensors seen through strides for the elementwise
// (broadcast) and reduction launchers, as backends/cpu/strided.h does for the CPU kernels.
#pragma once

#include <vector>

#include "tower/backends/cuda/elementwise_launchers.h"
#include "tower/backends/cuda/reduce_launchers.h"
#include "tower/core/op_registry.h"

namespace tower::cuda {

// The output's dims and the operands' element strides along them, for the strided kernels
// (strides_b stays 0 when not given). ShapeError beyond BroadcastLayout::kMaxRank axes.
BroadcastLayout strided_layout(const KernelContext& ctx, const Shape& out, const std::vector<std::int64_t>& strides_a,
                               const std::vector<std::int64_t>& strides_b = {});

// y (output 0) = x (input 0) seen as `x_as` broadcast to y's shape, times factor (broadcast_like,
// broadcast_reduced). Floating dtypes.
void run_broadcast(KernelContext& ctx, const Shape& x_as, double factor);

// x's axes split into kept and reduced ones, with x's row-major strides.
ReduceAxes reduce_axes(const KernelContext& ctx, const Shape& x, const std::vector<int>& reduced);

// y (output 0) = op over the `reduced` axes of x (input 0). Sum and max take any dtype; mean, and
// sum when `floating_only` (sum_to, a gradient), floating ones.
void run_reduce(KernelContext& ctx, ReduceOp op, const std::vector<int>& reduced, bool floating_only = false);

}  // namespace tower::cuda
