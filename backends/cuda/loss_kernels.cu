// CUDA kernels of the regression losses, and their launchers.
#include <cuda/std/limits>

#include "tower/backends/cuda/launch.cuh"
#include "tower/backends/cuda/loss_launchers.h"

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

}  // namespace tower::cuda
