// The CUDA kernel table entries of softmax, log_softmax, their gradients and the fused softmax
// cross-entropies.
#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/backends/cuda/softmax_launchers.h"
#include "tower/core/ops/shape_utils.h"

namespace tower::cuda {

namespace {

SoftmaxLanes lanes_of(const KernelContext& ctx, const Shape& shape) {
  const AxisLanes l = lanes_around(shape, static_cast<int>(ctx.attrs().get_int("axis")), ctx.node.op().c_str());
  return {l.outer, l.n, l.inner};
}

template <SoftmaxOp op>
void softmax_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const SoftmaxLanes lanes = lanes_of(ctx, x.shape());
  dispatch_floating(x.dtype(), ctx.node.op().c_str(), [&]<typename T>() {
    CUDA_CHECK(launch_softmax<T>(op, x.data<T>(), y.data<T>(), lanes, gpu.stream()));
  });
}

template <SoftmaxOp op>
void softmax_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  const Tensor& y = ctx.inputs[1];
  Tensor& dx = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const SoftmaxLanes lanes = lanes_of(ctx, dy.shape());
  dispatch_floating(dy.dtype(), ctx.node.op().c_str(), [&]<typename T>() {
    CUDA_CHECK(launch_softmax_grad<T>(op, dy.data<T>(), y.data<T>(), dx.data<T>(), lanes, gpu.stream()));
  });
}

void softmax_cross_entropy_kernel(KernelContext& ctx) {
  const Tensor& logits = ctx.inputs[0];  // (batch, classes)
  const Tensor& labels = ctx.inputs[1];  // (batch, classes)
  CudaDevice& gpu = gpu_of(ctx);
  dispatch_floating(logits.dtype(), "softmax_cross_entropy", [&]<typename T>() {
    CUDA_CHECK(launch_softmax_cross_entropy<T>(logits.data<T>(), labels.data<T>(), ctx.outputs[0].data<T>(),
                                               ctx.outputs[1].data<T>(), logits.shape()[0], logits.shape()[1],
                                               gpu.stream()));
  });
}

void sparse_softmax_cross_entropy_kernel(KernelContext& ctx) {
  const Tensor& logits = ctx.inputs[0];  // (batch, classes)
  const Tensor& labels = ctx.inputs[1];  // (batch,) integer
  CudaDevice& gpu = gpu_of(ctx);
  dispatch_integer(labels.dtype(), "sparse_softmax_cross_entropy", [&]<typename I>() {
    dispatch_floating(logits.dtype(), "sparse_softmax_cross_entropy", [&]<typename T>() {
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
  dispatch_floating(backprop.dtype(), "softmax_cross_entropy_grad", [&]<typename T>() {
    CUDA_CHECK(launch_softmax_cross_entropy_grad<T>(dloss.data<T>(), backprop.data<T>(), ctx.outputs[0].data<T>(),
                                                    backprop.shape()[0], backprop.shape()[1], gpu.stream()));
  });
}

}  // namespace

void register_softmax_kernels() {
  const auto cuda = DeviceKind::cuda;
  register_kernel("softmax", cuda, softmax_kernel<SoftmaxOp::softmax>);
  register_kernel("log_softmax", cuda, softmax_kernel<SoftmaxOp::log_softmax>);
  register_kernel("softmax_grad", cuda, softmax_grad_kernel<SoftmaxOp::softmax>);
  register_kernel("log_softmax_grad", cuda, softmax_grad_kernel<SoftmaxOp::log_softmax>);
  register_kernel("softmax_cross_entropy", cuda, softmax_cross_entropy_kernel);
  register_kernel("sparse_softmax_cross_entropy", cuda, sparse_softmax_cross_entropy_kernel);
  register_kernel("softmax_cross_entropy_grad", cuda, softmax_cross_entropy_grad_kernel);
}

}  // namespace tower::cuda
