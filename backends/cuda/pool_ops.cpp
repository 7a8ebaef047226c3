// The CUDA kernel table entries of max_pool2d, avg_pool2d, max_pool2d_with_argmax and their gradients (own kernels in
// pool_kernels.cu; see pool_launchers.h for why not cuDNN's).
#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/backends/cuda/pool_launchers.h"
#include "tower/core/op_names.h"
#include "tower/core/window.h"

namespace tower::cuda {

namespace {

// The node's pooling windows over x (batch, h, w, c) giving y (batch, out_h, out_w, c); "same"
// padding as TF (and the CPU): the smaller half before.
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

// x: (batch, h, w, c) -> y: (batch, out_h, out_w, c).
void max_pool2d_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const PoolWindow w = pool_window(ctx, x.shape(), y.shape());
  dispatch_floating(x.dtype(), op_names::max_pool2d,
                    [&]<typename T>() { CUDA_CHECK(launch_max_pool2d<T>(x.data<T>(), y.data<T>(), w, gpu.stream())); });
}

// (dy, x, y) -> dx: x's shape.
void max_pool2d_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  const Tensor& x = ctx.inputs[1];
  const Tensor& y = ctx.inputs[2];
  Tensor& dx = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const PoolWindow w = pool_window(ctx, x.shape(), dy.shape());
  Tensor argmax(dy.shape(), DType::int64, gpu);  // (batch, out_h, out_w, c): scratch
  dispatch_floating(x.dtype(), op_names::max_pool2d_grad, [&]<typename T>() {
    CUDA_CHECK(launch_max_pool2d_grad<T>(dy.data<T>(), x.data<T>(), y.data<T>(), dx.data<T>(),
                                         argmax.data<std::int64_t>(), w, gpu.stream()));
  });
}

// x: (batch, h, w, c) -> y: (batch, out_h, out_w, c).
void avg_pool2d_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const PoolWindow w = pool_window(ctx, x.shape(), y.shape());
  dispatch_floating(x.dtype(), op_names::avg_pool2d,
                    [&]<typename T>() { CUDA_CHECK(launch_avg_pool2d<T>(x.data<T>(), y.data<T>(), w, gpu.stream())); });
}

// (dy, x) -> dx: x's shape (x supplies only its shape).
void avg_pool2d_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  Tensor& dx = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const PoolWindow w = pool_window(ctx, dx.shape(), dy.shape());
  dispatch_floating(dx.dtype(), op_names::avg_pool2d_grad, [&]<typename T>() {
    CUDA_CHECK(launch_avg_pool2d_grad<T>(dy.data<T>(), dx.data<T>(), w, gpu.stream()));
  });
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

}  // namespace

void register_pool_kernels() {
  const auto cuda = DeviceKind::cuda;
  register_kernel(op_names::max_pool2d, cuda, max_pool2d_kernel);
  register_kernel(op_names::max_pool2d_grad, cuda, max_pool2d_grad_kernel);
  register_kernel(op_names::avg_pool2d, cuda, avg_pool2d_kernel);
  register_kernel(op_names::avg_pool2d_grad, cuda, avg_pool2d_grad_kernel);
  register_kernel(op_names::max_pool2d_with_argmax, cuda, max_pool2d_with_argmax_kernel);
  register_kernel(op_names::max_pool2d_with_argmax_grad, cuda, max_pool2d_with_argmax_grad_kernel);
}

}  // namespace tower::cuda
