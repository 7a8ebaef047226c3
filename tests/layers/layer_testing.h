// Helpers of the layer tests (tests/layers/<family>/): run a layer on real data, its output shape on
// an Input, and its input gradients by finite differences.
#pragma once

#include <doctest/doctest.h>

#include <cstddef>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tower/core/executor.h"
#include "tower/core/ops.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tests/support/grad_check.h"

namespace tower::testing {

using Inputs = std::vector<SymbolicTensor>;

inline Tensor floats(Shape shape, const std::vector<float>& values) {
  return Tensor::from_vector<float>(std::move(shape), values);
}

// A float32 tensor of random_tensor's values (|x| in [0.1, 1], random signs).
inline Tensor float32_random(const Shape& shape, std::uint64_t seed) {
  Tensor x = random_tensor(shape, seed);
  std::vector<float> values(x.data<double>(), x.data<double>() + x.num_elements());
  return Tensor::from_vector<float>(shape, values);
}

// Shape with the batch dimension made unknown, as a model's graph has it.
inline Shape with_unknown_batch(const Shape& shape) {
  auto dims = shape.dims();
  dims[0] = -1;
  return Shape(dims);
}

// Runs layer.apply (call() in its data_format) on placeholders fed with `inputs` (batch unknown in the graph) and returns its
// outputs; the updates the layer appends (BatchNormalization's) run with them.
inline std::vector<Tensor> run_layer(Layer& layer, const std::vector<Tensor>& inputs, bool training = false,
                                     std::size_t* num_updates = nullptr) {
  Graph graph;
  Inputs placeholders;
  std::vector<Shape> shapes;
  FeedMap feeds;
  for (const auto& x : inputs) {
    shapes.push_back(with_unknown_batch(x.shape()));
    placeholders.push_back(graph.placeholder(shapes.back(), x.dtype()));
    feeds.emplace_back(placeholders.back(), x);
  }
  layer.ensure_built(shapes);
  std::vector<Node*> updates;
  std::vector<SymbolicTensor> losses;
  CallContext ctx{.graph = graph, .training = training, .updates = &updates, .losses = &losses};
  auto outputs = layer.apply(ctx, placeholders);
  if (num_updates) *num_updates = updates.size();
  Executor executor;
  return executor.run(feeds, outputs, updates);
}

inline Tensor run1(Layer& layer, const Tensor& x, bool training = false) { return run_layer(layer, {x}, training).at(0); }

// Output shape of layer called on Input(input_shape).
inline Shape keras_shape(const Layer& layer, const Shape& input_shape) { return layer(layers::Input(input_shape)).shape(); }

// Checks input gradients of a float32 layer by casting the float64 probe in and out; float32
// rounding needs a larger step and tolerance than the float64 checks.
inline void check_layer_gradients(Layer& layer, const std::vector<Shape>& shapes, bool training = false) {
  std::vector<Shape> unknown;
  for (const auto& s : shapes) unknown.push_back(with_unknown_batch(s));
  layer.ensure_built(unknown);
  check_gradients(shapes,
                  [&](const Inputs& xs) {
                    Inputs cast;
                    for (const auto& x : xs) cast.push_back(ops::cast(x, DType::float32));
                    CallContext ctx{.graph = xs[0].graph(), .training = training};
                    auto ys = layer.apply(ctx, cast);
                    for (auto& y : ys) y = ops::cast(y, DType::float64);
                    return ys;
                  },
                  {.delta = 1e-2, .tolerance = 5e-3});
}

// Float64 layers without weights take the standard check.
inline void check_weightless_gradients(Layer& layer, const std::vector<Shape>& shapes,
                                       testing::GradCheckOptions options = {}) {
  check_gradients(
      shapes,
      [&](const Inputs& xs) {
        CallContext ctx{.graph = xs[0].graph()};
        return layer.call(ctx, xs);  // not apply(): its autocast would take float64 inputs to float32
      },
      options);
}

inline std::vector<double> as_doubles(const Tensor& t) { return t.to_vector<double>(); }

// A layer as a model_config entry: {"class_name": ..., "config": get_config()}.
inline nlohmann::json entry(const Layer& layer) {
  return {{"class_name", layer.class_name()}, {"config", layer.get_config()}};
}

// The layer rebuilt from its config gives the same config.
inline void check_round_trip(const Layer& layer) {
  CHECK(layers::layer_from_config(entry(layer))->get_config().dump() == layer.get_config().dump());
}

}  // namespace tower::testing
