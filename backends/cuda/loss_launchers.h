// Launchers of the loss CUDA kernels: mean squared and mean absolute error, the fused softmax
// cross-entropies, and their gradients. Plain pointers only, as in
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

// Per row of logits (batch, classes): loss = -sum(labels * log_softmax), backprop = softmax - labels.
template <typename T>
cudaError_t launch_softmax_cross_entropy(const T* logits, const T* labels, T* loss, T* backprop, std::int64_t batch,
                                         std::int64_t classes, cudaStream_t stream);
// As above with class indices; a label outside [0, classes) gives a NaN loss and NaN gradients for
// its row (a GPU cannot stop to throw; as TensorFlow does on GPUs).
template <typename T, typename I>
cudaError_t launch_sparse_softmax_cross_entropy(const T* logits, const I* labels, T* loss, T* backprop,
                                                std::int64_t batch, std::int64_t classes, cudaStream_t stream);
// dlogits[r, :] = dloss[r] * backprop[r, :]
template <typename T>
cudaError_t launch_softmax_cross_entropy_grad(const T* dloss, const T* backprop, T* dlogits, std::int64_t batch,
                                              std::int64_t classes, cudaStream_t stream);

}  // namespace tower::cuda
