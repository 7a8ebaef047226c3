// Strided views for the CUDA adapters: broadcast layouts and reduction axes (see strided.h).
#include "tower/backends/cuda/strided.h"

#include <algorithm>

#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/kernel_context.h"

namespace tower::cuda {

BroadcastLayout strided_layout(const KernelContext& ctx, const Shape& out, const std::vector<std::int64_t>& strides_a,
                               const std::vector<std::int64_t>& strides_b) {
  if (out.rank() > BroadcastLayout::kMaxRank)
    raise<ShapeError>("{} on {}: the GPU kernels handle up to {} axes, got {}", ctx.node.op(), ctx.device.name(),
                      BroadcastLayout::kMaxRank, out.to_string());
  BroadcastLayout layout;
  layout.rank = out.rank();
  for (int d = 0; d < layout.rank; ++d) {
    const auto k = static_cast<std::size_t>(d);
    layout.dims[d] = out[d];
    layout.strides_a[d] = strides_a[k];
    layout.strides_b[d] = strides_b.empty() ? 0 : strides_b[k];
  }
  return layout;
}

void run_broadcast(KernelContext& ctx, const Shape& x_as, double factor) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const BroadcastLayout layout = strided_layout(ctx, y.shape(), broadcast_strides(x_as, y.shape()));
  dispatch_floating(y.dtype(), ctx.node.op().c_str(), [&]<typename T>() {
    CUDA_CHECK(
        launch_broadcast<T>(x.data<T>(), y.data<T>(), y.num_elements(), layout, static_cast<T>(factor), gpu.stream()));
  });
}

ReduceAxes reduce_axes(const KernelContext& ctx, const Shape& x, const std::vector<int>& reduced) {
  if (x.rank() > ReduceAxes::kMaxRank)
    raise<ShapeError>("{} on {}: reductions on the GPU handle up to {} axes, got {}", ctx.node.op(), ctx.device.name(),
                      ReduceAxes::kMaxRank, x.to_string());
  ReduceAxes axes;
  const auto strides = broadcast_strides(x, x);  // row-major
  for (int d = 0; d < x.rank(); ++d) {
    const bool is_reduced = std::find(reduced.begin(), reduced.end(), d) != reduced.end();
    if (is_reduced) {
      axes.reduced_dims[axes.reduced_rank] = x[d];
      axes.reduced_strides[axes.reduced_rank++] = strides[static_cast<std::size_t>(d)];
      axes.reduced *= x[d];
    } else {
      axes.kept_dims[axes.kept_rank] = x[d];
      axes.kept_strides[axes.kept_rank++] = strides[static_cast<std::size_t>(d)];
      axes.outputs *= x[d];
    }
  }
  return axes;
}

void run_reduce(KernelContext& ctx, ReduceOp op, const std::vector<int>& reduced, bool floating_only) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const ReduceAxes axes = reduce_axes(ctx, x.shape(), reduced);
  const auto run = [&]<typename T>() {
    CUDA_CHECK(launch_reduce<T>(op, x.data<T>(), y.data<T>(), axes, gpu.stream()));
  };
  if (op == ReduceOp::mean || floating_only)
    dispatch_floating(x.dtype(), ctx.node.op().c_str(), run);
  else
    dispatch_any(x.dtype(), ctx.node.op().c_str(), run);
}

}  // namespace tower::cuda
