// Launchers of the unary math and activation CUDA kernels and of the activation gradients. Plain
// pointers only, as in elementwise_launchers.h. Each returns the launch status for CUDA_CHECK.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

namespace tower::cuda {

// y = f(x); alpha is leaky_relu's slope and elu's scale.
enum class UnaryOp { negative, exp, log, sqrt, square, abs, sign, relu, leaky_relu, elu, sigmoid, tanh };
template <typename T>
cudaError_t launch_unary(UnaryOp op, const T* x, T* y, std::int64_t n, T alpha, cudaStream_t stream);

// out = f(dy, v), v being the forward output (relu, sigmoid, tanh) or input (leaky_relu, elu), as
// the ops' contracts in core/ops.h say.
enum class GradOp { relu, leaky_relu, elu, sigmoid, tanh };
template <typename T>
cudaError_t launch_activation_grad(GradOp op, const T* dy, const T* v, T* out, std::int64_t n, T alpha,
                                   cudaStream_t stream);

}  // namespace tower::cuda
