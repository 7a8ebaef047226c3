// The CUDA kernel table entries of mean_squared_error, mean_absolute_error and their gradients.
// Same contracts as backends/cpu/loss_kernels.cpp.
#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/backends/cuda/loss_launchers.h"
#include "tower/core/op_names.h"

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

void softmax_cross_entropy_kernel(KernelContext& ctx) {
  const Tensor& logits = ctx.inputs[0];  // (batch, classes)
  const Tensor& labels = ctx.inputs[1];  // (batch, classes)
  CudaDevice& gpu = gpu_of(ctx);
  dispatch_floating(logits.dtype(), op_names::softmax_cross_entropy, [&]<typename T>() {
    CUDA_CHECK(launch_softmax_cross_entropy<T>(logits.data<T>(), labels.data<T>(), ctx.outputs[0].data<T>(),
                                               ctx.outputs[1].data<T>(), logits.shape()[0], logits.shape()[1],
                                               gpu.stream()));
  });
}

void sparse_softmax_cross_entropy_kernel(KernelContext& ctx) {
  const Tensor& logits = ctx.inputs[0];  // (batch, classes)
  const Tensor& labels = ctx.inputs[1];  // (batch,) integer
  CudaDevice& gpu = gpu_of(ctx);
  dispatch_integer(labels.dtype(), op_names::sparse_softmax_cross_entropy, [&]<typename I>() {
    dispatch_floating(logits.dtype(), op_names::sparse_softmax_cross_entropy, [&]<typename T>() {
      const auto launch = launch_sparse_softmax_cross_entropy<T, I>;  // (the comma would split CUDA_CHECK's argument)
      CUDA_CHECK(launch(logits.data<T>(), labels.data<I>(), ctx.outputs[0].data<T>(), ctx.outputs[1].data<T>(),
                        logits.shape()[0], logits.shape()[1], gpu.stream()));
    });
  });
}

void softmax_cross_entropy_grad_kernel(KernelContext& ctx) {
  const Tensor& dloss = ctx.inputs[0];     // (batch,)
  const Tensor& backprop = ctx.inputs[1];  // (batch, classes)
  CudaDevice& gpu = gpu_of(ctx);
  dispatch_floating(backprop.dtype(), op_names::softmax_cross_entropy_grad, [&]<typename T>() {
    CUDA_CHECK(launch_softmax_cross_entropy_grad<T>(dloss.data<T>(), backprop.data<T>(), ctx.outputs[0].data<T>(),
                                                    backprop.shape()[0], backprop.shape()[1], gpu.stream()));
  });
}

}  // namespace

void register_loss_kernels() {
  register_kernel(op_names::mean_squared_error, DeviceKind::cuda, mean_error_kernel<RegressionLoss::squared>);
  register_kernel(op_names::mean_absolute_error, DeviceKind::cuda, mean_error_kernel<RegressionLoss::absolute>);
  register_kernel(op_names::mean_squared_error_grad, DeviceKind::cuda, mean_error_grad_kernel<RegressionLoss::squared>);
  register_kernel(op_names::mean_absolute_error_grad, DeviceKind::cuda,
                  mean_error_grad_kernel<RegressionLoss::absolute>);
  register_kernel(op_names::softmax_cross_entropy, DeviceKind::cuda, softmax_cross_entropy_kernel);
  register_kernel(op_names::sparse_softmax_cross_entropy, DeviceKind::cuda, sparse_softmax_cross_entropy_kernel);
  register_kernel(op_names::softmax_cross_entropy_grad, DeviceKind::cuda, softmax_cross_entropy_grad_kernel);
}

}  // namespace tower::cuda
