// Helpers of the wrapper tests (test_time_distributed.cpp, test_wrappers.cpp): weights and inputs as
// the Keras script behind their expected values makes them, and the wrapped layers run by hand.
#pragma once

#include <cmath>
#include <utility>
#include <vector>

#include "tower/layers/layers.h"
#include "tests/layers/layer_testing.h"

namespace tower::testing {

using namespace tower::layers;


// The numbers of the Keras script behind the expected values below: weight k of layer.weights (in
// order), flat element i, is 0.4 sin(k + 1 + 0.7 i); input element i is 0.5 cos(0.3 i).
inline void fill_as_keras_script(const Layer& layer) {
  const auto weights = layer.weights();
  for (std::size_t k = 0; k < weights.size(); ++k) {
    std::vector<float> v(static_cast<std::size_t>(weights[k]->shape().num_elements()));
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = static_cast<float>(0.4 * std::sin(static_cast<double>(k + 1) + 0.7 * static_cast<double>(i)));
    weights[k]->assign(Tensor::from_vector<float>(weights[k]->shape(), v));
  }
}

inline Tensor input_as_keras_script(const Shape& shape) {
  std::vector<float> v(static_cast<std::size_t>(shape.num_elements()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(0.5 * std::cos(0.3 * static_cast<double>(i)));
  return Tensor::from_vector<float>(shape, v);
}


// y (batch, time, units) -> y[:, ::-1], on the host.
inline Tensor reversed_in_time(const Tensor& y) {
  const auto b = y.shape()[0], t = y.shape()[1], u = y.shape()[2];
  const auto v = y.to_vector<float>();
  std::vector<float> out(v.size());
  for (std::int64_t i = 0; i < b; ++i)
    for (std::int64_t s = 0; s < t; ++s)
      for (std::int64_t j = 0; j < u; ++j) out[(i * t + s) * u + j] = v[(i * t + (t - 1 - s)) * u + j];
  return Tensor::from_vector<float>(y.shape(), out);
}

// Elementwise on two float tensors of one shape.
template <typename F>
inline Tensor combine(const Tensor& a, const Tensor& b, F f) {
  auto x = a.to_vector<float>();
  const auto y = b.to_vector<float>();
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = f(x[i], y[i]);
  return Tensor::from_vector<float>(a.shape(), x);
}

// Concatenation on the last axis of two (rows..., n) and (rows..., m) tensors.
inline Tensor concat_last(const Tensor& a, const Tensor& b) {
  const auto n = a.shape().dim(-1), m = b.shape().dim(-1);
  const auto x = a.to_vector<float>(), y = b.to_vector<float>();
  std::vector<float> out;
  for (std::size_t r = 0; r < x.size() / static_cast<std::size_t>(n); ++r) {
    out.insert(out.end(), x.begin() + static_cast<std::ptrdiff_t>(r * n), x.begin() + static_cast<std::ptrdiff_t>((r + 1) * n));
    out.insert(out.end(), y.begin() + static_cast<std::ptrdiff_t>(r * m), y.begin() + static_cast<std::ptrdiff_t>((r + 1) * m));
  }
  auto dims = a.shape().dims();
  dims.back() = n + m;
  return Tensor::from_vector<float>(Shape(dims), out);
}

inline std::vector<std::string> names(const std::vector<VariablePtr>& weights) {
  std::vector<std::string> out;
  for (const auto& w : weights) out.push_back(w->name());
  return out;
}

// The forward and the backward layer of `bi` run by hand with its weights: the recurrent layer `make`
// gives (go_backwards set on the second), on x and optional initial states for each.
template <typename Make>
inline std::pair<std::vector<Tensor>, std::vector<Tensor>> run_halves(const Bidirectional& bi, Make make, const Tensor& x,
                                                                std::vector<Tensor> forward_states = {},
                                                                std::vector<Tensor> backward_states = {}) {
  auto forward = make(false);
  auto backward = make(true);
  const Shape shape{-1, x.shape()[1], x.shape()[2]};
  forward->ensure_built({shape});
  backward->ensure_built({shape});
  const auto weights = bi.get_weights();
  const auto half = static_cast<std::ptrdiff_t>(weights.size() / 2);
  forward->set_weights({weights.begin(), weights.begin() + half});
  backward->set_weights({weights.begin() + half, weights.end()});
  forward_states.insert(forward_states.begin(), x);
  backward_states.insert(backward_states.begin(), x);
  return {run_layer(*forward, forward_states), run_layer(*backward, backward_states)};
}


}  // namespace tower::testing
