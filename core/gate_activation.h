// The activations a fused recurrent op (core/ops/recurrent_ops.cpp: simple_rnn, lstm, gru) applies
// inside its cell, and their derivatives written through the activation's output: the backward pass
// keeps only the activated gates, not their inputs. One copy for the CPU kernels and the CUDA kernels
// (nvcc): no tower includes.
#pragma once

#include <cmath>
#include <cstring>
#ifndef __CUDACC__
#include <string_view>
#endif

#ifdef __CUDACC__
#define TOWER_HOST_DEVICE __host__ __device__
#else
#define TOWER_HOST_DEVICE
#endif

// On the CPU everything below is always inlined, so that it takes the instruction set of the kernel
// calling it (backends/cpu/recurrent_kernels.cpp compiles its row functions for AVX2 and AVX-512 too)
// and a loop over exp or tanh vectorizes.
#if defined(__GNUC__) && !defined(__CUDACC__)
#define TOWER_GATE_INLINE __attribute__((always_inline)) inline
#else
#define TOWER_GATE_INLINE inline
#endif

namespace tower {

// Keras's names: linear, tanh, sigmoid, relu, softsign; hard_sigmoid is Keras 2's clip(0.2 x + 0.5,
// 0, 1) and hard_sigmoid_keras3 Keras 3's relu6(x + 3) / 6 (layers/activations/activations.h).
enum class GateActivation : int { linear, tanh, sigmoid, relu, softsign, hard_sigmoid, hard_sigmoid_keras3 };

// exp and tanh for the CPU's float loops: Cephes's expf and tanhf (within 2 ulp of the exact values),
// branch-free so that a loop over them vectorizes (with -fno-trapping-math, which
// backends/cpu/CMakeLists.txt gives the recurrent kernels), where libm's scalar calls took most of an
// LSTM's time. float64 and GPU code use the standard functions.
namespace gate_math {

TOWER_HOST_DEVICE TOWER_GATE_INLINE float exp(float x) {
#ifdef __CUDA_ARCH__
  return ::expf(x);
#else
  x = x < -87.3f ? -87.3f : x;  // 2^-126 .. 2^127: normal floats
  x = x > 88.3f ? 88.3f : x;
  // n = round(x / ln 2), by adding and taking away 1.5 · 2^23: a float that large has no fraction bits,
  // and its low bits hold n. Plain arithmetic, so that the loop vectorizes for every instruction set
  // (a float-int-float truncation stops GCC's AVX2 vectorizer).
  const float shifted = x * 1.44269504088896341f + 12582912.0f;
  const float n = shifted - 12582912.0f;
  x = x - n * 0.693359375f - n * -2.12194440e-4f;  // x - n ln 2, ln 2 in two parts
  float y = 1.9875691500e-4f;
  y = y * x + 1.3981999507e-3f;
  y = y * x + 8.3334519073e-3f;
  y = y * x + 4.1665795894e-2f;
  y = y * x + 1.6666665459e-1f;
  y = y * x + 5.0000001201e-1f;
  y = y * (x * x) + x + 1.0f;
  int bits;  // 2^n: n + 127 in the exponent bits
  std::memcpy(&bits, &shifted, sizeof bits);
  bits = (bits - 0x4B400000 + 127) << 23;  // 0x4B400000: 1.5 · 2^23's bits
  float two_n;
  std::memcpy(&two_n, &bits, sizeof two_n);
  return y * two_n;
#endif
}

TOWER_HOST_DEVICE TOWER_GATE_INLINE float tanh(float x) {
#ifdef __CUDA_ARCH__
  return ::tanhf(x);
#else
  const float a = std::fabs(x);
  const float z = x * x;  // |x| < 0.625: an odd polynomial
  const float small =
      ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z + 1.33314422036e-1f) * z -
       3.33332819422e-1f) * z * x + x;
  const float large = std::copysign(1.0f - 2.0f / (gate_math::exp(2.0f * a) + 1.0f), x);  // tanh |x|, x's sign
  return a < 0.625f ? small : large;
#endif
}

TOWER_HOST_DEVICE inline double exp(double x) { return std::exp(x); }
TOWER_HOST_DEVICE inline double tanh(double x) { return std::tanh(x); }

}  // namespace gate_math

template <typename T>
TOWER_HOST_DEVICE TOWER_GATE_INLINE T gate_activate(GateActivation f, T x) {
  switch (f) {
    case GateActivation::linear: return x;
    case GateActivation::tanh: return gate_math::tanh(x);
    case GateActivation::sigmoid: return T(1) / (T(1) + gate_math::exp(-x));
    case GateActivation::relu: return x > T(0) ? x : T(0);
    case GateActivation::softsign: return x / (T(1) + std::fabs(x));
    case GateActivation::hard_sigmoid: {
      const T y = T(0.2) * x + T(0.5);
      return y < T(0) ? T(0) : (y > T(1) ? T(1) : y);
    }
    case GateActivation::hard_sigmoid_keras3: {
      const T y = x / T(6) + T(0.5);
      return y < T(0) ? T(0) : (y > T(1) ? T(1) : y);
    }
  }
  return x;
}

// y[i] = f(y[i]) for i < n: one loop per activation, so that the compiler vectorizes it.
template <typename T>
TOWER_GATE_INLINE void gate_activate_all(GateActivation f, T* y, long n) {
  switch (f) {
    case GateActivation::linear: return;
    case GateActivation::tanh:
      for (long i = 0; i < n; ++i) y[i] = gate_math::tanh(y[i]);
      return;
    case GateActivation::sigmoid:
      for (long i = 0; i < n; ++i) y[i] = T(1) / (T(1) + gate_math::exp(-y[i]));
      return;
    default:
      for (long i = 0; i < n; ++i) y[i] = gate_activate(f, y[i]);
  }
}

// f'(x) from y = f(x). At a kink (relu at 0, the hard sigmoids at their clips) the derivative is 0,
// as the composed ops' gradients give it.
template <typename T>
TOWER_HOST_DEVICE TOWER_GATE_INLINE T gate_derivative(GateActivation f, T y) {
  switch (f) {
    case GateActivation::linear: return T(1);
    case GateActivation::tanh: return T(1) - y * y;
    case GateActivation::sigmoid: return y * (T(1) - y);
    case GateActivation::relu: return y > T(0) ? T(1) : T(0);
    case GateActivation::softsign: {
      const T s = T(1) - std::fabs(y);  // 1 / (1 + |x|)
      return s * s;
    }
    case GateActivation::hard_sigmoid: return y > T(0) && y < T(1) ? T(0.2) : T(0);
    case GateActivation::hard_sigmoid_keras3: return y > T(0) && y < T(1) ? T(1) / T(6) : T(0);
  }
  return T(1);
}

// dy[i] = f'(x) from y[i] = f(x), for i < n (as gate_derivative): the CPU's backward loops take their
// derivatives from here, one loop per activation, so that they vectorize too.
template <typename T>
TOWER_GATE_INLINE void gate_derivative_all(GateActivation f, const T* y, T* dy, long n) {
  switch (f) {
    case GateActivation::tanh:
      for (long i = 0; i < n; ++i) dy[i] = T(1) - y[i] * y[i];
      return;
    case GateActivation::sigmoid:
      for (long i = 0; i < n; ++i) dy[i] = y[i] * (T(1) - y[i]);
      return;
    default:
      for (long i = 0; i < n; ++i) dy[i] = gate_derivative(f, y[i]);
  }
}

#ifndef __CUDACC__
// The activation a recurrent op's attr names ("" is linear); ValueError naming the ones it takes
// otherwise (defined in core/ops/recurrent_ops.cpp).
GateActivation gate_activation_named(std::string_view name);
#endif

}  // namespace tower
