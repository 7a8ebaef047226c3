// CUDA kernels of the losses (regression, fused softmax cross-entropies), and their launchers. The
// formulas are the CPU kernels' (backends/cpu/loss_kernels.cpp).
#include <cuda/std/limits>

#include "tower/backends/cuda/launch.cuh"
#include "tower/backends/cuda/loss_launchers.h"
#include "tower/backends/cuda/softmax_lanes.cuh"

namespace tower::cuda {

namespace {

// One thread per row: the feature axis d of a regression target is short.
template <RegressionLoss kind, typename T>
__global__ void mean_error_kernel(const T* y_true, const T* y_pred, T* loss, std::int64_t rows, std::int64_t d) {
  TOWER_GRID_STRIDE(r, rows) {
    if (d == 0) {  // the mean of nothing, as NumPy
      loss[r] = ::cuda::std::numeric_limits<T>::quiet_NaN();
      continue;
    }
    T acc = 0;
    for (std::int64_t j = 0; j < d; ++j) {
      const T diff = y_pred[r * d + j] - y_true[r * d + j];
      acc += kind == RegressionLoss::squared ? diff * diff : (diff < T(0) ? -diff : diff);
    }
    loss[r] = acc * (T(1) / static_cast<T>(d));
  }
}

template <RegressionLoss kind, typename T>
__global__ void mean_error_grad_kernel(const T* dloss, const T* y_true, const T* y_pred, T* d_pred, std::int64_t rows,
                                       std::int64_t d) {
  const T k = static_cast<T>(kind == RegressionLoss::squared ? 2 : 1) / static_cast<T>(d);
  TOWER_GRID_STRIDE(i, rows * d) {
    const T diff = y_pred[i] - y_true[i];
    const T slope = kind == RegressionLoss::squared ? diff : static_cast<T>((T(0) < diff) - (diff < T(0)));
    d_pred[i] = dloss[i / d] * k * slope;
  }
}

}  // namespace

template <typename T>
cudaError_t launch_mean_error(RegressionLoss loss_kind, const T* y_true, const T* y_pred, T* loss, std::int64_t rows,
                              std::int64_t d, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  if (loss_kind == RegressionLoss::squared)
    mean_error_kernel<RegressionLoss::squared, T><<<blocks_for(rows), kThreads, 0, stream>>>(y_true, y_pred, loss, rows, d);
  else
    mean_error_kernel<RegressionLoss::absolute, T><<<blocks_for(rows), kThreads, 0, stream>>>(y_true, y_pred, loss, rows, d);
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_mean_error_grad(RegressionLoss loss_kind, const T* dloss, const T* y_true, const T* y_pred,
                                   T* d_pred, std::int64_t rows, std::int64_t d, cudaStream_t stream) {
  if (rows * d == 0) return cudaSuccess;
  const unsigned blocks = blocks_for(rows * d);
  if (loss_kind == RegressionLoss::squared)
    mean_error_grad_kernel<RegressionLoss::squared, T><<<blocks, kThreads, 0, stream>>>(dloss, y_true, y_pred, d_pred, rows, d);
  else
    mean_error_grad_kernel<RegressionLoss::absolute, T><<<blocks, kThreads, 0, stream>>>(dloss, y_true, y_pred, d_pred, rows, d);
  return cudaGetLastError();
}

#define TOWER_LOSS(T)                                                                                        \
  template cudaError_t launch_mean_error<T>(RegressionLoss, const T*, const T*, T*, std::int64_t, std::int64_t, \
                                            cudaStream_t);                                                   \
  template cudaError_t launch_mean_error_grad<T>(RegressionLoss, const T*, const T*, const T*, T*, std::int64_t, \
                                                 std::int64_t, cudaStream_t);
TOWER_LOSS(float)
TOWER_LOSS(double)
#undef TOWER_LOSS

// ---- the fused softmax cross-entropies (dense and sparse labels) and their gradient --------------

namespace {

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
cudaError_t launch_softmax_cross_entropy(const T* logits, const T* labels, T* loss, T* backprop, std::int64_t batch,
                                         std::int64_t classes, cudaStream_t stream) {
  if (batch == 0) return cudaSuccess;
  softmax_cross_entropy_kernel<T>
      <<<blocks_for(batch), kThreads, 0, stream>>>(logits, labels, loss, backprop, batch, classes);
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

#define TOWER_CROSS_ENTROPY(T)                                                                                         \
  template cudaError_t launch_softmax_cross_entropy<T>(const T*, const T*, T*, T*, std::int64_t, std::int64_t,         \
                                                       cudaStream_t);                                                  \
  template cudaError_t launch_sparse_softmax_cross_entropy<T, std::int32_t>(const T*, const std::int32_t*, T*, T*,     \
                                                                            std::int64_t, std::int64_t, cudaStream_t); \
  template cudaError_t launch_sparse_softmax_cross_entropy<T, std::int64_t>(const T*, const std::int64_t*, T*, T*,     \
                                                                            std::int64_t, std::int64_t, cudaStream_t); \
  template cudaError_t launch_sparse_softmax_cross_entropy<T, std::uint8_t>(const T*, const std::uint8_t*, T*, T*,     \
                                                                            std::int64_t, std::int64_t, cudaStream_t); \
  template cudaError_t launch_softmax_cross_entropy_grad<T>(const T*, const T*, T*, std::int64_t, std::int64_t,        \
                                                            cudaStream_t);
TOWER_CROSS_ENTROPY(float)
TOWER_CROSS_ENTROPY(double)
#undef TOWER_CROSS_ENTROPY

}  // namespace tower::cuda
