// The Keras mnist_mlp and mnist_cnn architectures on (784,) and (28, 28, 1) inputs, as the benchmarks
// train them (apps/mnist_mlp.cpp and mnist_cnn.cpp are the line-by-line ports of the Keras scripts).
#pragma once

#include <string>

#include "tower/layers/layers.h"

namespace tower::apps {

// kind: "mlp" or "cnn".
inline Sequential mnist_model(const std::string& kind) {
  if (kind == "mlp")
    return Sequential({layers::Input({784}), layers::Dense(512, {.activation = "relu"}), layers::Dropout(0.2),
                       layers::Dense(512, {.activation = "relu"}), layers::Dropout(0.2),
                       layers::Dense(10, {.activation = "softmax"})});
  return Sequential({layers::Input({28, 28, 1}), layers::Conv2D(32, {3, 3}, {.activation = "relu"}),
                     layers::Conv2D(64, {3, 3}, {.activation = "relu"}), layers::MaxPooling2D({2, 2}),
                     layers::Dropout(0.25), layers::Flatten(), layers::Dense(128, {.activation = "relu"}),
                     layers::Dropout(0.5), layers::Dense(10, {.activation = "softmax"})});
}

}  // namespace tower::apps
