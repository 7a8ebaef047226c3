// CUDA kernels of the unary math ops, the activations (softmax and log_softmax too) and their
// gradients: one grid-stride kernel per op, the op a template parameter. The formulas are the CPU
// kernels' (activation_kernels.cpp).
#include <algorithm>

#include "tower/backends/cuda/activation_launchers.h"
#include "tower/backends/cuda/launch.cuh"
#include "tower/backends/cuda/softmax_lanes.cuh"

namespace tower::cuda {

namespace {

template <UnaryOp op, typename T>
__device__ T apply_unary(T x, T alpha) {
  if constexpr (op == UnaryOp::negative) return -x;
  else if constexpr (op == UnaryOp::exp) return exp(x);
  else if constexpr (op == UnaryOp::log) return log(x);
  else if constexpr (op == UnaryOp::erf) return erf(x);
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
    case UnaryOp::erf: start_unary<UnaryOp::erf>(x, y, n, alpha, stream); break;
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

// ---- softmax, log_softmax and their gradients, along any axis ------------------------------------

namespace {

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

template cudaError_t launch_softmax<float>(SoftmaxOp, const float*, float*, SoftmaxLanes, cudaStream_t);
template cudaError_t launch_softmax<double>(SoftmaxOp, const double*, double*, SoftmaxLanes, cudaStream_t);
template cudaError_t launch_softmax_grad<float>(SoftmaxOp, const float*, const float*, float*, SoftmaxLanes,
                                                cudaStream_t);
template cudaError_t launch_softmax_grad<double>(SoftmaxOp, const double*, const double*, double*, SoftmaxLanes,
                                                 cudaStream_t);

}  // namespace tower::cuda
