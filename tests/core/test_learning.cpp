// Small networks written directly against the graph API learn XOR (100 %) and two spirals (>= 95 %).
#include <doctest/doctest.h>

#include <cmath>

#include "core/autodiff.h"
#include "core/executor.h"
#include "core/ops.h"
#include "core/random.h"

using namespace tower;

namespace {

// A multi-layer perceptron with tanh hidden layers, trained with Adam on full batches.
struct Mlp {
  Graph graph;
  SymbolicTensor x, labels, step, logits, loss;
  std::vector<VariablePtr> params;
  std::vector<Node*> updates;

  Mlp(std::vector<std::int64_t> sizes, double lr, std::uint64_t seed) {
    x = graph.placeholder({-1, sizes.front()}, DType::float32, "x");
    labels = graph.placeholder({-1}, DType::int32, "labels");
    step = graph.placeholder({}, DType::float32, "step");
    SymbolicTensor h = x;
    for (std::size_t i = 0; i + 1 < sizes.size(); ++i) {
      double limit = std::sqrt(6.0 / static_cast<double>(sizes[i] + sizes[i + 1]));  // glorot_uniform
      auto w = make_variable("kernel", random_uniform({sizes[i], sizes[i + 1]}, -limit, limit, seed + i));
      auto b = make_variable("bias", Tensor::zeros({sizes[i + 1]}));
      params.insert(params.end(), {w, b});
      h = ops::bias_add(ops::matmul(h, graph.variable(w)), graph.variable(b));
      if (i + 2 < sizes.size()) h = ops::tanh(h);
    }
    logits = h;
    loss = ops::reduce_mean(ops::sparse_softmax_cross_entropy(logits, labels));
    std::vector<SymbolicTensor> vars;
    for (auto& p : params) vars.push_back(graph.variable(p));
    auto grads = gradients(loss, vars);
    auto lr_t = graph.constant(Tensor::scalar(lr));
    for (std::size_t i = 0; i < params.size(); ++i) {
      auto m = graph.variable(make_variable("m", Tensor::zeros(params[i]->shape())));
      auto v = graph.variable(make_variable("v", Tensor::zeros(params[i]->shape())));
      updates.push_back(ops::apply_adam(vars[i], grads[i], lr_t, step, m, v, {}));
    }
  }

  double train(const Tensor& inputs, const Tensor& targets, int steps) {
    Executor executor;
    double last = 0;
    for (int t = 1; t <= steps; ++t) {
      FeedMap feeds{{x, inputs}, {labels, targets}, {step, Tensor::scalar(t)}};
      last = executor.run(feeds, {loss}, updates)[0].item();
    }
    return last;
  }

  double accuracy(const Tensor& inputs, const Tensor& targets) {
    Executor executor;
    auto predicted = executor.run({{x, inputs}}, {ops::argmax(logits, -1)})[0].to_vector<std::int64_t>();
    auto expected = targets.to_vector<std::int64_t>();
    int right = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) right += predicted[i] == expected[i];
    return static_cast<double>(right) / static_cast<double>(expected.size());
  }
};

}  // namespace

TEST_CASE("learning: XOR reaches 100 %") {
  Tensor inputs = Tensor::from_vector<float>({4, 2}, {0, 0, 0, 1, 1, 0, 1, 1});
  Tensor targets = Tensor::from_vector<std::int32_t>({4}, {0, 1, 1, 0});
  Mlp mlp({2, 8, 2}, 0.05, 42);
  double loss = mlp.train(inputs, targets, 300);
  CHECK(loss < 0.05);
  CHECK(mlp.accuracy(inputs, targets) == 1.0);
}

TEST_CASE("learning: two spirals reach >= 95 %") {
  // Two interleaved spirals of 1.5 turns, 200 points each, with a little noise.
  const int per_class = 200;
  std::vector<float> points;
  std::vector<std::int32_t> classes;
  Generator noise(7);
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < per_class; ++i) {
      double t = 0.25 + 3.0 * M_PI * i / per_class;
      double r = t / (3.0 * M_PI);
      double sign = c == 0 ? 1.0 : -1.0;
      points.push_back(static_cast<float>(sign * r * std::cos(t) + 0.01 * noise.next_normal()));
      points.push_back(static_cast<float>(sign * r * std::sin(t) + 0.01 * noise.next_normal()));
      classes.push_back(c);
    }
  Tensor inputs = Tensor::from_vector<float>({2 * per_class, 2}, points);
  Tensor targets = Tensor::from_vector<std::int32_t>({2 * per_class}, classes);
  Mlp mlp({2, 64, 64, 2}, 0.01, 3);
  mlp.train(inputs, targets, 1500);
  double accuracy = mlp.accuracy(inputs, targets);
  MESSAGE("two-spiral accuracy: " << accuracy);
  CHECK(accuracy >= 0.95);
}
