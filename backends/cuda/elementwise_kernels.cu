// CUDA kernels of the first elementwise ops (fill_like, scale, add of equal shapes, aliases).
#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/kernels.h"
#include "core/op_registry.h"

namespace tower::cuda {

namespace {

template <typename T>
__global__ void fill(T* y, std::int64_t n, T value) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    y[i] = value;
}

template <typename T>
__global__ void scale(const T* x, T* y, std::int64_t n, T factor) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    y[i] = x[i] * factor;
}

template <typename T>
__global__ void add_same_shape(const T* a, const T* b, T* y, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    y[i] = a[i] + b[i];
}

// Launchers: check arguments, launch on the device's stream, check the launch.
constexpr int kThreads = 256;
unsigned blocks_for(std::int64_t n) {
  return static_cast<unsigned>(std::min<std::int64_t>((n + kThreads - 1) / kThreads, 65535));
}

cudaStream_t stream_of(KernelContext& ctx) { return static_cast<CudaDevice&>(ctx.device).stream(); }

void alias_kernel(KernelContext&) {}

void fill_like_kernel(KernelContext& ctx) {
  Tensor& y = ctx.outputs[0];
  const double value = ctx.attrs().get_float("value");
  const std::int64_t n = y.num_elements();
  if (n == 0) return;
  dispatch_floating(y.dtype(), "fill_like", [&]<typename T>() {
    fill<T><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(y.data<T>(), n, static_cast<T>(value));
  });
  CUDA_CHECK(cudaGetLastError());
}

void scale_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const std::int64_t n = x.num_elements();
  if (n == 0) return;
  const double factor = ctx.attrs().get_float("factor");
  dispatch_floating(x.dtype(), "scale", [&]<typename T>() {
    scale<T><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(x.data<T>(), y.data<T>(), n, static_cast<T>(factor));
  });
  CUDA_CHECK(cudaGetLastError());
}

void add_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.inputs[0];
  const Tensor& b = ctx.inputs[1];
  Tensor& y = ctx.outputs[0];
  if (a.shape() != b.shape())
    raise<ShapeError>("the CUDA add kernel handles equal shapes only so far, got {} and {}", a.shape().to_string(),
                      b.shape().to_string());
  const std::int64_t n = y.num_elements();
  if (n == 0) return;
  dispatch_floating(y.dtype(), "add", [&]<typename T>() {
    add_same_shape<T><<<blocks_for(n), kThreads, 0, stream_of(ctx)>>>(a.data<T>(), b.data<T>(), y.data<T>(), n);
  });
  CUDA_CHECK(cudaGetLastError());
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
