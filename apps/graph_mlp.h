// GraphMlp: a multi-layer perceptron written directly against the graph API (variables, ops,
// gradients, Adam updates), and the two-spiral data set. The engine's end-to-end demo, used by
// apps/demo_spirals and tests/core/test_learning.cpp until the Keras layers exist.
#pragma once

#include <cstdint>
#include <vector>

#include "tower/core/executor.h"
#include "tower/core/graph.h"

namespace tower::demo {

// tanh hidden layers, softmax cross-entropy on integer labels, Adam on full batches.
class GraphMlp {
 public:
  // sizes: {inputs, hidden..., classes}.
  GraphMlp(const std::vector<std::int64_t>& sizes, double learning_rate, std::uint64_t seed);

  // Runs `steps` Adam steps on (inputs (n, sizes[0]) float32, labels (n,) int32); returns the last loss.
  double train(const Tensor& inputs, const Tensor& labels, int steps);
  // Fraction of rows whose argmax matches the label.
  double accuracy(const Tensor& inputs, const Tensor& labels);

 private:
  Graph graph_;
  SymbolicTensor x_, labels_, step_, logits_, loss_, predicted_;
  std::vector<Node*> updates_;
  Executor executor_;
  int steps_done_ = 0;
};

// Two interleaved spirals of 1.5 turns with a little noise: points (2n, 2) float32 and labels (2n,) int32.
std::pair<Tensor, Tensor> make_spirals(int points_per_class, std::uint64_t seed);

}  // namespace tower::demo
