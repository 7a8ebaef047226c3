// Float loops the CPU kernels share where a running value would chain every step (a max, a sum) or
// libm's scalar exp would stop vectorization: softmax's lanes (the softmax ops, the attention op). They keep 16 partial results and use
// the branch-free exp of core/gate_activation.h. vector_math.cpp compiles them for baseline x86-64,
// AVX2+FMA and AVX-512 (TOWER_CPU_CLONES), with -fno-trapping-math (backends/cpu/CMakeLists.txt).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

// GCC's target_clones: a function compiled three times, the loader picks the widest the CPU has
// (the build itself targets baseline x86-64; OpenBLAS picks its own kernels at run time). Clang (the
// fuzz build) takes the baseline only: its target_clones does not take templates.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TOWER_CPU_CLONES __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define TOWER_CPU_CLONES
#endif

namespace tower::cpu {

// The largest of x[0..n), -infinity when n is 0.
float max_of(const float* x, std::int64_t n);
// y[i] = exp(x[i] - shift) for i < n (within a few ulp of libm's expf; 0 where that is below the
// normal floats, e^-87.3); returns their sum.
float exp_shifted(const float* x, float shift, float* y, std::int64_t n);
// The sum of a[i] b[i] for i < n.
float dot(const float* a, const float* b, std::int64_t n);

// ---- lanes: n elements `s` apart (s the constant 1 along a last axis) --------------------------------
// Softmax's pieces over a lane of any dtype and stride; the functions above where the lane is
// contiguous float.

// The stride of a contiguous lane, known at compile time.
using UnitStride = std::integral_constant<std::int64_t, 1>;

// True for a contiguous float lane: the functions above take it.
template <typename T, typename S>
constexpr bool contiguous_float = std::is_same_v<T, float> && std::is_same_v<S, UnitStride>;

// Largest element of a lane (the stabilizing shift).
template <typename T, typename S>
T lane_max(const T* x, std::int64_t n, S s) {
  T m = -std::numeric_limits<T>::infinity();
  for (std::int64_t j = 0; j < n; ++j) m = std::max(m, x[j * s]);
  return m;
}

// b = exp(a - max a) along a lane; returns the sum of b.
template <typename T, typename S>
T lane_exp(const T* a, T* b, std::int64_t n, S s) {
  if constexpr (contiguous_float<T, S>) {  // attention's rows: vectorized
    return exp_shifted(a, max_of(a, n), b, n);
  } else {
    const T m = lane_max(a, n, s);
    T sum = 0;
    for (std::int64_t j = 0; j < n; ++j) {
      b[j * s] = std::exp(a[j * s] - m);
      sum += b[j * s];
    }
    return sum;
  }
}

// The sum of a[j] b[j] along a lane.
template <typename T, typename S>
T lane_dot(const T* a, const T* b, std::int64_t n, S s) {
  if constexpr (contiguous_float<T, S>) {
    return dot(a, b, n);
  } else {
    T sum = 0;
    for (std::int64_t j = 0; j < n; ++j) sum += a[j * s] * b[j * s];
    return sum;
  }
}

}  // namespace tower::cpu
