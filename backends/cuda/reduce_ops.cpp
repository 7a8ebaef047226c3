// The CUDA kernel table entries of reduce_sum, reduce_mean, reduce_max, reduce_max_grad, argmax and
// sum_to.
#include <algorithm>

#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/backends/cuda/reduce_launchers.h"
#include "tower/core/ops/shape_utils.h"

namespace tower::cuda {

namespace {

// x's axes split into kept and reduced ones, with x's row-major strides.
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

// Sum and max take any dtype; mean and sum_to (gradients) floating ones.
void run_reduce(KernelContext& ctx, ReduceOp op, const std::vector<int>& reduced) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const ReduceAxes axes = reduce_axes(ctx, x.shape(), reduced);
  const auto run = [&]<typename T>() { CUDA_CHECK(launch_reduce<T>(op, x.data<T>(), y.data<T>(), axes, gpu.stream())); };
  if (op == ReduceOp::mean || ctx.node.op() == "sum_to")
    dispatch_floating(x.dtype(), ctx.node.op().c_str(), run);
  else
    dispatch_any(x.dtype(), ctx.node.op().c_str(), run);
}

std::vector<int> axes_of(const KernelContext& ctx) {
  return normalize_axes(ctx.attrs().get_ints("axes"), ctx.inputs[0].shape().rank());
}

void reduce_sum_kernel(KernelContext& ctx) { run_reduce(ctx, ReduceOp::sum, axes_of(ctx)); }
void reduce_mean_kernel(KernelContext& ctx) { run_reduce(ctx, ReduceOp::mean, axes_of(ctx)); }
void reduce_max_kernel(KernelContext& ctx) {
  if (ctx.inputs[0].num_elements() == 0)
    raise<ValueError>("reduce_max of an empty tensor of shape {}", ctx.inputs[0].shape().to_string());
  run_reduce(ctx, ReduceOp::max, axes_of(ctx));
}

// (dy, x, y) -> dx: dy shared equally among the elements equal to their maximum.
void reduce_max_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  const Tensor& x = ctx.inputs[1];
  const Tensor& y = ctx.inputs[2];
  Tensor& dx = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const ReduceAxes axes = reduce_axes(ctx, x.shape(), normalize_axes(ctx.attrs().get_ints("axes"), x.shape().rank()));
  dispatch_floating(x.dtype(), "reduce_max_grad", [&]<typename T>() {
    CUDA_CHECK(launch_reduce_max_grad<T>(dy.data<T>(), x.data<T>(), y.data<T>(), dx.data<T>(), axes, gpu.stream()));
  });
}

void argmax_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];  // int64
  const int axis = x.shape().normalize_axis(static_cast<int>(ctx.attrs().get_int("axis")), "argmax");
  if (x.shape()[axis] == 0) raise<ValueError>("argmax over an empty axis of shape {}", x.shape().to_string());
  CudaDevice& gpu = gpu_of(ctx);
  const ReduceAxes axes = reduce_axes(ctx, x.shape(), {axis});
  dispatch_any(x.dtype(), "argmax", [&]<typename T>() {
    CUDA_CHECK(launch_argmax<T>(x.data<T>(), y.data<std::int64_t>(), axes, gpu.stream()));
  });
}

// y (like's shape) = x summed over the axes along which like was broadcast.
void sum_to_kernel(KernelContext& ctx) {
  run_reduce(ctx, ReduceOp::sum, sum_to_axes(ctx.inputs[0].shape(), ctx.outputs[0].shape()));
}

}  // namespace

void register_reduce_kernels() {
  register_kernel("reduce_sum", DeviceKind::cuda, reduce_sum_kernel);
  register_kernel("reduce_mean", DeviceKind::cuda, reduce_mean_kernel);
  register_kernel("reduce_max", DeviceKind::cuda, reduce_max_kernel);
  register_kernel("reduce_max_grad", DeviceKind::cuda, reduce_max_grad_kernel);
  register_kernel("argmax", DeviceKind::cuda, argmax_kernel);
  register_kernel("sum_to", DeviceKind::cuda, sum_to_kernel);
}

}  // namespace tower::cuda
