// The CUDA kernel table entries of the basic ops: identity, stop_gradient, fill_like, cast, assign,
// assign_add (elementwise launchers in elementwise_kernels.cu).
#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/elementwise_launchers.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/core/op_names.h"

namespace tower::cuda {

namespace {

cudaStream_t stream_of(KernelContext& ctx) { return gpu_of(ctx).stream(); }

// identity and stop_gradient alias their input; the plan makes the view.
void alias_kernel(KernelContext&) {}

void fill_like_kernel(KernelContext& ctx) {
  Tensor& y = ctx.outputs[0];
  const double value = ctx.attrs().get_float("value");
  dispatch_floating(y.dtype(), op_names::fill_like, [&]<typename T>() {
    CUDA_CHECK(launch_fill<T>(y.data<T>(), y.num_elements(), static_cast<T>(value), stream_of(ctx)));
  });
}

void cast_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  dispatch_every(x.dtype(), op_names::cast, [&]<typename S>() {
    dispatch_every(y.dtype(), op_names::cast, [&]<typename D>() {
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
  dispatch_floating(var.dtype(), op_names::assign_add, [&]<typename T>() {
    CUDA_CHECK(launch_binary<T>(BinaryOp::add, var.data<T>(), value.data<T>(), var.data<T>(), var.num_elements(),
                                nullptr, gpu.stream()));
  });
}

}  // namespace

void register_basic_kernels() {
  register_kernel(op_names::identity, DeviceKind::cuda, alias_kernel);
  register_kernel(op_names::stop_gradient, DeviceKind::cuda, alias_kernel);
  register_kernel(op_names::fill_like, DeviceKind::cuda, fill_like_kernel);
  register_kernel(op_names::cast, DeviceKind::cuda, cast_kernel);
  register_kernel(op_names::assign, DeviceKind::cuda, assign_kernel);
  register_kernel(op_names::assign_add, DeviceKind::cuda, assign_add_kernel);
}

}  // namespace tower::cuda
