// The CUDA kernel table entries of max_pool2d_with_argmax and its gradient (fused_grad_kernels.cu) and
// of bias_add_relu_grad, which runs the relu_grad and bias_add_grad kernels one after the other (the
// unfused numbers; a one-pass kernel is the CPU's gain, a GPU's bandwidth makes it small).
#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/fused_grad_launchers.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/core/op_names.h"
#include "tower/core/window.h"

namespace tower::cuda {

namespace {

// The node's pooling windows over x (batch, h, w, c) giving y (batch, out_h, out_w, c), as pool_ops.cpp.
PoolWindow pool_window(const KernelContext& ctx, const Shape& x, const Shape& y) {
  const Attrs& attrs = ctx.attrs();
  const auto& pool = attrs.get_ints("pool_size");
  const auto& strides = attrs.get_ints("strides");
  PoolWindow w{.batch = x[0],
               .in_h = x[1],
               .in_w = x[2],
               .channels = x[3],
               .out_h = y[1],
               .out_w = y[2],
               .kernel_h = pool.at(0),
               .kernel_w = pool.at(1),
               .stride_h = strides.at(0),
               .stride_w = strides.at(1)};
  if (attrs.get_string("padding") == "same") {
    w.pad_top = window::same_padding(w.in_h, w.out_h, w.kernel_h, w.stride_h, 1).before;
    w.pad_left = window::same_padding(w.in_w, w.out_w, w.kernel_w, w.stride_w, 1).before;
  }
  return w;
}

// x: (batch, h, w, c) -> {y, argmax (uint8)}: (batch, out_h, out_w, c).
void max_pool2d_with_argmax_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const PoolWindow w = pool_window(ctx, x.shape(), y.shape());
  dispatch_floating(x.dtype(), op_names::max_pool2d_with_argmax, [&]<typename T>() {
    CUDA_CHECK(launch_max_pool2d_with_argmax<T>(x.data<T>(), y.data<T>(), ctx.outputs[1].data<std::uint8_t>(), w,
                                                gpu.stream()));
  });
}

// (dy, argmax) -> dx: (batch, input_hw, c).
void max_pool2d_with_argmax_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  Tensor& dx = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const PoolWindow w = pool_window(ctx, dx.shape(), dy.shape());
  dispatch_floating(dx.dtype(), op_names::max_pool2d_with_argmax_grad, [&]<typename T>() {
    CUDA_CHECK(launch_max_pool2d_with_argmax_grad<T>(dy.data<T>(), ctx.inputs[1].data<std::uint8_t>(), dx.data<T>(), w,
                                                     gpu.stream()));
  });
}

// (dy, y) -> {dz = relu_grad(dy, y), bias_add_grad(dz)}: the two ops' kernels on the same stream.
void bias_add_relu_grad_kernel(KernelContext& ctx) {
  KernelContext relu{ctx.node, ctx.device, {ctx.inputs[0], ctx.inputs[1]}, {ctx.outputs[0]}};
  find_kernel(op_names::relu_grad, DeviceKind::cuda)(relu);
  KernelContext bias{ctx.node, ctx.device, {ctx.outputs[0]}, {ctx.outputs[1]}};
  find_kernel(op_names::bias_add_grad, DeviceKind::cuda)(bias);
}

}  // namespace

void register_fused_grad_kernels() {
  const auto cuda = DeviceKind::cuda;
  register_kernel(op_names::max_pool2d_with_argmax, cuda, max_pool2d_with_argmax_kernel);
  register_kernel(op_names::max_pool2d_with_argmax_grad, cuda, max_pool2d_with_argmax_grad_kernel);
  register_kernel(op_names::bias_add_relu_grad, cuda, bias_add_relu_grad_kernel);
}

}  // namespace tower::cuda
