// Launchers of the unary math and activation CUDA kernels (softmax and log_softmax along any axis
// included) and of their gradients. Plain
// pointers only, as in elementwise_launchers.h. Each returns the launch status for CUDA_CHECK.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace tower::cuda {

// y = f(x); alpha is leaky_relu's slope and elu's scale.
enum class UnaryOp { negative, exp, log, erf, sqrt, square, abs, sign, relu, leaky_relu, elu, sigmoid, tanh };
template <typename T>
cudaError_t launch_unary(UnaryOp op, const T* x, T* y, std::int64_t n, T alpha, cudaStream_t stream);

// out = f(dy, v), v being the forward output (relu, sigmoid, tanh) or input (leaky_relu, elu), as
// the ops' contracts in core/ops.h say.
enum class GradOp { relu, leaky_relu, elu, sigmoid, tanh };
template <typename T>
cudaError_t launch_activation_grad(GradOp op, const T* dy, const T* v, T* out, std::int64_t n, T alpha,
                                   cudaStream_t stream);

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

}  // namespace tower::cuda
