// CUDA kernels of softmax, log_softmax, their gradients and the fused softmax cross-entropies.
// The formulas are the CPU kernels' (activation_kernels.cpp, loss_kernels.cpp).
#include <algorithm>
#include <cmath>

#include "tower/backends/cuda/softmax_launchers.h"
#include "tower/backends/cuda/launch.cuh"

namespace tower::cuda {

namespace {

template <typename T>
__device__ T lane_max(const T* x, std::int64_t n, std::int64_t s) {
  T m = -INFINITY;
  for (std::int64_t j = 0; j < n; ++j) m = x[j * s] > m ? x[j * s] : m;
  return m;
}

// The lane's log-sum-exp, stabilized by its max.
template <typename T>
__device__ T lane_log_sum_exp(const T* x, std::int64_t n, std::int64_t s) {
  const T m = lane_max(x, n, s);
  T sum = 0;
  for (std::int64_t j = 0; j < n; ++j) sum += exp(x[j * s] - m);
  return m + log(sum);
}

// Writes softmax(x) into out and returns the lane's log-sum-exp.
template <typename T>
__device__ T lane_softmax(const T* x, T* out, std::int64_t n, std::int64_t s) {
  const T m = lane_max(x, n, s);
  T sum = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    out[j * s] = exp(x[j * s] - m);
    sum += out[j * s];
  }
  const T inv = T(1) / sum;
  for (std::int64_t j = 0; j < n; ++j) out[j * s] *= inv;
  return m + log(sum);
}

template <SoftmaxOp op, typename T>
__global__ void softmax_kernel(const T* x, T* y, SoftmaxLanes l) {
  TOWER_GRID_STRIDE(k, l.outer * l.inner) {
    const std::int64_t off = (k / l.inner) * l.n * l.inner + k % l.inner, s = l.inner;
    if constexpr (op == SoftmaxOp::softmax) {
      lane_softmax(x + off, y + off, l.n, s);
    } else {
      const T lse = lane_log_sum_exp(x + off, l.n, s);
      for (std::int64_t j = 0; j < l.n; ++j) y[off + j * s] = x[off + j * s] - lse;
    }
  }
}

template <SoftmaxOp op, typename T>
__global__ void softmax_grad_kernel(const T* dy, const T* y, T* dx, SoftmaxLanes l) {
  TOWER_GRID_STRIDE(k, l.outer * l.inner) {
    const std::int64_t off = (k / l.inner) * l.n * l.inner + k % l.inner, s = l.inner;
    T acc = 0;
    for (std::int64_t j = 0; j < l.n; ++j)
      acc += op == SoftmaxOp::softmax ? dy[off + j * s] * y[off + j * s] : dy[off + j * s];
    for (std::int64_t j = 0; j < l.n; ++j) {
      const std::int64_t i = off + j * s;
      dx[i] = op == SoftmaxOp::softmax ? y[i] * (dy[i] - acc) : dy[i] - exp(y[i]) * acc;
    }
  }
}

template <typename T>
__global__ void softmax_cross_entropy_kernel(const T* x, const T* t, T* loss, T* bp, std::int64_t batch,
                                             std::int64_t classes) {
  TOWER_GRID_STRIDE(r, batch) {
    const T* xr = x + r * classes;
    const T* tr = t + r * classes;
    T* br = bp + r * classes;
    const T lse = lane_softmax(xr, br, classes, 1);
    T acc = 0;
    for (std::int64_t j = 0; j < classes; ++j) {
      if (tr[j] != T(0)) acc += tr[j] * (lse - xr[j]);  // a zero label adds nothing, even at -inf
      br[j] -= tr[j];
    }
    loss[r] = acc;
  }
}

template <typename T, typename I>
__global__ void sparse_softmax_cross_entropy_kernel(const T* x, const I* labels, T* loss, T* bp, std::int64_t batch,
                                                    std::int64_t classes) {
  TOWER_GRID_STRIDE(r, batch) {
    const T* xr = x + r * classes;
    T* br = bp + r * classes;
    const auto label = static_cast<std::int64_t>(labels[r]);
    if (label < 0 || label >= classes) {
      loss[r] = NAN;
      for (std::int64_t j = 0; j < classes; ++j) br[j] = NAN;
      continue;
    }
    const T lse = lane_softmax(xr, br, classes, 1);
    br[label] -= T(1);
    loss[r] = lse - xr[label];
  }
}

template <typename T>
__global__ void softmax_cross_entropy_grad_kernel(const T* d, const T* bp, T* out, std::int64_t batch,
                                                  std::int64_t classes) {
  TOWER_GRID_STRIDE(i, batch * classes) { out[i] = d[i / classes] * bp[i]; }
}

}  // namespace

template <typename T>
cudaError_t launch_softmax(SoftmaxOp op, const T* x, T* y, SoftmaxLanes lanes, cudaStream_t stream) {
  const std::int64_t n = lanes.outer * lanes.inner;
  if (n == 0 || lanes.n == 0) return cudaSuccess;
  if (op == SoftmaxOp::softmax)
    softmax_kernel<SoftmaxOp::softmax, T><<<blocks_for(n), kThreads, 0, stream>>>(x, y, lanes);
  else
    softmax_kernel<SoftmaxOp::log_softmax, T><<<blocks_for(n), kThreads, 0, stream>>>(x, y, lanes);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_softmax_grad(SoftmaxOp op, const T* dy, const T* y, T* dx, SoftmaxLanes lanes, cudaStream_t stream) {
  const std::int64_t n = lanes.outer * lanes.inner;
  if (n == 0 || lanes.n == 0) return cudaSuccess;
  if (op == SoftmaxOp::softmax)
    softmax_grad_kernel<SoftmaxOp::softmax, T><<<blocks_for(n), kThreads, 0, stream>>>(dy, y, dx, lanes);
  else
    softmax_grad_kernel<SoftmaxOp::log_softmax, T><<<blocks_for(n), kThreads, 0, stream>>>(dy, y, dx, lanes);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_softmax_cross_entropy(const T* logits, const T* labels, T* loss, T* backprop, std::int64_t batch,
                                         std::int64_t classes, cudaStream_t stream) {
  if (batch == 0) return cudaSuccess;
  softmax_cross_entropy_kernel<T><<<blocks_for(batch), kThreads, 0, stream>>>(logits, labels, loss, backprop, batch,
                                                                              classes);
  return cudaGetLastError();
}

template <typename T, typename I>
cudaError_t launch_sparse_softmax_cross_entropy(const T* logits, const I* labels, T* loss, T* backprop,
                                                std::int64_t batch, std::int64_t classes, cudaStream_t stream) {
  if (batch == 0) return cudaSuccess;
  sparse_softmax_cross_entropy_kernel<T, I>
      <<<blocks_for(batch), kThreads, 0, stream>>>(logits, labels, loss, backprop, batch, classes);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_softmax_cross_entropy_grad(const T* dloss, const T* backprop, T* dlogits, std::int64_t batch,
                                              std::int64_t classes, cudaStream_t stream) {
  if (batch * classes == 0) return cudaSuccess;
  softmax_cross_entropy_grad_kernel<T>
      <<<blocks_for(batch * classes), kThreads, 0, stream>>>(dloss, backprop, dlogits, batch, classes);
  return cudaGetLastError();
}

#define TOWER_INSTANTIATE(T)                                                                                       \
  template cudaError_t launch_softmax<T>(SoftmaxOp, const T*, T*, SoftmaxLanes, cudaStream_t);                    \
  template cudaError_t launch_softmax_grad<T>(SoftmaxOp, const T*, const T*, T*, SoftmaxLanes, cudaStream_t);     \
  template cudaError_t launch_softmax_cross_entropy<T>(const T*, const T*, T*, T*, std::int64_t, std::int64_t,     \
                                                       cudaStream_t);                                              \
  template cudaError_t launch_sparse_softmax_cross_entropy<T, std::int32_t>(                                       \
      const T*, const std::int32_t*, T*, T*, std::int64_t, std::int64_t, cudaStream_t);                            \
  template cudaError_t launch_sparse_softmax_cross_entropy<T, std::int64_t>(                                       \
      const T*, const std::int64_t*, T*, T*, std::int64_t, std::int64_t, cudaStream_t);                            \
  template cudaError_t launch_sparse_softmax_cross_entropy<T, std::uint8_t>(                                       \
      const T*, const std::uint8_t*, T*, T*, std::int64_t, std::int64_t, cudaStream_t);                            \
  template cudaError_t launch_softmax_cross_entropy_grad<T>(const T*, const T*, T*, std::int64_t, std::int64_t,    \
                                                            cudaStream_t);
TOWER_INSTANTIATE(float)
TOWER_INSTANTIATE(double)
#undef TOWER_INSTANTIATE

}  // namespace tower::cuda
