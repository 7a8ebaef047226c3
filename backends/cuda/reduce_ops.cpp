// The CUDA kernel table entries of reduce_sum, reduce_mean, reduce_max, reduce_max_grad, argmax and
// broadcast_reduced (the reductions' gradient).
#include <algorithm>

#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/backends/cuda/reduce_launchers.h"
#include "tower/backends/cuda/strided.h"
#include "tower/core/op_names.h"
#include "tower/core/ops/shape_utils.h"

namespace tower::cuda {

namespace {

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
  dispatch_floating(x.dtype(), op_names::reduce_max_grad, [&]<typename T>() {
    CUDA_CHECK(launch_reduce_max_grad<T>(dy.data<T>(), x.data<T>(), y.data<T>(), dx.data<T>(), axes, gpu.stream()));
  });
}

void argmax_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];  // int64
  const int axis = x.shape().normalize_axis(static_cast<int>(ctx.attrs().get_int("axis")), op_names::argmax);
  if (x.shape()[axis] == 0) raise<ValueError>("argmax over an empty axis of shape {}", x.shape().to_string());
  CudaDevice& gpu = gpu_of(ctx);
  const ReduceAxes axes = reduce_axes(ctx, x.shape(), {axis});
  dispatch_any(x.dtype(), op_names::argmax, [&]<typename T>() {
    CUDA_CHECK(launch_argmax<T>(x.data<T>(), y.data<std::int64_t>(), axes, gpu.stream()));
  });
}

// out (x's shape) = dy, the reduction of x over `axes`, broadcast back (and divided by the count
// for a mean): dy is seen with keepdims, size 1 along the reduced axes.
void broadcast_reduced_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  const Shape& out = ctx.outputs[0].shape();
  const auto axes = normalize_axes(ctx.attrs().get_ints("axes"), out.rank());
  auto kept = out.dims();
  for (int axis : axes) kept[static_cast<std::size_t>(axis)] = 1;
  const double factor =
      ctx.attrs().get_bool("mean")
          ? static_cast<double>(dy.num_elements()) / static_cast<double>(std::max<std::int64_t>(1, out.num_elements()))
          : 1.0;
  run_broadcast(ctx, Shape(kept), factor);
}

}  // namespace

void register_reduce_kernels() {
  register_kernel(op_names::reduce_sum, DeviceKind::cuda, reduce_sum_kernel);
  register_kernel(op_names::reduce_mean, DeviceKind::cuda, reduce_mean_kernel);
  register_kernel(op_names::reduce_max, DeviceKind::cuda, reduce_max_kernel);
  register_kernel(op_names::reduce_max_grad, DeviceKind::cuda, reduce_max_grad_kernel);
  register_kernel(op_names::argmax, DeviceKind::cuda, argmax_kernel);
  register_kernel(op_names::broadcast_reduced, DeviceKind::cuda, broadcast_reduced_kernel);
}

}  // namespace tower::cuda
