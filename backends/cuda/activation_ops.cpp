// The CUDA kernel table entries of the unary math ops, the activations and their gradients
// (float32 and float64; the integer forms of negative, square, abs and sign stay on the CPU).
#include "tower/backends/cuda/activation_launchers.h"
#include "tower/backends/cuda/cuda_check.h"
#include "tower/backends/cuda/kernel_context.h"
#include "tower/backends/cuda/kernels.h"
#include "tower/core/op_names.h"
#include "tower/core/ops/shape_utils.h"

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

}  // namespace

void register_activation_kernels() {
  const auto cuda = DeviceKind::cuda;
  register_kernel(op_names::negative, cuda, unary_kernel<UnaryOp::negative>);
  register_kernel(op_names::exp, cuda, unary_kernel<UnaryOp::exp>);
  register_kernel(op_names::log, cuda, unary_kernel<UnaryOp::log>);
  register_kernel(op_names::erf, cuda, unary_kernel<UnaryOp::erf>);
  register_kernel(op_names::sqrt, cuda, unary_kernel<UnaryOp::sqrt>);
  register_kernel(op_names::square, cuda, unary_kernel<UnaryOp::square>);
  register_kernel(op_names::abs, cuda, unary_kernel<UnaryOp::abs>);
  register_kernel(op_names::sign, cuda, unary_kernel<UnaryOp::sign>);
  register_kernel(op_names::relu, cuda, unary_kernel<UnaryOp::relu>);
  register_kernel(op_names::leaky_relu, cuda, unary_kernel<UnaryOp::leaky_relu>);
  register_kernel(op_names::elu, cuda, unary_kernel<UnaryOp::elu>);
  register_kernel(op_names::sigmoid, cuda, unary_kernel<UnaryOp::sigmoid>);
  register_kernel(op_names::tanh, cuda, unary_kernel<UnaryOp::tanh>);
  register_kernel(op_names::relu_grad, cuda, grad_kernel<GradOp::relu>);
  register_kernel(op_names::leaky_relu_grad, cuda, grad_kernel<GradOp::leaky_relu>);
  register_kernel(op_names::elu_grad, cuda, grad_kernel<GradOp::elu>);
  register_kernel(op_names::sigmoid_grad, cuda, grad_kernel<GradOp::sigmoid>);
  register_kernel(op_names::tanh_grad, cuda, grad_kernel<GradOp::tanh>);
  register_kernel(op_names::softmax, DeviceKind::cuda, softmax_kernel<SoftmaxOp::softmax>);
  register_kernel(op_names::log_softmax, DeviceKind::cuda, softmax_kernel<SoftmaxOp::log_softmax>);
  register_kernel(op_names::softmax_grad, DeviceKind::cuda, softmax_grad_kernel<SoftmaxOp::softmax>);
  register_kernel(op_names::log_softmax_grad, DeviceKind::cuda, softmax_grad_kernel<SoftmaxOp::log_softmax>);
}

}  // namespace tower::cuda
