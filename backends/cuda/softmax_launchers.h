// Launchers of the softmax-family and cross-entropy CUDA kernels. Plain pointers only, as in
// elementwise_launchers.h. Each returns the launch status for CUDA_CHECK.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace tower::cuda {

// A tensor seen as (outer, n, inner) around the softmax axis: outer * inner lanes of n elements,
// `inner` apart. One thread per lane (the class axes of our models are short).
struct SoftmaxLanes {
  std::int64_t outer = 1, n = 1, inner = 1;
};

enum class SoftmaxOp { softmax, log_softmax };
template <typename T>
cudaError_t launch_softmax(SoftmaxOp op, const T* x, T* y, SoftmaxLanes lanes, cudaStream_t stream);
// softmax: dx = y (dy - sum(dy y)); log_softmax: dx = dy - exp(y) sum(dy), along the axis.
template <typename T>
cudaError_t launch_softmax_grad(SoftmaxOp op, const T* dy, const T* y, T* dx, SoftmaxLanes lanes, cudaStream_t stream);

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
