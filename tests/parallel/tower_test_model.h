// The small model and data the tower tests train (CPU devices and GPUs): Dense layers with every kind
// of weight use (one fused with ReLU, a tanh, a softmax output), a Dropout (towers draw one device's
// masks), optionally BatchNormalization first.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "tower/core/random.h"
#include "tower/layers/layers.h"

namespace tower::testing {

// (batch, 6) -> (batch, 3) class probabilities; the same seed gives the same initial weights.
inline Sequential tower_test_model(std::uint64_t seed, bool batch_normalization = false) {
  set_random_seed(seed);
  std::vector<LayerRef> layers{layers::Input({6})};
  if (batch_normalization) layers.push_back(layers::BatchNormalization());
  for (const LayerRef& layer : {LayerRef(layers::Dense(16, {.activation = "relu"})), LayerRef(layers::Dropout(0.25)),
                                LayerRef(layers::Dense(8, {.activation = "tanh"})),
                                LayerRef(layers::Dense(3, {.activation = "softmax"}))})
    layers.push_back(layer);
  return Sequential(layers);
}

// n samples for it: normal inputs and class ids 0..2.
inline std::pair<Tensor, Tensor> tower_test_data(std::int64_t n) {
  Tensor x = random_normal({n, 6}, 0.0, 1.0, 42);
  std::vector<std::int32_t> y;
  for (std::int64_t i = 0; i < n; ++i) y.push_back(static_cast<std::int32_t>((i * 5 + i / 2) % 3));
  return {x, Tensor::from_vector<std::int32_t>({n}, y)};
}

}  // namespace tower::testing
