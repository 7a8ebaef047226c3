// The CUDA kernel table entries of the elementwise ops: KernelContext in, launchers out.
#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/elementwise_launchers.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/core/ops/shape_utils.h"

namespace tower::cuda {

namespace {

cudaStream_t stream_of(KernelContext& ctx) { return gpu_of(ctx).stream(); }

// identity and stop_gradient alias their input; the plan makes the view.
void alias_kernel(KernelContext&) {}

void fill_like_kernel(KernelContext& ctx) {
  Tensor& y = ctx.outputs[0];
  const double value = ctx.attrs().get_float("value");
  dispatch_floating(y.dtype(), "fill_like", [&]<typename T>() {
    CUDA_CHECK(launch_fill<T>(y.data<T>(), y.num_elements(), static_cast<T>(value), stream_of(ctx)));
  });
}

void scale_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const double factor = ctx.attrs().get_float("factor");
  dispatch_floating(x.dtype(), "scale", [&]<typename T>() {
    CUDA_CHECK(launch_scale<T>(x.data<T>(), y.data<T>(), x.num_elements(), static_cast<T>(factor), stream_of(ctx)));
  });
}

// The output's dims and the operands' element strides along them, for the strided kernels
// (strides_b stays 0 when not given).
BroadcastLayout strided_layout(const KernelContext& ctx, const Shape& out, const std::vector<std::int64_t>& strides_a,
                               const std::vector<std::int64_t>& strides_b = {}) {
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

// y = op(a, b) with NumPy broadcasting (up to BroadcastLayout::kMaxRank axes).
void run_binary(KernelContext& ctx, BinaryOp op) {
  const Tensor& a = ctx.inputs[0];
  const Tensor& b = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const bool same_shape = a.shape() == b.shape();
  BroadcastLayout layout;
  if (!same_shape)
    layout = strided_layout(ctx, y.shape(), broadcast_strides(a.shape(), y.shape()), broadcast_strides(b.shape(), y.shape()));
  dispatch_floating(y.dtype(), ctx.node.op().c_str(), [&]<typename T>() {
    CUDA_CHECK(launch_binary<T>(op, a.data<T>(), b.data<T>(), y.data<T>(), y.num_elements(),
                                same_shape ? nullptr : &layout, gpu.stream()));
  });
}

template <BinaryOp op>
void binary_kernel(KernelContext& ctx) {
  run_binary(ctx, op);
}

// 1 where a <mode> b holds, else 0 (mode: eq, gt, ge, lt, le), broadcasting as the arithmetic.
void compare_mask_kernel(KernelContext& ctx) {
  const std::string& mode = ctx.attrs().get_string("mode");
  BinaryOp op = BinaryOp::equal;
  if (mode == "gt") op = BinaryOp::greater;
  else if (mode == "ge") op = BinaryOp::greater_equal;
  else if (mode == "lt") op = BinaryOp::less;
  else if (mode == "le") op = BinaryOp::less_equal;
  run_binary(ctx, op);
}

void run_broadcast(KernelContext& ctx, const Shape& x_as, double factor) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const BroadcastLayout layout = strided_layout(ctx, y.shape(), broadcast_strides(x_as, y.shape()));
  dispatch_floating(y.dtype(), ctx.node.op().c_str(), [&]<typename T>() {
    CUDA_CHECK(launch_broadcast<T>(x.data<T>(), y.data<T>(), y.num_elements(), layout, static_cast<T>(factor),
                                   gpu.stream()));
  });
}

void cast_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  dispatch_any(x.dtype(), "cast", [&]<typename S>() {
    dispatch_any(y.dtype(), "cast", [&]<typename D>() {
      const auto launch = launch_cast<S, D>;  // (the comma would split CUDA_CHECK's argument)
      CUDA_CHECK(launch(x.data<S>(), y.data<D>(), x.num_elements(), gpu.stream()));
    });
  });
}

// var (input 0) = value (input 1), in place.
void assign_kernel(KernelContext& ctx) {
  CudaDevice& gpu = gpu_of(ctx);
  CUDA_CHECK(cudaMemcpyAsync(ctx.inputs[0].raw_data(), ctx.inputs[1].raw_data(), ctx.inputs[0].nbytes(),
                             cudaMemcpyDeviceToDevice, gpu.stream()));
}

// var (input 0) += value (input 1), in place (float32 and float64).
void assign_add_kernel(KernelContext& ctx) {
  Tensor& var = ctx.inputs[0];
  const Tensor& value = ctx.inputs[1];
  CudaDevice& gpu = gpu_of(ctx);
  dispatch_floating(var.dtype(), "assign_add", [&]<typename T>() {
    CUDA_CHECK(launch_binary<T>(BinaryOp::add, var.data<T>(), value.data<T>(), var.data<T>(), var.num_elements(),
                                nullptr, gpu.stream()));
  });
}

// y (like's shape) = x broadcast.
void broadcast_like_kernel(KernelContext& ctx) { run_broadcast(ctx, ctx.inputs[0].shape(), 1.0); }

// out (x's shape) = dy, the reduction of x over `axes`, broadcast back (and divided by the count
// for a mean): dy is seen with keepdims, size 1 along the reduced axes.
void broadcast_reduced_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  const Shape& out = ctx.outputs[0].shape();
  const auto axes = normalize_axes(ctx.attrs().get_ints("axes"), out.rank());
  auto kept = out.dims();
  for (int axis : axes) kept[static_cast<std::size_t>(axis)] = 1;
  const double factor = ctx.attrs().get_bool("mean") ? static_cast<double>(dy.num_elements()) /
                                                           static_cast<double>(std::max<std::int64_t>(1, out.num_elements()))
                                                     : 1.0;
  run_broadcast(ctx, Shape(kept), factor);
}

}  // namespace

void register_elementwise_kernels() {
  register_kernel("identity", DeviceKind::cuda, alias_kernel);
  register_kernel("stop_gradient", DeviceKind::cuda, alias_kernel);
  register_kernel("reshape", DeviceKind::cuda, alias_kernel);  // views: the plan aliases the input
  register_kernel("reshape_like", DeviceKind::cuda, alias_kernel);
  register_kernel("fill_like", DeviceKind::cuda, fill_like_kernel);
  register_kernel("scale", DeviceKind::cuda, scale_kernel);
  register_kernel("add", DeviceKind::cuda, binary_kernel<BinaryOp::add>);
  register_kernel("subtract", DeviceKind::cuda, binary_kernel<BinaryOp::subtract>);
  register_kernel("multiply", DeviceKind::cuda, binary_kernel<BinaryOp::multiply>);
  register_kernel("divide", DeviceKind::cuda, binary_kernel<BinaryOp::divide>);
  register_kernel("cast", DeviceKind::cuda, cast_kernel);
  register_kernel("assign", DeviceKind::cuda, assign_kernel);
  register_kernel("assign_add", DeviceKind::cuda, assign_add_kernel);
  register_kernel("broadcast_like", DeviceKind::cuda, broadcast_like_kernel);
  register_kernel("broadcast_reduced", DeviceKind::cuda, broadcast_reduced_kernel);
  register_kernel("maximum", DeviceKind::cuda, binary_kernel<BinaryOp::maximum>);
  register_kernel("minimum", DeviceKind::cuda, binary_kernel<BinaryOp::minimum>);
  register_kernel("compare_mask", DeviceKind::cuda, compare_mask_kernel);
}

}  // namespace tower::cuda
