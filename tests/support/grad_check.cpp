// The finite-difference gradient checker and small evaluation helpers for the doctest suites.
#include "tests/support/grad_check.h"

#include <doctest/doctest.h>

#include <cmath>

#include "tower/core/autodiff.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"

namespace tower::testing {

Tensor random_tensor(const Shape& shape, std::uint64_t seed, double min_abs, double max_abs, bool positive, DType dtype) {
  Generator gen(seed, 0x7e57);
  std::vector<double> values(static_cast<std::size_t>(shape.num_elements()));
  for (auto& v : values) {
    double magnitude = min_abs + (max_abs - min_abs) * gen.next_uniform();
    v = (positive || gen.next_uniform() < 0.5) ? magnitude : -magnitude;
  }
  Tensor t = Tensor::from_vector(shape, values);
  return dtype == DType::float64 ? t : Tensor::from_vector(shape, t.to_vector<float>());
}

std::vector<Tensor> evaluate(const std::vector<SymbolicTensor>& fetches, const FeedMap& feeds) {
  Executor executor;
  return executor.run(feeds, fetches);
}

void check_close(const Tensor& actual, const std::vector<double>& expected, double rtol, double atol) {
  auto a = actual.to_vector<double>();
  REQUIRE(a.size() == expected.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    bool ok = std::isfinite(a[i]) && std::abs(a[i] - expected[i]) <= atol + rtol * std::abs(expected[i]);
    if (!ok) FAIL_CHECK("element " << i << ": got " << a[i] << ", expected " << expected[i]);
  }
}

void check_close(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  CHECK(actual.shape() == expected.shape());
  check_close(actual, expected.to_vector<double>(), rtol, atol);
}

void check_gradients(const std::vector<Shape>& shapes,
                     const std::function<std::vector<SymbolicTensor>(const std::vector<SymbolicTensor>&)>& build,
                     GradCheckOptions options) {
  Graph graph;
  std::vector<SymbolicTensor> inputs;
  FeedMap feeds;
  std::vector<Tensor> values;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    inputs.push_back(graph.placeholder(shapes[i], DType::float64, "x" + std::to_string(i)));
    values.push_back(random_tensor(shapes[i], options.seed * 1000 + i, options.min_abs, options.max_abs, options.positive));
    feeds.emplace_back(inputs.back(), values.back());
  }
  std::vector<SymbolicTensor> outputs = build(inputs);
  REQUIRE(!outputs.empty());
  // loss = sum_k sum(output_k * R_k): every output element gets its own random weight.
  SymbolicTensor loss;
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    Executor probe;
    Shape shape = probe.run(feeds, {outputs[k]})[0].shape();
    auto weights = graph.constant(random_tensor(shape, options.seed * 7919 + k, 0.5, 1.5));
    auto term = ops::reduce_sum(ops::multiply(outputs[k], weights));
    loss = loss.defined() ? ops::add(loss, term) : term;
  }
  auto grads = gradients(loss, inputs);
  Executor executor;
  std::vector<SymbolicTensor> fetches{loss};
  for (auto& g : grads) {
    REQUIRE_MESSAGE(g.defined(), "no gradient reached an input");
    fetches.push_back(g);
  }
  auto results = executor.run(feeds, fetches);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    auto analytic = results[i + 1].to_vector<double>();
    auto base = values[i].to_vector<double>();
    REQUIRE(analytic.size() == base.size());
    for (std::size_t e = 0; e < base.size(); ++e) {
      auto eval_at = [&](double v) {
        auto perturbed = base;
        perturbed[e] = v;
        FeedMap f = feeds;
        f[i].second = Tensor::from_vector(shapes[i], perturbed);
        return executor.run(f, {loss})[0].item();
      };
      double numeric = (eval_at(base[e] + options.delta) - eval_at(base[e] - options.delta)) / (2 * options.delta);
      double error = std::abs(analytic[e] - numeric) / std::max(1.0, std::abs(numeric));
      if (!(error <= options.tolerance))
        FAIL_CHECK("input " << i << " element " << e << ": autodiff " << analytic[e] << ", finite difference "
                            << numeric);
    }
  }
}

}  // namespace tower::testing
