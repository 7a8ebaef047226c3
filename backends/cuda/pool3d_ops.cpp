// The CUDA kernel table entries of max_pool3d, avg_pool3d and their gradients (own kernels in
// pool3d_kernels.cu; see pool3d_launchers.h for why not cuDNN's).
#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/backends/cuda/pool3d_launchers.h"
#include "tower/core/op_names.h"
#include "tower/core/window.h"

namespace tower::cuda {

namespace {

// The node's pooling windows over x (batch, d, h, w, c) giving y (batch, od, oh, ow, c); "same" padding
// as TF (and the CPU): the smaller half before.
Pool3DWindow pool3d_window(const KernelContext& ctx, const Shape& x, const Shape& y) {
  const Attrs& attrs = ctx.attrs();
  const auto& pool = attrs.get_ints("pool_size");
  const auto& strides = attrs.get_ints("strides");
  const bool same = attrs.get_string("padding") == "same";
  Pool3DWindow w{.batch = x[0], .channels = x[4]};
  for (int a = 0; a < 3; ++a) {
    w.in[a] = x[a + 1];
    w.out[a] = y[a + 1];
    w.kernel[a] = pool.at(a);
    w.stride[a] = strides.at(a);
    if (same) w.pad[a] = window::same_padding(w.in[a], w.out[a], w.kernel[a], w.stride[a], 1).before;
  }
  return w;
}

// x: (batch, d, h, w, c) -> y: (batch, od, oh, ow, c).
void max_pool3d_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const Pool3DWindow w = pool3d_window(ctx, x.shape(), y.shape());
  dispatch_floating(x.dtype(), op_names::max_pool3d,
                    [&]<typename T>() { CUDA_CHECK(launch_max_pool3d<T>(x.data<T>(), y.data<T>(), w, gpu.stream())); });
}

// (dy, x, y) -> dx: x's shape.
void max_pool3d_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  const Tensor& x = ctx.inputs[1];
  const Tensor& y = ctx.inputs[2];
  Tensor& dx = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const Pool3DWindow w = pool3d_window(ctx, x.shape(), dy.shape());
  Tensor argmax(dy.shape(), DType::int64, gpu);  // (batch, od, oh, ow, c): scratch
  dispatch_floating(x.dtype(), op_names::max_pool3d_grad, [&]<typename T>() {
    CUDA_CHECK(launch_max_pool3d_grad<T>(dy.data<T>(), x.data<T>(), y.data<T>(), dx.data<T>(),
                                         argmax.data<std::int64_t>(), w, gpu.stream()));
  });
}

// x: (batch, d, h, w, c) -> y: (batch, od, oh, ow, c).
void avg_pool3d_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const Pool3DWindow w = pool3d_window(ctx, x.shape(), y.shape());
  dispatch_floating(x.dtype(), op_names::avg_pool3d,
                    [&]<typename T>() { CUDA_CHECK(launch_avg_pool3d<T>(x.data<T>(), y.data<T>(), w, gpu.stream())); });
}

// (dy, x) -> dx: x's shape (x supplies only its shape).
void avg_pool3d_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  Tensor& dx = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const Pool3DWindow w = pool3d_window(ctx, dx.shape(), dy.shape());
  dispatch_floating(dx.dtype(), op_names::avg_pool3d_grad, [&]<typename T>() {
    CUDA_CHECK(launch_avg_pool3d_grad<T>(dy.data<T>(), dx.data<T>(), w, gpu.stream()));
  });
}

}  // namespace

void register_pool3d_kernels() {
  const auto cuda = DeviceKind::cuda;
  register_kernel(op_names::max_pool3d, cuda, max_pool3d_kernel);
  register_kernel(op_names::max_pool3d_grad, cuda, max_pool3d_grad_kernel);
  register_kernel(op_names::avg_pool3d, cuda, avg_pool3d_kernel);
  register_kernel(op_names::avg_pool3d_grad, cuda, avg_pool3d_grad_kernel);
}

}  // namespace tower::cuda
