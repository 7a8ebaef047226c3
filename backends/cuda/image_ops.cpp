// The CUDA kernel table entries of resize and resize_grad (image_kernels.cu).
#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/image_launchers.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/core/op_names.h"

namespace tower::cuda {

namespace {

// x (batch, h, w, c) and y (batch, height, width, c).
ResizeGeometry geometry(const KernelContext& ctx, const Shape& x, const Shape& y) {
  return {.batch = x[0],
          .in_h = x[1],
          .in_w = x[2],
          .channels = x[3],
          .out_h = y[1],
          .out_w = y[2],
          .bilinear = ctx.attrs().get_string("interpolation") == "bilinear"};
}

void resize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const ResizeGeometry g = geometry(ctx, x.shape(), y.shape());
  dispatch_floating(y.dtype(), op_names::resize, [&]<typename T>() {
    CUDA_CHECK(launch_resize<T>(x.data<T>(), y.data<T>(), g, gpu_of(ctx).stream()));
  });
}

void resize_grad_kernel(KernelContext& ctx) {  // (dy, x) -> dx
  const Tensor& dy = ctx.inputs[0];
  Tensor& dx = ctx.outputs[0];
  const ResizeGeometry g = geometry(ctx, dx.shape(), dy.shape());
  dispatch_floating(dx.dtype(), op_names::resize_grad, [&]<typename T>() {
    CUDA_CHECK(launch_resize_grad<T>(dy.data<T>(), dx.data<T>(), g, gpu_of(ctx).stream()));
  });
}

}  // namespace

void register_image_kernels() {
  register_kernel(op_names::resize, DeviceKind::cuda, resize_kernel);
  register_kernel(op_names::resize_grad, DeviceKind::cuda, resize_grad_kernel);
}

}  // namespace tower::cuda
