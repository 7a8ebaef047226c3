// The CUDA kernel table entries of the batch- and layer-normalization ops (own kernels in
// normalization_kernels.cu; see normalization_launchers.h for why not cuDNN's).
#include "tower/backends/cuda/normalization_launchers.h"
#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/core/op_names.h"

namespace tower::cuda {

namespace {

// x (..., c) seen as (rows, c).
NormRows norm_rows(const Tensor& x) {
  const std::int64_t c = x.shape().dim(-1);
  return {c == 0 ? 0 : x.num_elements() / c, c};
}

// The launchers' scratch for x, through the device's caching allocator (freed on return: the
// work that reads it is queued on the device's one stream before anything that could reuse it).
Tensor workspace_for(CudaDevice& gpu, std::size_t bytes) {
  return Tensor(Shape{static_cast<std::int64_t>(bytes)}, DType::uint8, gpu);
}

// (x, gamma, beta) -> {y, mean, variance (biased), inv_std}.
void batch_norm_training_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const double eps = ctx.attrs().get_float("epsilon");
  const NormRows v = norm_rows(x);
  Tensor workspace = workspace_for(gpu, batch_norm_workspace_bytes(v));
  dispatch_floating(x.dtype(), op_names::batch_norm_training, [&]<typename T>() {
    CUDA_CHECK(launch_batch_norm_training<T>(x.data<T>(), ctx.inputs[1].data<T>(), ctx.inputs[2].data<T>(), eps,
                                             ctx.outputs[0].data<T>(), ctx.outputs[1].data<T>(),
                                             ctx.outputs[2].data<T>(), ctx.outputs[3].data<T>(), v,
                                             workspace.raw_data(), gpu.stream()));
  });
}

// (dy, x, gamma, mean, inv_std) -> {dx, dgamma, dbeta}.
void batch_norm_training_grad_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[1];
  CudaDevice& gpu = gpu_of(ctx);
  const NormRows v = norm_rows(x);
  Tensor workspace = workspace_for(gpu, batch_norm_workspace_bytes(v));
  dispatch_floating(x.dtype(), op_names::batch_norm_training_grad, [&]<typename T>() {
    CUDA_CHECK(launch_batch_norm_training_grad<T>(ctx.inputs[0].data<T>(), x.data<T>(), ctx.inputs[2].data<T>(),
                                                  ctx.inputs[3].data<T>(), ctx.inputs[4].data<T>(),
                                                  ctx.outputs[0].data<T>(), ctx.outputs[1].data<T>(),
                                                  ctx.outputs[2].data<T>(), v, workspace.raw_data(), gpu.stream()));
  });
}

// (dmean, dvariance, dinv_std, x, mean, inv_std) -> dx.
void batch_norm_stats_grad_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[3];
  CudaDevice& gpu = gpu_of(ctx);
  const NormRows v = norm_rows(x);
  Tensor workspace = workspace_for(gpu, batch_norm_workspace_bytes(v));
  dispatch_floating(x.dtype(), op_names::batch_norm_stats_grad, [&]<typename T>() {
    CUDA_CHECK(launch_batch_norm_stats_grad<T>(ctx.inputs[0].data<T>(), ctx.inputs[1].data<T>(),
                                               ctx.inputs[2].data<T>(), x.data<T>(), ctx.inputs[4].data<T>(),
                                               ctx.inputs[5].data<T>(), ctx.outputs[0].data<T>(), v,
                                               workspace.raw_data(), gpu.stream()));
  });
}

// (x, gamma, beta, mean, variance) -> y.
void batch_norm_inference_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const double eps = ctx.attrs().get_float("epsilon");
  const NormRows v = norm_rows(x);
  Tensor workspace = workspace_for(gpu, batch_norm_workspace_bytes(v));
  dispatch_floating(x.dtype(), op_names::batch_norm_inference, [&]<typename T>() {
    CUDA_CHECK(launch_batch_norm_inference<T>(x.data<T>(), ctx.inputs[1].data<T>(), ctx.inputs[2].data<T>(),
                                              ctx.inputs[3].data<T>(), ctx.inputs[4].data<T>(), eps,
                                              ctx.outputs[0].data<T>(), v, workspace.raw_data(), gpu.stream()));
  });
}

// (dy, x, gamma, mean, variance) -> {dx, dgamma, dbeta, dmean, dvariance}.
void batch_norm_inference_grad_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[1];
  CudaDevice& gpu = gpu_of(ctx);
  const double eps = ctx.attrs().get_float("epsilon");
  const NormRows v = norm_rows(x);
  Tensor workspace = workspace_for(gpu, batch_norm_workspace_bytes(v));
  dispatch_floating(x.dtype(), op_names::batch_norm_inference_grad, [&]<typename T>() {
    CUDA_CHECK(launch_batch_norm_inference_grad<T>(
        ctx.inputs[0].data<T>(), x.data<T>(), ctx.inputs[2].data<T>(), ctx.inputs[3].data<T>(),
        ctx.inputs[4].data<T>(), eps, ctx.outputs[0].data<T>(), ctx.outputs[1].data<T>(), ctx.outputs[2].data<T>(),
        ctx.outputs[3].data<T>(), ctx.outputs[4].data<T>(), v, workspace.raw_data(), gpu.stream()));
  });
}

// (x, gamma, beta) -> y.
void layer_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const double eps = ctx.attrs().get_float("epsilon");
  dispatch_floating(x.dtype(), op_names::layer_norm, [&]<typename T>() {
    CUDA_CHECK(launch_layer_norm<T>(x.data<T>(), ctx.inputs[1].data<T>(), ctx.inputs[2].data<T>(), eps,
                                    ctx.outputs[0].data<T>(), norm_rows(x), gpu_of(ctx).stream()));
  });
}

// (dy, x, gamma) -> {dx, dgamma, dbeta}.
void layer_norm_grad_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[1];
  CudaDevice& gpu = gpu_of(ctx);
  const double eps = ctx.attrs().get_float("epsilon");
  const NormRows v = norm_rows(x);
  Tensor workspace = workspace_for(gpu, layer_norm_workspace_bytes(v));
  dispatch_floating(x.dtype(), op_names::layer_norm_grad, [&]<typename T>() {
    CUDA_CHECK(launch_layer_norm_grad<T>(ctx.inputs[0].data<T>(), x.data<T>(), ctx.inputs[2].data<T>(), eps,
                                         ctx.outputs[0].data<T>(), ctx.outputs[1].data<T>(), ctx.outputs[2].data<T>(),
                                         v, workspace.raw_data(), gpu.stream()));
  });
}

}  // namespace

void register_normalization_kernels() {
  const auto cuda = DeviceKind::cuda;
  register_kernel(op_names::batch_norm_training, cuda, batch_norm_training_kernel);
  register_kernel(op_names::batch_norm_training_grad, cuda, batch_norm_training_grad_kernel);
  register_kernel(op_names::batch_norm_stats_grad, cuda, batch_norm_stats_grad_kernel);
  register_kernel(op_names::batch_norm_inference, cuda, batch_norm_inference_kernel);
  register_kernel(op_names::batch_norm_inference_grad, cuda, batch_norm_inference_grad_kernel);
  register_kernel(op_names::layer_norm, cuda, layer_norm_kernel);
  register_kernel(op_names::layer_norm_grad, cuda, layer_norm_grad_kernel);
}

}  // namespace tower::cuda
