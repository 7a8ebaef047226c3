// The activations a fused recurrent op (core/ops/recurrent_ops.cpp: simple_rnn, lstm, gru) applies
// inside its cell, and their derivatives written through the activation's output: the backward pass
// keeps only the activated gates, not their inputs. One copy for the CPU kernels and the CUDA kernels
// (nvcc): no tower includes.
#pragma once

#include <cmath>
#ifndef __CUDACC__
#include <string_view>
#endif

#ifdef __CUDACC__
#define TOWER_HOST_DEVICE __host__ __device__
#else
#define TOWER_HOST_DEVICE
#endif

namespace tower {

// Keras's names: linear, tanh, sigmoid, relu, softsign; hard_sigmoid is Keras 2's clip(0.2 x + 0.5,
// 0, 1) and hard_sigmoid_keras3 Keras 3's relu6(x + 3) / 6 (layers/activations/activations.h).
enum class GateActivation : int { linear, tanh, sigmoid, relu, softsign, hard_sigmoid, hard_sigmoid_keras3 };

template <typename T>
TOWER_HOST_DEVICE inline T gate_activate(GateActivation f, T x) {
  switch (f) {
    case GateActivation::linear: return x;
    case GateActivation::tanh: return std::tanh(x);
    case GateActivation::sigmoid: return T(1) / (T(1) + std::exp(-x));
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

// f'(x) from y = f(x). At a kink (relu at 0, the hard sigmoids at their clips) the derivative is 0,
// as the composed ops' gradients give it.
template <typename T>
TOWER_HOST_DEVICE inline T gate_derivative(GateActivation f, T y) {
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

#ifndef __CUDACC__
// The activation a recurrent op's attr names ("" is linear); ValueError naming the ones it takes
// otherwise (defined in core/ops/recurrent_ops.cpp).
GateActivation gate_activation_named(std::string_view name);
#endif

}  // namespace tower
