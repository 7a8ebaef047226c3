// The CUDA kernel table entries of mean_squared_error, mean_absolute_error and their gradients.
// Same contracts as backends/cpu/loss_kernels.cpp.
#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/backends/cuda/loss_launchers.h"

namespace tower::cuda {

namespace {

// (y_true, y_pred) (..., d) -> loss (...)
template <RegressionLoss kind>
void mean_error_kernel(KernelContext& ctx) {
  const Tensor& y_true = ctx.inputs[0];
  const Tensor& y_pred = ctx.inputs[1];
  Tensor& loss = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  dispatch_floating(y_pred.dtype(), ctx.node.op().c_str(), [&]<typename T>() {
    CUDA_CHECK(launch_mean_error<T>(kind, y_true.data<T>(), y_pred.data<T>(), loss.data<T>(), loss.num_elements(),
                                    y_pred.shape().dim(-1), gpu.stream()));
  });
}

// (dloss (...), y_true, y_pred (..., d)) -> d_pred (..., d)
template <RegressionLoss kind>
void mean_error_grad_kernel(KernelContext& ctx) {
  const Tensor& dloss = ctx.inputs[0];
  const Tensor& y_true = ctx.inputs[1];
  const Tensor& y_pred = ctx.inputs[2];
  Tensor& d_pred = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  dispatch_floating(y_pred.dtype(), ctx.node.op().c_str(), [&]<typename T>() {
    CUDA_CHECK(launch_mean_error_grad<T>(kind, dloss.data<T>(), y_true.data<T>(), y_pred.data<T>(), d_pred.data<T>(),
                                         dloss.num_elements(), y_pred.shape().dim(-1), gpu.stream()));
  });
}

}  // namespace

void register_loss_kernels() {
  register_kernel("mean_squared_error", DeviceKind::cuda, mean_error_kernel<RegressionLoss::squared>);
  register_kernel("mean_absolute_error", DeviceKind::cuda, mean_error_kernel<RegressionLoss::absolute>);
  register_kernel("mean_squared_error_grad", DeviceKind::cuda, mean_error_grad_kernel<RegressionLoss::squared>);
  register_kernel("mean_absolute_error_grad", DeviceKind::cuda, mean_error_grad_kernel<RegressionLoss::absolute>);
}

}  // namespace tower::cuda
