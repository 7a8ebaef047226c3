// GraphMlp and the two-spiral data set.
#include "apps/graph_mlp.h"

#include <cmath>
#include <numbers>

#include "tower/core/autodiff.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"

namespace tower::demo {

GraphMlp::GraphMlp(const std::vector<std::int64_t>& sizes, double learning_rate, std::uint64_t seed) {
  x_ = graph_.placeholder({-1, sizes.front()}, DType::float32, "x");
  labels_ = graph_.placeholder({-1}, DType::int32, "labels");
  step_ = graph_.placeholder({}, DType::float32, "step");
  SymbolicTensor h = x_;  // (batch, sizes[i])
  std::vector<SymbolicTensor> params;
  for (std::size_t i = 0; i + 1 < sizes.size(); ++i) {
    double limit = std::sqrt(6.0 / static_cast<double>(sizes[i] + sizes[i + 1]));  // glorot_uniform
    auto kernel = graph_.variable(make_variable("kernel", random_uniform({sizes[i], sizes[i + 1]}, -limit, limit, seed + i)));
    auto bias = graph_.variable(make_variable("bias", Tensor::zeros({sizes[i + 1]})));
    params.insert(params.end(), {kernel, bias});
    h = ops::bias_add(ops::matmul(h, kernel), bias);
    if (i + 2 < sizes.size()) h = ops::tanh(h);
  }
  logits_ = h;
  predicted_ = ops::argmax(logits_, -1);
  loss_ = ops::reduce_mean(ops::sparse_softmax_cross_entropy(logits_, labels_));
  auto grads = gradients(loss_, params);
  auto lr = graph_.constant(Tensor::scalar(learning_rate));
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto m = graph_.variable(make_variable("m", Tensor::zeros(params[i].shape())));
    auto v = graph_.variable(make_variable("v", Tensor::zeros(params[i].shape())));
    updates_.push_back(ops::apply_adam(params[i], grads[i], lr, step_, m, v, {}));
  }
}

double GraphMlp::train(const Tensor& inputs, const Tensor& labels, int steps) {
  double loss = 0;
  for (int s = 0; s < steps; ++s) {
    FeedMap feeds{{x_, inputs}, {labels_, labels}, {step_, Tensor::scalar(++steps_done_)}};
    loss = executor_.run(feeds, {loss_}, updates_)[0].item();
  }
  return loss;
}

double GraphMlp::accuracy(const Tensor& inputs, const Tensor& labels) {
  auto predicted = executor_.run({{x_, inputs}}, {predicted_})[0].to_vector<std::int64_t>();
  auto expected = labels.to_vector<std::int64_t>();
  std::size_t right = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) right += predicted[i] == expected[i];
  return expected.empty() ? 0.0 : static_cast<double>(right) / static_cast<double>(expected.size());
}

std::pair<Tensor, Tensor> make_spirals(int points_per_class, std::uint64_t seed) {
  std::vector<float> points;
  std::vector<std::int32_t> classes;
  Generator noise(seed);
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < points_per_class; ++i) {
      double t = 0.25 + 3.0 * std::numbers::pi * i / points_per_class;
      double r = t / (3.0 * std::numbers::pi);
      double sign = c == 0 ? 1.0 : -1.0;
      points.push_back(static_cast<float>(sign * r * std::cos(t) + 0.01 * noise.next_normal()));
      points.push_back(static_cast<float>(sign * r * std::sin(t) + 0.01 * noise.next_normal()));
      classes.push_back(c);
    }
  std::int64_t n = 2 * points_per_class;
  return {Tensor::from_vector<float>({n, 2}, points), Tensor::from_vector<std::int32_t>({n}, classes)};
}

}  // namespace tower::demo
