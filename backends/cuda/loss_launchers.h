// Launchers of the regression-loss CUDA kernels (mean squared and mean absolute error and their
// gradients; the cross-entropies are in softmax_launchers.h). Plain pointers only, as in
// elementwise_launchers.h. Each returns the launch status for CUDA_CHECK.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace tower::cuda {

enum class RegressionLoss { squared, absolute };

// loss[r] = mean over j < d of f(y_pred[r, j] - y_true[r, j]), f = x² or |x|; NaN when d == 0.
template <typename T>
cudaError_t launch_mean_error(RegressionLoss loss_kind, const T* y_true, const T* y_pred, T* loss, std::int64_t rows,
                              std::int64_t d, cudaStream_t stream);

// d_pred[r, j] = dloss[r] * f'(y_pred[r, j] - y_true[r, j]) / d, f' = 2x or sign(x) (sign(0) = 0).
template <typename T>
cudaError_t launch_mean_error_grad(RegressionLoss loss_kind, const T* dloss, const T* y_true, const T* y_pred,
                                   T* d_pred, std::int64_t rows, std::int64_t d, cudaStream_t stream);

}  // namespace tower::cuda
