// The CUDA kernel table entries of resize, resize_grad, image_transform and rotation_transform
// (image_kernels.cu).
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

// (images (batch, h, w, c), transforms (batch, 8)) -> (batch, out_h, out_w, c).
void image_transform_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& transforms = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  const std::string& mode = ctx.attrs().get_string("fill_mode");
  const TransformGeometry g{.batch = x.shape()[0],
                            .in_h = x.shape()[1],
                            .in_w = x.shape()[2],
                            .channels = x.shape()[3],
                            .out_h = y.shape()[1],
                            .out_w = y.shape()[2],
                            .bilinear = ctx.attrs().get_string("interpolation") == "bilinear",
                            .fill_mode = mode == "reflect" ? 0 : mode == "wrap" ? 1 : mode == "constant" ? 2 : 3,
                            .fill_value = static_cast<float>(ctx.attrs().get_float("fill_value"))};
  dispatch_floating(y.dtype(), op_names::image_transform, [&]<typename T>() {
    CUDA_CHECK(launch_image_transform<T>(x.data<T>(), transforms.data<T>(), y.data<T>(), g, gpu_of(ctx).stream()));
  });
}

void rotation_transform_kernel(KernelContext& ctx) {  // angles (batch, 1) -> (batch, 8)
  const Tensor& angles = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  dispatch_floating(y.dtype(), op_names::rotation_transform, [&]<typename T>() {
    CUDA_CHECK(launch_rotation_transform<T>(angles.data<T>(), y.data<T>(), angles.shape()[0],
                                            ctx.attrs().get_int("height"), ctx.attrs().get_int("width"),
                                            gpu_of(ctx).stream()));
  });
}

}  // namespace

void register_image_kernels() {
  register_kernel(op_names::resize, DeviceKind::cuda, resize_kernel);
  register_kernel(op_names::resize_grad, DeviceKind::cuda, resize_grad_kernel);
  register_kernel(op_names::image_transform, DeviceKind::cuda, image_transform_kernel);
  register_kernel(op_names::rotation_transform, DeviceKind::cuda, rotation_transform_kernel);
}

}  // namespace tower::cuda
