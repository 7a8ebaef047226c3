// The CUDA kernel table entries of the first elementwise ops: KernelContext in, launchers out.
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/elementwise_launchers.h"
#include "backends/cuda/kernel_context.h"
#include "backends/cuda/kernels.h"

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

void add_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.inputs[0];
  const Tensor& b = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  if (a.shape() != b.shape())
    raise<ShapeError>("the CUDA add kernel handles equal shapes only so far, got {} and {}; broadcasting on the GPU "
                      "comes with the CUDA backend issue",
                      a.shape().to_string(), b.shape().to_string());
  dispatch_floating(y.dtype(), "add", [&]<typename T>() {
    CUDA_CHECK(launch_add<T>(a.data<T>(), b.data<T>(), y.data<T>(), y.num_elements(), stream_of(ctx)));
  });
}

}  // namespace

void register_elementwise_kernels() {
  register_kernel("identity", DeviceKind::cuda, alias_kernel);
  register_kernel("stop_gradient", DeviceKind::cuda, alias_kernel);
  register_kernel("fill_like", DeviceKind::cuda, fill_like_kernel);
  register_kernel("scale", DeviceKind::cuda, scale_kernel);
  register_kernel("add", DeviceKind::cuda, add_kernel);
}

}  // namespace tower::cuda
