// Device helpers over one softmax lane (n elements, s apart), shared by the softmax kernels
// (activation_kernels.cu) and the fused softmax cross-entropies (loss_kernels.cu). nvcc only.
#pragma once

#include <cmath>
#include <cstdint>

namespace tower::cuda {

template <typename T>
__device__ inline T lane_max(const T* x, std::int64_t n, std::int64_t s) {
  T m = -INFINITY;
  for (std::int64_t j = 0; j < n; ++j) m = x[j * s] > m ? x[j * s] : m;
  return m;
}

// The lane's log-sum-exp, stabilized by its max.
template <typename T>
__device__ inline T lane_log_sum_exp(const T* x, std::int64_t n, std::int64_t s) {
  const T m = lane_max(x, n, s);
  T sum = 0;
  for (std::int64_t j = 0; j < n; ++j) sum += exp(x[j * s] - m);
  return m + log(sum);
}

// Writes softmax(x) into out and returns the lane's log-sum-exp.
template <typename T>
__device__ inline T lane_softmax(const T* x, T* out, std::int64_t n, std::int64_t s) {
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

}  // namespace tower::cuda
