// Tests of the unary math, activation and softmax ops on the CPU: forward values against
// independently computed references, gradients by finite differences, and bad input.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tower/core/autodiff.h"
#include "tower/core/error.h"
#include "tower/core/graph.h"
#include "tower/core/ops.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::check_gradients;
using tower::testing::evaluate;
using tower::testing::random_tensor;

namespace {

using UnaryBuilder = std::function<SymbolicTensor(const SymbolicTensor&)>;
using Reference = std::function<double(double)>;

// Values that cover negatives, zero and positives (and a large magnitude for the saturating ops).
const std::vector<double> kMixed = {-3.5, -1.0, -0.25, 0.0, 0.5, 1.0, 2.0, 20.0};
const std::vector<double> kPositive = {0.01, 0.25, 1.0, 2.0, 9.0, 100.0};

std::vector<double> apply(const std::vector<double>& xs, const Reference& f) {
  std::vector<double> out;
  for (double x : xs) out.push_back(f(x));
  return out;
}

// Runs op on `xs` as a (2, n/2) tensor of `dtype` and compares it with the reference.
void check_unary(const UnaryBuilder& op, const Reference& ref, const std::vector<double>& xs, DType dtype) {
  Graph g;
  Shape shape{2, static_cast<std::int64_t>(xs.size() / 2)};
  Tensor value = Tensor::from_vector<double>(shape, xs);
  if (dtype == DType::float32) value = Tensor::from_vector<float>(shape, std::vector<float>(xs.begin(), xs.end()));
  SymbolicTensor y = op(g.constant(value));
  CHECK(y.dtype() == dtype);
  CHECK(y.shape() == shape);
  double tol = dtype == DType::float32 ? 1e-6 : 1e-12;
  check_close(evaluate({y})[0], apply(xs, ref), tol, tol);
}

void check_unary_both(const UnaryBuilder& op, const Reference& ref, const std::vector<double>& xs) {
  check_unary(op, ref, xs, DType::float64);
  check_unary(op, ref, xs, DType::float32);
}

// A few random shapes of rank 1 to 4 with small dimensions (the gradient checker's work is
// quadratic in the element count).
std::vector<Shape> random_shapes(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int64_t> dim(1, 4);
  std::vector<Shape> shapes;
  for (int rank = 1; rank <= 4; ++rank) {
    std::vector<std::int64_t> dims;
    for (int i = 0; i < rank; ++i) dims.push_back(dim(rng));
    shapes.push_back(Shape(dims));
  }
  return shapes;
}

void check_unary_gradients(const UnaryBuilder& op, bool positive = false) {
  for (const Shape& shape : random_shapes(7)) {
    CAPTURE(shape.to_string());
    check_gradients({shape}, [&](const std::vector<SymbolicTensor>& in) { return std::vector{op(in[0])}; },
                    {.positive = positive});
  }
}

// Runs `build` expecting an Error subclass E whose message contains every one of `parts`.
template <typename E>
void check_build_error(const std::function<void()>& build, const std::vector<std::string>& parts) {
  bool thrown = false;
  try {
    build();
  } catch (const E& e) {
    thrown = true;
    std::string msg = e.what();
    CAPTURE(msg);
    for (const auto& part : parts) CHECK(msg.find(part) != std::string::npos);
  }
  CHECK(thrown);
}

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Reference softmax over `axis` of a row-major tensor with dims `dims`, written directly from the
// definition (no max shift: the test inputs are small).
std::vector<double> softmax_ref(const std::vector<double>& x, const std::vector<std::int64_t>& dims, int axis,
                                bool log) {
  std::int64_t outer = 1, n = dims[static_cast<std::size_t>(axis)], inner = 1;
  for (int i = 0; i < axis; ++i) outer *= dims[static_cast<std::size_t>(i)];
  for (std::size_t i = static_cast<std::size_t>(axis) + 1; i < dims.size(); ++i) inner *= dims[i];
  std::vector<double> y(x.size());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      double sum = 0;
      for (std::int64_t j = 0; j < n; ++j) sum += std::exp(x[static_cast<std::size_t>((o * n + j) * inner + i)]);
      for (std::int64_t j = 0; j < n; ++j) {
        auto k = static_cast<std::size_t>((o * n + j) * inner + i);
        y[k] = log ? x[k] - std::log(sum) : std::exp(x[k]) / sum;
      }
    }
  return y;
}

}  // namespace

TEST_CASE("activation: unary math forward values (float32 and float64)") {
  check_unary_both([](auto& x) { return ops::negative(x); }, [](double x) { return -x; }, kMixed);
  check_unary_both([](auto& x) { return ops::exp(x); }, [](double x) { return std::exp(x); }, kMixed);
  check_unary_both([](auto& x) { return ops::log(x); }, [](double x) { return std::log(x); }, kPositive);
  check_unary_both([](auto& x) { return ops::erf(x); }, [](double x) { return std::erf(x); }, kMixed);
  check_unary_both([](auto& x) { return ops::sqrt(x); }, [](double x) { return std::sqrt(x); }, kPositive);
  check_unary_both([](auto& x) { return ops::square(x); }, [](double x) { return x * x; }, kMixed);
  check_unary_both([](auto& x) { return ops::abs(x); }, [](double x) { return std::fabs(x); }, kMixed);
  check_unary_both([](auto& x) { return ops::sign(x); }, [](double x) { return double((x > 0) - (x < 0)); }, kMixed);
}

TEST_CASE("activation: activations forward values match Keras") {
  check_unary_both([](auto& x) { return ops::relu(x); }, [](double x) { return x > 0 ? x : 0.0; }, kMixed);
  // LeakyReLU's default alpha is 0.3, as Keras.
  check_unary_both([](auto& x) { return ops::leaky_relu(x); }, [](double x) { return x > 0 ? x : 0.3 * x; }, kMixed);
  check_unary_both([](auto& x) { return ops::leaky_relu(x, 0.01); }, [](double x) { return x > 0 ? x : 0.01 * x; },
                   kMixed);
  check_unary_both([](auto& x) { return ops::elu(x); }, [](double x) { return x > 0 ? x : std::exp(x) - 1; }, kMixed);
  check_unary_both([](auto& x) { return ops::elu(x, 0.5); },
                   [](double x) { return x > 0 ? x : 0.5 * (std::exp(x) - 1); }, kMixed);
  check_unary_both([](auto& x) { return ops::sigmoid(x); }, sigmoid_ref, kMixed);
  check_unary_both([](auto& x) { return ops::tanh(x); }, [](double x) { return std::tanh(x); }, kMixed);

  SUBCASE("hand-computed values") {
    Graph g;
    auto x = g.constant(Tensor::from_vector<double>(Shape{4}, {-2.0, -0.5, 0.0, 3.0}));
    auto r = evaluate({ops::relu(x), ops::leaky_relu(x), ops::elu(x), ops::sigmoid(x), ops::tanh(x)});
    check_close(r[0], {0.0, 0.0, 0.0, 3.0});
    check_close(r[1], {-0.6, -0.15, 0.0, 3.0});
    check_close(r[2], {-0.8646647167633873, -0.3934693402873666, 0.0, 3.0});
    check_close(r[3], {0.11920292202211755, 0.3775406687981454, 0.5, 0.9525741268224334});
    check_close(r[4], {-0.9640275800758169, -0.46211715726000974, 0.0, 0.9950547536867305});
  }

  SUBCASE("NaN propagates through relu, leaky_relu, elu, sigmoid and tanh") {
    Graph g;
    auto x = g.constant(Tensor::from_vector<double>(Shape{1}, {std::nan("")}));
    for (const auto& y : evaluate({ops::relu(x), ops::leaky_relu(x), ops::elu(x), ops::sigmoid(x), ops::tanh(x)}))
      CHECK(std::isnan(y.item()));
  }

  SUBCASE("sigmoid saturates without overflow") {
    Graph g;
    auto x = g.constant(Tensor::from_vector<float>(Shape{4}, {-1000.0f, -100.0f, 100.0f, 1000.0f}));
    check_close(evaluate({ops::sigmoid(x)})[0], {0.0, 3.7200759760208356e-44, 1.0, 1.0}, 1e-6, 1e-30);
  }
}

TEST_CASE("activation: negative, abs, sign and square accept integers") {
  Graph g;
  auto xi = g.constant(Tensor::from_vector<std::int32_t>(Shape{5}, {-7, -1, 0, 2, 40000}));
  auto r = evaluate({ops::negative(xi), ops::abs(xi), ops::sign(xi), ops::square(xi)});
  for (const auto& t : r) CHECK(t.dtype() == DType::int32);
  CHECK(r[0].to_vector<std::int32_t>() == std::vector<std::int32_t>{7, 1, 0, -2, -40000});
  CHECK(r[1].to_vector<std::int32_t>() == std::vector<std::int32_t>{7, 1, 0, 2, 40000});
  CHECK(r[2].to_vector<std::int32_t>() == std::vector<std::int32_t>{-1, -1, 0, 1, 1});
  CHECK(r[3].to_vector<std::int32_t>() == std::vector<std::int32_t>{49, 1, 0, 4, 1600000000});

  auto xu = g.constant(Tensor::from_vector<std::uint8_t>(Shape{3}, {0, 3, 200}));
  auto u = evaluate({ops::abs(xu), ops::sign(xu)});
  CHECK(u[0].to_vector<std::int32_t>() == std::vector<std::int32_t>{0, 3, 200});
  CHECK(u[1].to_vector<std::int32_t>() == std::vector<std::int32_t>{0, 1, 1});
}

TEST_CASE("activation: gradients of unary math and activations") {
  check_unary_gradients([](auto& x) { return ops::negative(x); });
  check_unary_gradients([](auto& x) { return ops::exp(x); });
  check_unary_gradients([](auto& x) { return ops::log(x); }, /*positive=*/true);
  check_unary_gradients([](auto& x) { return ops::erf(x); });
  check_unary_gradients([](auto& x) { return ops::sqrt(x); }, /*positive=*/true);
  check_unary_gradients([](auto& x) { return ops::square(x); });
  check_unary_gradients([](auto& x) { return ops::abs(x); });
  check_unary_gradients([](auto& x) { return ops::relu(x); });
  check_unary_gradients([](auto& x) { return ops::leaky_relu(x); });
  check_unary_gradients([](auto& x) { return ops::leaky_relu(x, 0.05); });
  check_unary_gradients([](auto& x) { return ops::elu(x); });
  check_unary_gradients([](auto& x) { return ops::elu(x, 0.7); });
  check_unary_gradients([](auto& x) { return ops::sigmoid(x); });
  check_unary_gradients([](auto& x) { return ops::tanh(x); });
  // A chain, so gradients flow through several of these ops at once.
  check_unary_gradients([](auto& x) { return ops::tanh(ops::elu(ops::square(ops::sigmoid(x)), 0.5)); });
}

TEST_CASE("activation: sign has no gradient") {
  Graph g;
  auto x = g.placeholder(Shape{3}, DType::float64);
  CHECK_FALSE(gradients(ops::reduce_sum(ops::sign(x)), {x})[0].defined());
  // abs still differentiates (to sign(x)).
  auto dx = gradients(ops::reduce_sum(ops::abs(x)), {x})[0];
  REQUIRE(dx.defined());
  FeedMap feeds{{x, Tensor::from_vector<double>(Shape{3}, {-2.0, 0.5, 3.0})}};
  check_close(evaluate({dx}, feeds)[0], {-1.0, 1.0, 1.0});
}

TEST_CASE("activation: *_grad ops forward values") {
  Graph g;
  auto dy = g.constant(Tensor::from_vector<double>(Shape{4}, {1.0, 2.0, -3.0, 0.5}));
  auto v = g.constant(Tensor::from_vector<double>(Shape{4}, {-0.5, 0.0, 0.25, 2.0}));
  auto r = evaluate({ops::relu_grad(dy, v), ops::leaky_relu_grad(dy, v, 0.2), ops::elu_grad(dy, v, 1.5),
                     ops::sigmoid_grad(dy, v), ops::tanh_grad(dy, v)});
  check_close(r[0], {0.0, 0.0, -3.0, 0.5});               // relu_grad uses y > 0
  check_close(r[1], {0.2, 0.4, -3.0, 0.5});               // x <= 0 scales by alpha
  check_close(r[2], {1.5 * std::exp(-0.5), 1.5 * 2.0, -3.0, 0.5});  // alpha e^x where x <= 0
  check_close(r[3], {1.0 * -0.5 * 1.5, 0.0, -3.0 * 0.25 * 0.75, 0.5 * 2.0 * -1.0});
  check_close(r[4], {0.75, 2.0, -3.0 * (1 - 0.0625), 0.5 * (1 - 4.0)});
}

TEST_CASE("activation: second derivatives through the *_grad ops") {
  using Builder = std::function<SymbolicTensor(const SymbolicTensor&, const SymbolicTensor&)>;
  // relu_grad on y and leaky_relu_grad on x are piecewise constant: they give that input no
  // gradient, and the finite difference must be 0 there (the checker never draws values near 0).
  // The second input is also returned as an output, so it always receives some gradient.
  std::vector<Builder> builders = {
      [](auto& dy, auto& y) { return ops::relu_grad(dy, y); },
      [](auto& dy, auto& x) { return ops::leaky_relu_grad(dy, x, 0.3); },
      [](auto& dy, auto& x) { return ops::elu_grad(dy, x, 1.3); },
      [](auto& dy, auto& y) { return ops::sigmoid_grad(dy, y); },
      [](auto& dy, auto& y) { return ops::tanh_grad(dy, y); },
  };
  for (std::size_t i = 0; i < builders.size(); ++i) {
    CAPTURE(i);
    check_gradients({Shape{3, 4}, Shape{3, 4}},
                    [&](const std::vector<SymbolicTensor>& in) { return std::vector{builders[i](in[0], in[1]), in[1]}; });
  }
  // The gradient of the gradient of an activation, end to end.
  check_gradients({Shape{2, 5}}, [](const std::vector<SymbolicTensor>& in) {
    auto y = ops::multiply(ops::elu(in[0], 0.8), ops::sigmoid(in[0]));
    return gradients(ops::reduce_sum(ops::tanh(y)), {in[0]});
  });
}

TEST_CASE("activation: softmax and log_softmax forward values") {
  SUBCASE("hand-computed, last axis") {
    Graph g;
    auto x = g.constant(Tensor::from_vector<double>(Shape{2, 3}, {1.0, 2.0, 3.0, 0.0, 0.0, 0.0}));
    auto r = evaluate({ops::softmax(x), ops::log_softmax(x)});
    check_close(r[0], {0.09003057317038046, 0.24472847105479764, 0.6652409557748219, 1.0 / 3, 1.0 / 3, 1.0 / 3});
    check_close(r[1], {-2.4076059644443806, -1.4076059644443806, -0.4076059644443806, -std::log(3.0),
                       -std::log(3.0), -std::log(3.0)});
  }

  SUBCASE("every axis of a rank-3 tensor, float32 and float64") {
    std::vector<std::int64_t> dims = {3, 4, 5};
    Tensor x64 = random_tensor(Shape(dims), 11, 0.1, 3.0);
    std::vector<double> xs = x64.to_vector<double>();
    for (int axis = -3; axis < 3; ++axis) {
      CAPTURE(axis);
      int a = axis < 0 ? axis + 3 : axis;
      for (DType dtype : {DType::float64, DType::float32}) {
        Graph g;
        Tensor value = dtype == DType::float64 ? x64 : Tensor::from_vector<float>(Shape(dims), x64.to_vector<float>());
        auto x = g.constant(value);
        auto r = evaluate({ops::softmax(x, axis), ops::log_softmax(x, axis)});
        double tol = dtype == DType::float32 ? 2e-6 : 1e-12;
        check_close(r[0], softmax_ref(xs, dims, a, false), tol, tol);
        check_close(r[1], softmax_ref(xs, dims, a, true), tol, tol);
      }
    }
  }

  SUBCASE("large logits stay finite (max subtracted)") {
    Graph g;
    auto x = g.constant(Tensor::from_vector<float>(Shape{1, 3}, {1000.0f, 1001.0f, 1002.0f}));
    auto r = evaluate({ops::softmax(x), ops::log_softmax(x)});
    check_close(r[0], {0.09003057317038046, 0.24472847105479764, 0.6652409557748219}, 1e-6, 1e-6);
    check_close(r[1], {-2.4076059644443806, -1.4076059644443806, -0.4076059644443806}, 1e-5, 1e-5);
  }

  SUBCASE("large tensors split over the thread pool") {
    // (64, 700, 3): the last-axis path over 44800 rows, and the strided path over axis 1.
    std::vector<std::int64_t> dims = {64, 700, 3};
    Tensor x64 = random_tensor(Shape(dims), 5, 0.1, 4.0);
    std::vector<double> xs = x64.to_vector<double>();
    Graph g;
    auto x = g.constant(Tensor::from_vector<float>(Shape(dims), x64.to_vector<float>()));
    auto r = evaluate({ops::softmax(x, -1), ops::log_softmax(x, 1), ops::softmax(x, 1)});
    check_close(r[0], softmax_ref(xs, dims, 2, false), 1e-5, 1e-6);
    check_close(r[1], softmax_ref(xs, dims, 1, true), 1e-5, 1e-5);
    check_close(r[2], softmax_ref(xs, dims, 1, false), 1e-5, 1e-7);
  }
}

TEST_CASE("activation: softmax gradients and second derivatives") {
  for (int axis : {-1, 0, 1}) {
    CAPTURE(axis);
    check_gradients({Shape{3, 2, 4}}, [&](const std::vector<SymbolicTensor>& in) {
      return std::vector{ops::softmax(in[0], axis)};
    });
    check_gradients({Shape{3, 2, 4}}, [&](const std::vector<SymbolicTensor>& in) {
      return std::vector{ops::log_softmax(in[0], axis)};
    });
    check_gradients({Shape{3, 2, 4}, Shape{3, 2, 4}}, [&](const std::vector<SymbolicTensor>& in) {
      return std::vector{ops::softmax_grad(in[0], ops::softmax(in[1], axis), axis)};
    });
    check_gradients({Shape{3, 2, 4}, Shape{3, 2, 4}}, [&](const std::vector<SymbolicTensor>& in) {
      return std::vector{ops::log_softmax_grad(in[0], ops::log_softmax(in[1], axis), axis)};
    });
  }
  check_gradients({Shape{5}}, [](const std::vector<SymbolicTensor>& in) {
    return std::vector{ops::log_softmax(ops::softmax(in[0]))};
  });
}

TEST_CASE("activation: bad input is rejected at graph-build time") {
  Graph g;
  auto xi = g.placeholder(Shape{2, 3}, DType::int32);
  auto x = g.placeholder(Shape{-1, 3}, DType::float32);
  auto y = g.placeholder(Shape{-1, 4}, DType::float32);
  auto x64 = g.placeholder(Shape{2, 3}, DType::float64);

  check_build_error<DTypeError>([&] { ops::relu(xi); }, {"relu", "(2, 3) int32", "float"});
  check_build_error<DTypeError>([&] { ops::exp(xi); }, {"exp", "(2, 3)"});
  check_build_error<DTypeError>([&] { ops::softmax(xi); }, {"softmax", "(2, 3)"});
  check_build_error<ShapeError>([&] { ops::softmax(x, 2); }, {"softmax", "(None, 3)", "axis"});
  check_build_error<ShapeError>([&] { ops::log_softmax(x, -3); }, {"log_softmax", "(None, 3)"});
  check_build_error<ShapeError>([&] { ops::relu_grad(x, y); }, {"relu_grad", "(None, 3)", "(None, 4)"});
  check_build_error<DTypeError>([&] { ops::tanh_grad(x, x64); }, {"tanh_grad", "float32", "float64"});
  check_build_error<ShapeError>([&] { ops::softmax_grad(x, y, -1); }, {"softmax_grad", "(None, 3)", "(None, 4)"});

  // Unknown batch dimensions pass through; a known one wins over an unknown one.
  CHECK(ops::sigmoid(x).shape() == Shape{-1, 3});
  auto known = g.placeholder(Shape{5, 3}, DType::float32);
  CHECK(ops::relu_grad(x, known).shape() == Shape{5, 3});
}
