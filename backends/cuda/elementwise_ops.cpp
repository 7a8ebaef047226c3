// The CUDA kernel table entries of the elementwise ops: KernelContext in, launchers out.
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

// y = op(a, b) with NumPy broadcasting (up to BroadcastLayout::kMaxRank axes).
template <BinaryOp op>
void binary_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.inputs[0];
  const Tensor& b = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  CudaDevice& gpu = gpu_of(ctx);
  BroadcastLayout layout;
  const bool same_shape = a.shape() == b.shape();
  if (!same_shape) {
    if (y.shape().rank() > BroadcastLayout::kMaxRank)
      raise<ShapeError>("{} on {}: broadcasting on the GPU handles up to {} axes, got {}", ctx.node.op(),
                        ctx.device.name(), BroadcastLayout::kMaxRank, y.shape().to_string());
    layout.rank = y.shape().rank();
    const auto sa = broadcast_strides(a.shape(), y.shape()), sb = broadcast_strides(b.shape(), y.shape());
    for (int d = 0; d < layout.rank; ++d) {
      layout.dims[d] = y.shape()[d];
      layout.strides_a[d] = sa[static_cast<std::size_t>(d)];
      layout.strides_b[d] = sb[static_cast<std::size_t>(d)];
    }
  }
  dispatch_floating(y.dtype(), ctx.node.op().c_str(), [&]<typename T>() {
    CUDA_CHECK(launch_binary<T>(op, a.data<T>(), b.data<T>(), y.data<T>(), y.num_elements(),
                                same_shape ? nullptr : &layout, gpu.stream()));
  });
}

}  // namespace

void register_elementwise_kernels() {
  register_kernel("identity", DeviceKind::cuda, alias_kernel);
  register_kernel("stop_gradient", DeviceKind::cuda, alias_kernel);
  register_kernel("fill_like", DeviceKind::cuda, fill_like_kernel);
  register_kernel("scale", DeviceKind::cuda, scale_kernel);
  register_kernel("add", DeviceKind::cuda, binary_kernel<BinaryOp::add>);
  register_kernel("subtract", DeviceKind::cuda, binary_kernel<BinaryOp::subtract>);
  register_kernel("multiply", DeviceKind::cuda, binary_kernel<BinaryOp::multiply>);
  register_kernel("divide", DeviceKind::cuda, binary_kernel<BinaryOp::divide>);
  register_kernel("maximum", DeviceKind::cuda, binary_kernel<BinaryOp::maximum>);
  register_kernel("minimum", DeviceKind::cuda, binary_kernel<BinaryOp::minimum>);
}

}  // namespace tower::cuda
