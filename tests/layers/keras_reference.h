// Helpers of the tests that compare layers with numbers Keras printed: the sin sequences the Python
// scripts and the tests both build, and a layer's outputs with the gradients of a weighted sum of its
// first output (what the scripts take with tf.GradientTape).
#pragma once

#include <cmath>
#include <vector>

#include "tower/core/autodiff.h"
#include "tower/core/ops.h"
#include "tower/layers/layer.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/grad_check.h"

namespace tower::testing {

// float32(s * sin(a * i + b)) over the row-major elements of `shape`: NumPy's
// (s * np.sin(a * np.arange(n) + b)).reshape(shape).astype(np.float32).
inline Tensor seq(const Shape& shape, double a, double b, double s = 1.0) {
  std::vector<float> v(static_cast<std::size_t>(shape.num_elements()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(s * std::sin(a * static_cast<double>(i) + b));
  return Tensor::from_vector<float>(shape, v);
}

// 1 + seq(shape, a, b, s), added in float32 as NumPy adds 1 to a float32 array.
inline Tensor one_plus_seq(const Shape& shape, double a, double b, double s = 1.0) {
  auto v = seq(shape, a, b, s).to_vector<float>();
  for (auto& x : v) x = 1.0f + x;
  return Tensor::from_vector<float>(shape, v);
}

struct LayerRun {
  std::vector<Tensor> outputs;
  std::vector<Tensor> input_grads;   // one per input (undefined: no gradient)
  std::vector<Tensor> weight_grads;  // one per weight, in weights() order
};

// Calls `layer` on placeholders with an unknown batch fed with `inputs`, with `masks` as the inputs'
// Keras masks (empty: none; undefined entries: that input has none), and differentiates
// sum(outputs[0] * seq(outputs[0]'s shape, 0.45, 0.2)).
inline LayerRun run_with_gradients(Layer& layer, const std::vector<Tensor>& inputs, const std::vector<Tensor>& masks = {},
                                   bool training = false) {
  Graph graph;
  std::vector<SymbolicTensor> xs, ms;
  std::vector<Shape> shapes;
  FeedMap feeds;
  for (const auto& x : inputs) {
    shapes.push_back(with_unknown_batch(x.shape()));
    xs.push_back(graph.placeholder(shapes.back(), x.dtype()));
    feeds.emplace_back(xs.back(), x);
  }
  for (const auto& m : masks) ms.push_back(m.defined() ? graph.constant(m) : SymbolicTensor());
  layer.ensure_built(shapes);
  std::vector<Node*> updates;
  std::vector<SymbolicTensor> losses;
  CallContext ctx{.graph = graph, .training = training, .updates = &updates, .losses = &losses,
                  .masks = masks.empty() ? nullptr : &ms};
  const auto ys = layer.apply(ctx, xs);
  auto dims = ys.at(0).shape().dims();
  dims[0] = inputs.at(0).shape()[0];
  const SymbolicTensor loss = ops::reduce_sum(ops::multiply(ys[0], graph.constant(seq(Shape(dims), 0.45, 0.2))));
  std::vector<SymbolicTensor> wrt = xs;
  for (const auto& w : layer.weights()) wrt.push_back(graph.variable(w));
  const auto grads = gradients(loss, wrt);
  std::vector<SymbolicTensor> fetches = ys;
  std::vector<std::size_t> defined;
  for (std::size_t i = 0; i < grads.size(); ++i)
    if (grads[i].defined()) {
      fetches.push_back(grads[i]);
      defined.push_back(i);
    }
  const auto values = evaluate(fetches, feeds);
  LayerRun run;
  run.outputs.assign(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(ys.size()));
  std::vector<Tensor> all(grads.size());
  for (std::size_t j = 0; j < defined.size(); ++j) all[defined[j]] = values[ys.size() + j];
  run.input_grads.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(xs.size()));
  run.weight_grads.assign(all.begin() + static_cast<std::ptrdiff_t>(xs.size()), all.end());
  return run;
}

}  // namespace tower::testing
