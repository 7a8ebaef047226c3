// CUDA kernels of fill, scale and the broadcasting binary arithmetic, and their launchers.
#include <algorithm>

#include "tower/backends/cuda/elementwise_launchers.h"
#include "tower/backends/cuda/launch.cuh"

namespace tower::cuda {

namespace {

// Grid-stride loops: any n with a bounded grid.
template <typename T>
__global__ void fill_kernel(T* y, std::int64_t n, T value) {
  TOWER_GRID_STRIDE(i, n)
    y[i] = value;
}

template <typename T>
__global__ void scale_kernel(const T* x, T* y, std::int64_t n, T factor) {
  TOWER_GRID_STRIDE(i, n)
    y[i] = x[i] * factor;
}

template <typename S, typename D>
__global__ void cast_kernel(const S* x, D* y, std::int64_t n) {
  TOWER_GRID_STRIDE(i, n)
    y[i] = static_cast<D>(x[i]);
}

template <BinaryOp op, typename T>
__device__ T apply_binary(T a, T b) {
  if constexpr (op == BinaryOp::add) return a + b;
  else if constexpr (op == BinaryOp::subtract) return a - b;
  else if constexpr (op == BinaryOp::multiply) return a * b;
  else if constexpr (op == BinaryOp::divide) return a / b;
  else if constexpr (op == BinaryOp::maximum) return a >= b ? a : b;
  else if constexpr (op == BinaryOp::minimum) return a <= b ? a : b;
  else if constexpr (op == BinaryOp::equal) return T(a == b ? 1 : 0);
  else if constexpr (op == BinaryOp::greater) return T(a > b ? 1 : 0);
  else if constexpr (op == BinaryOp::greater_equal) return T(a >= b ? 1 : 0);
  else if constexpr (op == BinaryOp::less) return T(a < b ? 1 : 0);
  else return T(a <= b ? 1 : 0);
}

template <BinaryOp op, typename T>
__global__ void binary_same_shape_kernel(const T* a, const T* b, T* y, std::int64_t n) {
  TOWER_GRID_STRIDE(i, n)
    y[i] = apply_binary<op>(a[i], b[i]);
}

// Output element i's coordinates, last axis fastest, give each operand's offset.
template <BinaryOp op, typename T>
__global__ void binary_broadcast_kernel(const T* a, const T* b, T* y, std::int64_t n, BroadcastLayout layout) {
  TOWER_GRID_STRIDE(i, n) {
    std::int64_t rest = i, offset_a = 0, offset_b = 0;
    for (int d = layout.rank - 1; d >= 0; --d) {
      const std::int64_t coordinate = rest % layout.dims[d];
      rest /= layout.dims[d];
      offset_a += coordinate * layout.strides_a[d];
      offset_b += coordinate * layout.strides_b[d];
    }
    y[i] = apply_binary<op>(a[offset_a], b[offset_b]);
  }
}

template <typename T>
__global__ void broadcast_kernel(const T* x, T* y, std::int64_t n, BroadcastLayout layout, T factor) {
  TOWER_GRID_STRIDE(i, n) { y[i] = x[strided_offset(i, layout.rank, layout.dims, layout.strides_a)] * factor; }
}

template <BinaryOp op, typename T>
void start_binary(const T* a, const T* b, T* y, std::int64_t n, const BroadcastLayout* layout, cudaStream_t stream) {
  if (layout)
    binary_broadcast_kernel<op, T><<<blocks_for(n), kThreads, 0, stream>>>(a, b, y, n, *layout);
  else
    binary_same_shape_kernel<op, T><<<blocks_for(n), kThreads, 0, stream>>>(a, b, y, n);
}

}  // namespace

template <typename T>
cudaError_t launch_fill(T* y, std::int64_t n, T value, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  fill_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(y, n, value);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_scale(const T* x, T* y, std::int64_t n, T factor, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  scale_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(x, y, n, factor);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_binary(BinaryOp op, const T* a, const T* b, T* y, std::int64_t n, const BroadcastLayout* layout,
                          cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (op) {
    case BinaryOp::add: start_binary<BinaryOp::add>(a, b, y, n, layout, stream); break;
    case BinaryOp::subtract: start_binary<BinaryOp::subtract>(a, b, y, n, layout, stream); break;
    case BinaryOp::multiply: start_binary<BinaryOp::multiply>(a, b, y, n, layout, stream); break;
    case BinaryOp::divide: start_binary<BinaryOp::divide>(a, b, y, n, layout, stream); break;
    case BinaryOp::maximum: start_binary<BinaryOp::maximum>(a, b, y, n, layout, stream); break;
    case BinaryOp::minimum: start_binary<BinaryOp::minimum>(a, b, y, n, layout, stream); break;
    case BinaryOp::equal: start_binary<BinaryOp::equal>(a, b, y, n, layout, stream); break;
    case BinaryOp::greater: start_binary<BinaryOp::greater>(a, b, y, n, layout, stream); break;
    case BinaryOp::greater_equal: start_binary<BinaryOp::greater_equal>(a, b, y, n, layout, stream); break;
    case BinaryOp::less: start_binary<BinaryOp::less>(a, b, y, n, layout, stream); break;
    case BinaryOp::less_equal: start_binary<BinaryOp::less_equal>(a, b, y, n, layout, stream); break;
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_broadcast(const T* x, T* y, std::int64_t n, const BroadcastLayout& layout, T factor,
                             cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  broadcast_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(x, y, n, layout, factor);
  return cudaGetLastError();
}

template <typename S, typename D>
cudaError_t launch_cast(const S* x, D* y, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  cast_kernel<S, D><<<blocks_for(n), kThreads, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}

#define TOWER_CAST_FROM(S)                                                                              \
  template cudaError_t launch_cast<S, float>(const S*, float*, std::int64_t, cudaStream_t);               \
  template cudaError_t launch_cast<S, double>(const S*, double*, std::int64_t, cudaStream_t);             \
  template cudaError_t launch_cast<S, std::int32_t>(const S*, std::int32_t*, std::int64_t, cudaStream_t); \
  template cudaError_t launch_cast<S, std::int64_t>(const S*, std::int64_t*, std::int64_t, cudaStream_t); \
  template cudaError_t launch_cast<S, std::uint8_t>(const S*, std::uint8_t*, std::int64_t, cudaStream_t); \
  template cudaError_t launch_cast<S, float16_t>(const S*, float16_t*, std::int64_t, cudaStream_t);       \
  template cudaError_t launch_cast<S, bfloat16_t>(const S*, bfloat16_t*, std::int64_t, cudaStream_t);
TOWER_CAST_FROM(float)
TOWER_CAST_FROM(double)
TOWER_CAST_FROM(std::int32_t)
TOWER_CAST_FROM(std::int64_t)
TOWER_CAST_FROM(std::uint8_t)
TOWER_CAST_FROM(float16_t)
TOWER_CAST_FROM(bfloat16_t)
#undef TOWER_CAST_FROM

template cudaError_t launch_broadcast<float>(const float*, float*, std::int64_t, const BroadcastLayout&, float,
                                             cudaStream_t);
template cudaError_t launch_broadcast<double>(const double*, double*, std::int64_t, const BroadcastLayout&, double,
                                              cudaStream_t);
template cudaError_t launch_fill<float>(float*, std::int64_t, float, cudaStream_t);
template cudaError_t launch_fill<double>(double*, std::int64_t, double, cudaStream_t);
template cudaError_t launch_fill<std::int32_t>(std::int32_t*, std::int64_t, std::int32_t, cudaStream_t);
template cudaError_t launch_fill<std::int64_t>(std::int64_t*, std::int64_t, std::int64_t, cudaStream_t);
template cudaError_t launch_fill<std::uint8_t>(std::uint8_t*, std::int64_t, std::uint8_t, cudaStream_t);
template cudaError_t launch_scale<float>(const float*, float*, std::int64_t, float, cudaStream_t);
template cudaError_t launch_scale<double>(const double*, double*, std::int64_t, double, cudaStream_t);
template cudaError_t launch_binary<float>(BinaryOp, const float*, const float*, float*, std::int64_t,
                                          const BroadcastLayout*, cudaStream_t);
template cudaError_t launch_binary<double>(BinaryOp, const double*, const double*, double*, std::int64_t,
                                           const BroadcastLayout*, cudaStream_t);

}  // namespace tower::cuda
