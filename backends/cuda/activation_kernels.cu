// CUDA kernels of the unary math ops, the activations and their gradients: one grid-stride kernel
// per op, the op a template parameter. The formulas are the CPU kernels' (activation_kernels.cpp).
#include <algorithm>

#include "tower/backends/cuda/activation_launchers.h"
#include "tower/backends/cuda/launch.cuh"

namespace tower::cuda {

namespace {

template <UnaryOp op, typename T>
__device__ T apply_unary(T x, T alpha) {
  if constexpr (op == UnaryOp::negative) return -x;
  else if constexpr (op == UnaryOp::exp) return exp(x);
  else if constexpr (op == UnaryOp::log) return log(x);
  else if constexpr (op == UnaryOp::sqrt) return sqrt(x);
  else if constexpr (op == UnaryOp::square) return x * x;
  else if constexpr (op == UnaryOp::abs) return x < T(0) ? -x : x;
  else if constexpr (op == UnaryOp::sign) return static_cast<T>((T(0) < x) - (x < T(0)));
  else if constexpr (op == UnaryOp::relu) return x < T(0) ? T(0) : x;  // NaN passes through, as on the CPU
  else if constexpr (op == UnaryOp::leaky_relu) return x > T(0) ? x : alpha * x;
  else if constexpr (op == UnaryOp::elu) return x > T(0) ? x : alpha * expm1(x);
  else if constexpr (op == UnaryOp::sigmoid) {
    if (x >= T(0)) return T(1) / (T(1) + exp(-x));  // two branches: exp never overflows
    const T e = exp(x);
    return e / (T(1) + e);
  } else return tanh(x);
}

template <GradOp op, typename T>
__device__ T apply_grad(T dy, T v, T alpha) {
  if constexpr (op == GradOp::relu) return v > T(0) ? dy : T(0);
  else if constexpr (op == GradOp::leaky_relu) return v > T(0) ? dy : alpha * dy;
  else if constexpr (op == GradOp::elu) return v > T(0) ? dy : dy * alpha * exp(v);
  else if constexpr (op == GradOp::sigmoid) return dy * v * (T(1) - v);
  else return dy * (T(1) - v * v);
}

template <UnaryOp op, typename T>
__global__ void unary_kernel(const T* x, T* y, std::int64_t n, T alpha) {
  TOWER_GRID_STRIDE(i, n)
    y[i] = apply_unary<op>(x[i], alpha);
}

template <GradOp op, typename T>
__global__ void grad_kernel(const T* dy, const T* v, T* out, std::int64_t n, T alpha) {
  TOWER_GRID_STRIDE(i, n)
    out[i] = apply_grad<op>(dy[i], v[i], alpha);
}

template <UnaryOp op, typename T>
void start_unary(const T* x, T* y, std::int64_t n, T alpha, cudaStream_t stream) {
  unary_kernel<op, T><<<blocks_for(n), kThreads, 0, stream>>>(x, y, n, alpha);
}

template <GradOp op, typename T>
void start_grad(const T* dy, const T* v, T* out, std::int64_t n, T alpha, cudaStream_t stream) {
  grad_kernel<op, T><<<blocks_for(n), kThreads, 0, stream>>>(dy, v, out, n, alpha);
}

}  // namespace

template <typename T>
cudaError_t launch_unary(UnaryOp op, const T* x, T* y, std::int64_t n, T alpha, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (op) {
    case UnaryOp::negative: start_unary<UnaryOp::negative>(x, y, n, alpha, stream); break;
    case UnaryOp::exp: start_unary<UnaryOp::exp>(x, y, n, alpha, stream); break;
    case UnaryOp::log: start_unary<UnaryOp::log>(x, y, n, alpha, stream); break;
    case UnaryOp::sqrt: start_unary<UnaryOp::sqrt>(x, y, n, alpha, stream); break;
    case UnaryOp::square: start_unary<UnaryOp::square>(x, y, n, alpha, stream); break;
    case UnaryOp::abs: start_unary<UnaryOp::abs>(x, y, n, alpha, stream); break;
    case UnaryOp::sign: start_unary<UnaryOp::sign>(x, y, n, alpha, stream); break;
    case UnaryOp::relu: start_unary<UnaryOp::relu>(x, y, n, alpha, stream); break;
    case UnaryOp::leaky_relu: start_unary<UnaryOp::leaky_relu>(x, y, n, alpha, stream); break;
    case UnaryOp::elu: start_unary<UnaryOp::elu>(x, y, n, alpha, stream); break;
    case UnaryOp::sigmoid: start_unary<UnaryOp::sigmoid>(x, y, n, alpha, stream); break;
    case UnaryOp::tanh: start_unary<UnaryOp::tanh>(x, y, n, alpha, stream); break;
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_activation_grad(GradOp op, const T* dy, const T* v, T* out, std::int64_t n, T alpha,
                                   cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (op) {
    case GradOp::relu: start_grad<GradOp::relu>(dy, v, out, n, alpha, stream); break;
    case GradOp::leaky_relu: start_grad<GradOp::leaky_relu>(dy, v, out, n, alpha, stream); break;
    case GradOp::elu: start_grad<GradOp::elu>(dy, v, out, n, alpha, stream); break;
    case GradOp::sigmoid: start_grad<GradOp::sigmoid>(dy, v, out, n, alpha, stream); break;
    case GradOp::tanh: start_grad<GradOp::tanh>(dy, v, out, n, alpha, stream); break;
  }
  return cudaGetLastError();
}

template cudaError_t launch_unary<float>(UnaryOp, const float*, float*, std::int64_t, float, cudaStream_t);
template cudaError_t launch_unary<double>(UnaryOp, const double*, double*, std::int64_t, double, cudaStream_t);
template cudaError_t launch_activation_grad<float>(GradOp, const float*, const float*, float*, std::int64_t, float,
                                                   cudaStream_t);
template cudaError_t launch_activation_grad<double>(GradOp, const double*, const double*, double*, std::int64_t,
                                                    double, cudaStream_t);

}  // namespace tower::cuda
