// The CUDA kernel table entries of the unary math ops, the activations and their gradients
// (float32 and float64; the integer forms of negative, square, abs and sign stay on the CPU).
#include "tower/backends/cuda/activation_launchers.h"
#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"

namespace tower::cuda {

namespace {

constexpr bool takes_alpha(UnaryOp op) { return op == UnaryOp::leaky_relu || op == UnaryOp::elu; }
constexpr bool takes_alpha(GradOp op) { return op == GradOp::leaky_relu || op == GradOp::elu; }

template <UnaryOp op>
void unary_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const double alpha = takes_alpha(op) ? ctx.attrs().get_float("alpha") : 0.0;
  dispatch_floating(x.dtype(), ctx.node.op().c_str(), [&]<typename T>() {
    CUDA_CHECK(launch_unary<T>(op, x.data<T>(), y.data<T>(), x.num_elements(), static_cast<T>(alpha), gpu.stream()));
  });
}

template <GradOp op>
void grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.inputs[0];
  const Tensor& v = ctx.inputs[1];
  Tensor& out = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  const double alpha = takes_alpha(op) ? ctx.attrs().get_float("alpha") : 0.0;
  dispatch_floating(dy.dtype(), ctx.node.op().c_str(), [&]<typename T>() {
    CUDA_CHECK(launch_activation_grad<T>(op, dy.data<T>(), v.data<T>(), out.data<T>(), out.num_elements(),
                                         static_cast<T>(alpha), gpu.stream()));
  });
}

}  // namespace

void register_activation_kernels() {
  const auto cuda = DeviceKind::cuda;
  register_kernel("negative", cuda, unary_kernel<UnaryOp::negative>);
  register_kernel("exp", cuda, unary_kernel<UnaryOp::exp>);
  register_kernel("log", cuda, unary_kernel<UnaryOp::log>);
  register_kernel("sqrt", cuda, unary_kernel<UnaryOp::sqrt>);
  register_kernel("square", cuda, unary_kernel<UnaryOp::square>);
  register_kernel("abs", cuda, unary_kernel<UnaryOp::abs>);
  register_kernel("sign", cuda, unary_kernel<UnaryOp::sign>);
  register_kernel("relu", cuda, unary_kernel<UnaryOp::relu>);
  register_kernel("leaky_relu", cuda, unary_kernel<UnaryOp::leaky_relu>);
  register_kernel("elu", cuda, unary_kernel<UnaryOp::elu>);
  register_kernel("sigmoid", cuda, unary_kernel<UnaryOp::sigmoid>);
  register_kernel("tanh", cuda, unary_kernel<UnaryOp::tanh>);
  register_kernel("relu_grad", cuda, grad_kernel<GradOp::relu>);
  register_kernel("leaky_relu_grad", cuda, grad_kernel<GradOp::leaky_relu>);
  register_kernel("elu_grad", cuda, grad_kernel<GradOp::elu>);
  register_kernel("sigmoid_grad", cuda, grad_kernel<GradOp::sigmoid>);
  register_kernel("tanh_grad", cuda, grad_kernel<GradOp::tanh>);
}

}  // namespace tower::cuda
