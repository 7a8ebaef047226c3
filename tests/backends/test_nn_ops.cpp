// max/avg pooling, batch and layer normalization and dropout (convolutions: test_conv_ops.cpp): forward
// values against direct loops and hand examples, finite-difference gradients, and bad input at build time.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "tower/core/autodiff.h"
#include "tower/core/executor.h"
#include "tower/core/op_names.h"
#include "tower/core/ops.h"
#include "tower/core/random.h"
#include "tests/backends/window_reference.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::check_throws_naming;
using tower::testing::for_each_tap;
using tower::testing::Geo;
using tower::testing::geometry;
using tower::testing::check_gradients;
using tower::testing::evaluate;
using tower::testing::random_tensor;
using Inputs = std::vector<SymbolicTensor>;
using Ints = std::vector<std::int64_t>;

namespace {

// Direct-loop pooling: max or mean over the valid taps of each window.
std::vector<double> pool_reference(const Tensor& x, const ops::Pool2DArgs& args, bool max) {
  Ints strides = args.strides.empty() ? args.pool_size : args.strides;
  Geo g = geometry(x.shape(), args.pool_size[0], args.pool_size[1], strides, {1, 1}, args.padding);
  auto xv = x.to_vector<double>();
  const std::size_t outputs = static_cast<std::size_t>(g.n * g.oh * g.ow * g.c);
  std::vector<double> y(outputs, max ? -std::numeric_limits<double>::infinity() : 0.0), count(outputs, 0.0);
  for_each_tap(g, [&](auto n, auto oy, auto ox, auto, auto, auto iy, auto ix) {
    for (std::int64_t ci = 0; ci < g.c; ++ci) {
      auto yi = static_cast<std::size_t>(((n * g.oh + oy) * g.ow + ox) * g.c + ci);
      double v = xv[static_cast<std::size_t>(((n * g.h + iy) * g.w + ix) * g.c + ci)];
      y[yi] = max ? std::max(y[yi], v) : y[yi] + v;
      count[yi] += 1;
    }
  });
  if (!max)
    for (std::size_t i = 0; i < outputs; ++i) y[i] /= count[i];
  return y;
}

}  // namespace
TEST_CASE("nn: max and avg pooling on hand examples") {
  Graph g;
  std::vector<double> v(25);
  for (int i = 0; i < 25; ++i) v[static_cast<std::size_t>(i)] = i + 1;
  auto x5 = g.constant(Tensor::from_vector<double>({1, 5, 5, 1}, v));
  auto x4 = g.constant(Tensor::from_vector<double>({1, 4, 4, 1}, {1, 5, 2, 0, 3, 4, 8, 6, 0, 1, 2, 2, 9, 7, 3, 1}));
  auto x3 = g.constant(Tensor::from_vector<double>({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9}));
  ops::Pool2DArgs same3s2{.pool_size = {3, 3}, .strides = {2, 2}, .padding = "same"};
  ops::Pool2DArgs same2s1{.pool_size = {2, 2}, .strides = {1, 1}, .padding = "same"};
  auto r =
      evaluate({ops::max_pool2d(x4), ops::avg_pool2d(x4), ops::max_pool2d(x5, same3s2), ops::avg_pool2d(x5, same3s2),
                ops::avg_pool2d(x3, same2s1), ops::max_pool2d(x5, {.pool_size = {3, 3}, .strides = {1, 2}})});
  CHECK(r[0].shape() == Shape{1, 2, 2, 1});
  check_close(r[0], {5, 8, 9, 3});
  check_close(r[1], {13.0 / 4, 16.0 / 4, 17.0 / 4, 8.0 / 4});
  check_close(r[2], {7, 9, 10, 17, 19, 20, 22, 24, 25});
  // "same" averaging divides by the taps inside the input: the corner window sees 1, 2, 6, 7.
  check_close(r[3], {4, 5.5, 7, 11.5, 13, 14.5, 19, 20.5, 22});
  check_close(r[4], {3, 4, 4.5, 6, 7, 7.5, 7.5, 8.5, 9});
  CHECK(r[5].shape() == Shape{1, 3, 2, 1});
  check_close(r[5], {13, 15, 18, 20, 23, 25});
}

TEST_CASE("nn: pooling matches direct loops with channels") {
  const std::vector<ops::Pool2DArgs> cases = {
      {},
      {.pool_size = {3, 3}, .strides = {2, 2}, .padding = "same"},
      {.pool_size = {2, 3}, .strides = {1, 2}, .padding = "valid"},
      {.pool_size = {3, 2}, .strides = {3, 1}, .padding = "same"},
  };
  for (DType dtype : {DType::float64, DType::float32}) {
    std::uint64_t seed = 40;
    for (const auto& args : cases) {
      Tensor xt = random_tensor({3, 7, 6, 5}, seed++, 0.1, 1.0, false, dtype);
      Graph g;
      auto x = g.placeholder({-1, 7, 6, 5}, dtype);
      auto r = evaluate({ops::max_pool2d(x, args), ops::avg_pool2d(x, args)}, {{x, xt}});
      check_close(r[0], pool_reference(xt, args, true), 1e-6, 1e-6);
      check_close(r[1], pool_reference(xt, args, false), 1e-6, 1e-6);
    }
  }
}

TEST_CASE("nn: pooling gradients") {
  const std::vector<ops::Pool2DArgs> cases = {
      {},
      {.pool_size = {3, 3}, .strides = {2, 2}, .padding = "same"},
      {.pool_size = {2, 2}, .strides = {1, 1}, .padding = "same"},
      {.pool_size = {2, 3}, .padding = "same"},  // tiling windows over the padding (5 rows, 4 columns)
  };
  for (const auto& args : cases) {
    check_gradients({{2, 5, 4, 3}}, [&](const Inputs& in) { return Inputs{ops::max_pool2d(in[0], args)}; });
    check_gradients({{2, 5, 4, 3}}, [&](const Inputs& in) { return Inputs{ops::avg_pool2d(in[0], args)}; });
  }
  // avg_pool2d_grad is linear in dy; its own gradient is avg pooling again.
  check_gradients({{2, 3, 2, 3}}, [&](const Inputs& in) {
    auto x = in[0].graph().constant(Tensor::zeros({2, 5, 4, 3}, DType::float64));
    return Inputs{ops::avg_pool2d_grad(in[0], x, cases[1])};
  });
}

TEST_CASE("nn: max_pool2d_grad routes ties to the first maximum") {
  Graph g;
  auto x = g.constant(Tensor::from_vector<double>({1, 2, 4, 1}, {1, 3, 2, 2, 3, 1, 2, 2}));
  auto y = ops::max_pool2d(x);
  auto dy = g.constant(Tensor::from_vector<double>({1, 1, 2, 1}, {10, 20}));
  auto r = evaluate({ops::max_pool2d_grad(dy, x, y, {})});
  check_close(r[0], {0, 10, 20, 0, 0, 0, 0, 0});
}

TEST_CASE("nn: relu_grad through max_pool2d_grad masks the pooled gradient, the same numbers") {
  // ops::relu_grad(max_pool2d_grad(g, y, m), y) is built as max_pool2d_grad(relu_grad(g, m), y, m)
  // (activation_ops.cpp); checked against the mask applied to the routed gradient, for windows that
  // overlap, with ReLU outputs of exactly 0 (whole windows among them) and a NaN.
  for (const auto& args : {ops::Pool2DArgs{}, ops::Pool2DArgs{.pool_size = {3, 3}, .strides = {1, 2}, .padding = "same"}}) {
    CAPTURE(args.padding);
    Graph g;
    Tensor yt = random_tensor({2, 6, 5, 3}, 41, 0.1, 1.0, false, DType::float32);
    float* py = yt.data<float>();
    for (std::int64_t i = 0; i < yt.num_elements(); ++i) py[i] = std::max(py[i], 0.0f);  // a ReLU's output
    std::fill(py, py + 2 * 5 * 3, 0.0f);                                           // the first rows all 0
    py[40] = std::numeric_limits<float>::quiet_NaN();
    auto y = g.constant(yt);
    auto m = ops::max_pool2d(y, args);
    auto dm = g.constant(random_tensor(m.shape(), 42, 0.1, 1.0, false, DType::float32));
    auto routed = ops::max_pool2d_grad(dm, y, m, args);
    auto fused = ops::relu_grad(routed, y);
    CHECK(fused.node()->op() == std::string(op_names::max_pool2d_grad));
    auto r = evaluate({fused, routed});
    auto unfused = evaluate({ops::relu_grad(g.constant(r[1]), y)});  // a constant: not rewritten
    check_close(r[0], unfused[0], 0, 0);
    // The same through max_pool2d_with_argmax's gradient (what autodiff builds for ops::max_pool2d).
    REQUIRE(m.node()->op() == std::string(op_names::max_pool2d_with_argmax));
    auto routed_by_argmax = ops::max_pool2d_with_argmax_grad(dm, m.node()->output(1), {6, 5}, args);
    auto fused_by_argmax = ops::relu_grad(routed_by_argmax, y);
    CHECK(fused_by_argmax.node()->op() == std::string(op_names::max_pool2d_with_argmax_grad));
    auto ra = evaluate({fused_by_argmax, routed_by_argmax});
    check_close(ra[1], r[1], 0, 0);
    check_close(ra[0], unfused[0], 0, 0);
  }
}

namespace {

// a and b hold the same bits, NaN for NaN (check_close fails on NaN).
void check_same_bits(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  const auto av = a.to_vector<double>(), bv = b.to_vector<double>();
  for (std::size_t i = 0; i < av.size(); ++i)
    if (!(std::isnan(av[i]) && std::isnan(bv[i])) &&
        (av[i] != bv[i] || std::signbit(av[i]) != std::signbit(bv[i])))
      FAIL_CHECK("element " << i << ": " << av[i] << " and " << bv[i]);
}

// (2, 7, 6, 3) of small integers (many ties, -0 beside +0), a NaN and a window of -inf.
Tensor pooling_input(DType dtype) {
  Tensor x = random_tensor({2, 7, 6, 3}, 51, 0.1, 1.0, false, DType::float64);
  double* p = x.data<double>();
  for (std::int64_t i = 0; i < x.num_elements(); ++i) p[i] = std::round(p[i] * 2);
  p[3] = -0.0;
  p[4] = std::numeric_limits<double>::quiet_NaN();
  for (std::int64_t r : {2, 3})  // channel 0 of image 1, rows 2-3, columns 4-5
    for (std::int64_t c : {4, 5}) p[((7 + r) * 6 + c) * 3] = -std::numeric_limits<double>::infinity();
  if (dtype == DType::float64) return x;
  const auto v = x.to_vector<double>();
  return Tensor::from_vector<float>(x.shape(), std::vector<float>(v.begin(), v.end()));
}

}  // namespace

TEST_CASE("nn: max_pool2d_with_argmax gives max_pool2d's values and max_pool2d_grad's routing, bit for bit") {
  const std::vector<ops::Pool2DArgs> cases = {
      {},
      {.pool_size = {3, 3}, .strides = {2, 2}, .padding = "same"},
      {.padding = "same"},  // 2x2 windows inside x a row at a time, the cut last row one by one
      {.pool_size = {2, 2}, .strides = {1, 1}, .padding = "same"},  // overlapping windows: dx adds
      {.pool_size = {2, 3}, .padding = "same"},
      {.pool_size = {3, 3}, .strides = {1, 2}},
  };
  for (DType dtype : {DType::float32, DType::float64})
    for (const auto& args : cases) {
      CAPTURE(dtype_name(dtype));
      CAPTURE(args.pool_size[1]);
      CAPTURE(args.padding);
      Graph g;
      const Tensor xt = pooling_input(dtype);
      auto x_unknown = g.placeholder({-1, -1, -1, 3}, dtype, "x_unknown");  // unknown size: plain max_pool2d
      auto x = g.placeholder({-1, 7, 6, 3}, dtype, "x");
      auto plain = ops::max_pool2d(x_unknown, args);
      auto pooled = ops::max_pool2d(x, args);
      CHECK(plain.node()->op() == std::string(op_names::max_pool2d));
      REQUIRE(pooled.node()->op() == std::string(op_names::max_pool2d_with_argmax));
      auto argmax = pooled.node()->output(1);
      CHECK(argmax.dtype() == DType::uint8);
      Shape dy_shape = pooled.shape();
      dy_shape[0] = 2;
      Tensor dyt = random_tensor(dy_shape, 52, 0.1, 1.0, false, dtype);
      auto dy = g.constant(dyt);
      auto r = evaluate({plain, pooled, ops::max_pool2d_grad(dy, x_unknown, plain, args),
                         ops::max_pool2d_with_argmax_grad(dy, argmax, {7, 6}, args)},
                        {{x_unknown, xt}, {x, xt}});
      check_same_bits(r[0], r[1]);
      check_same_bits(r[2], r[3]);
      // The gradient autodiff builds reads the argmax, not x.
      auto dx = gradients(ops::reduce_sum(pooled), {x})[0];
      CHECK(dx.node()->op() == std::string(op_names::max_pool2d_with_argmax_grad));
      for (const auto& in : dx.node()->inputs()) CHECK(!(in == x));
    }
}

TEST_CASE("nn: pooling rejects bad input at build time") {
  Graph g;
  auto x = g.placeholder({-1, 2, 3, 4});
  check_throws_naming<ShapeError>(
      [&] {
        ops::max_pool2d(x, {.pool_size = {3, 3}});
      },
      {"max_pool2d", "(None, 2, 3, 4)", "pool window"});
  CHECK(ops::max_pool2d(x, {.pool_size = {3, 3}, .padding = "same"}).shape() == Shape{-1, 1, 1, 4});
  check_throws_naming<ValueError>([&] { ops::avg_pool2d(x, {.pool_size = {0, 2}}); }, {"avg_pool2d", "pool_size"});
  check_throws_naming<ValueError>([&] { ops::avg_pool2d(x, {.padding = "full"}); }, {"avg_pool2d", "padding"});
  check_throws_naming<ShapeError>([&] { ops::avg_pool2d(g.placeholder({4, 4})); }, {"avg_pool2d", "(4, 4)", "rank 4"});
}

TEST_CASE("nn: batch_norm_training forward values") {
  for (DType dtype : {DType::float64, DType::float32}) {
    const double eps = 1e-3, tol = dtype == DType::float64 ? 1e-10 : 1e-5;
    Tensor xt = random_tensor({4, 3, 2, 3}, 7, 0.1, 2.0, false, dtype);
    Tensor gt = random_tensor({3}, 8, 0.5, 1.5, false, dtype);
    Tensor bt = random_tensor({3}, 9, 0.1, 1.0, false, dtype);
    auto xv = xt.to_vector<double>(), gv = gt.to_vector<double>(), bv = bt.to_vector<double>();
    const std::size_t c = 3, rows = xv.size() / c;
    std::vector<double> mean(c, 0), var(c, 0), inv(c), y(xv.size());
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t e = 0; e < c; ++e) mean[e] += xv[r * c + e] / static_cast<double>(rows);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t e = 0; e < c; ++e) var[e] += std::pow(xv[r * c + e] - mean[e], 2) / static_cast<double>(rows);
    for (std::size_t e = 0; e < c; ++e) inv[e] = 1 / std::sqrt(var[e] + eps);
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t e = 0; e < c; ++e) y[r * c + e] = gv[e] * (xv[r * c + e] - mean[e]) * inv[e] + bv[e];

    Graph g;
    auto x = g.placeholder({-1, 3, 2, 3}, dtype);
    auto gamma = g.constant(gt), beta = g.constant(bt);
    auto out = ops::batch_norm_training(x, gamma, beta, eps);
    REQUIRE(out.size() == 4);
    CHECK(out[1].shape() == Shape{3});
    auto r = evaluate(out, {{x, xt}});
    check_close(r[0], y, tol, tol);
    check_close(r[1], mean, tol, tol);
    check_close(r[2], var, tol, tol);
    check_close(r[3], inv, tol, tol);
  }
}

TEST_CASE("nn: batch_norm_training gradients") {
  // Through y alone (the usual case) and through all four outputs (mean, variance and inv_std too).
  check_gradients({{4, 2, 3}, {3}, {3}},
                  [](const Inputs& in) { return Inputs{ops::batch_norm_training(in[0], in[1], in[2])[0]}; });
  check_gradients({{3, 2, 2, 3}, {3}, {3}},
                  [](const Inputs& in) { return ops::batch_norm_training(in[0], in[1], in[2], 0.01); });
  check_gradients({{5, 4}, {4}, {4}}, [](const Inputs& in) {
    auto out = ops::batch_norm_training(in[0], in[1], in[2]);
    return Inputs{out[0], out[2]};
  });
}

TEST_CASE("nn: batch_norm_inference values and gradients") {
  Graph g;
  auto x = g.constant(Tensor::from_vector<double>({2, 2}, {1, 2, 3, 4}));
  auto gamma = g.constant(Tensor::from_vector<double>({2}, {2, 0.5}));
  auto beta = g.constant(Tensor::from_vector<double>({2}, {0.1, -1}));
  auto mean = g.constant(Tensor::from_vector<double>({2}, {1.5, 2}));
  auto var = g.constant(Tensor::from_vector<double>({2}, {0.25, 4}));
  auto r = evaluate({ops::batch_norm_inference(x, gamma, beta, mean, var, 0.0)});
  check_close(r[0], {2 * (1 - 1.5) / 0.5 + 0.1, 0.5 * 0 / 2 - 1, 2 * (3 - 1.5) / 0.5 + 0.1, 0.5 * 2 / 2 - 1});

  tower::testing::GradCheckOptions positive{.positive = true};  // variance > 0
  check_gradients(
      {{3, 2, 4}, {4}, {4}, {4}, {4}},
      [](const Inputs& in) { return Inputs{ops::batch_norm_inference(in[0], in[1], in[2], in[3], in[4])}; }, positive);
}

TEST_CASE("nn: layer_norm forward values, against Keras's formula in double") {
  for (DType dtype : {DType::float64, DType::float32})
    for (const Shape& shape : {Shape{4, 3, 5}, Shape{2, 40}, Shape{3, 1}}) {  // 40: lanes and a tail; 1: variance 0
      CAPTURE(shape.to_string());
      const double eps = 1e-3, tol = dtype == DType::float64 ? 1e-10 : 1e-5;
      const std::int64_t n = shape.dim(-1);
      Tensor xt = random_tensor(shape, 17, 0.1, 3.0, false, dtype);
      Tensor gt = random_tensor({n}, 18, 0.5, 1.5, false, dtype);
      Tensor bt = random_tensor({n}, 19, 0.1, 1.0, false, dtype);
      auto xv = xt.to_vector<double>(), gv = gt.to_vector<double>(), bv = bt.to_vector<double>();
      std::vector<double> y(xv.size());
      for (std::size_t r = 0; r < xv.size() / static_cast<std::size_t>(n); ++r) {
        const double* row = xv.data() + r * static_cast<std::size_t>(n);
        double mean = 0, var = 0;
        for (std::int64_t e = 0; e < n; ++e) mean += row[e] / static_cast<double>(n);
        for (std::int64_t e = 0; e < n; ++e) var += (row[e] - mean) * (row[e] - mean) / static_cast<double>(n);
        for (std::int64_t e = 0; e < n; ++e) {
          const double inv = gv[e] / std::sqrt(var + eps);
          y[r * static_cast<std::size_t>(n) + e] = row[e] * inv + (bv[e] - mean * inv);
        }
      }
      Graph g;
      auto x = g.placeholder(shape, dtype);
      check_close(evaluate({ops::layer_norm(x, g.constant(gt), g.constant(bt), eps)}, {{x, xt}})[0], y, tol, tol);
    }
}

TEST_CASE("nn: layer_norm gradients") {
  check_gradients({{4, 2, 3}, {3}, {3}},
                  [](const Inputs& in) { return Inputs{ops::layer_norm(in[0], in[1], in[2])}; });
  check_gradients({{3, 37}, {37}, {37}},  // a row longer than the 16 lanes, with a tail
                  [](const Inputs& in) { return Inputs{ops::layer_norm(in[0], in[1], in[2], 0.01)}; });
}

TEST_CASE("nn: batch norm rejects bad input at build time") {
  Graph g;
  auto x = g.placeholder({-1, 5, 5, 3});
  auto c3 = g.placeholder({3});
  auto c4 = g.placeholder({4});
  check_throws_naming<ShapeError>([&] { ops::batch_norm_training(x, c4, c3); },
                                  {"batch_norm_training", "(None, 5, 5, 3)", "(4,)", "gamma"});
  check_throws_naming<ShapeError>([&] { ops::batch_norm_inference(x, c3, c3, c3, c4); },
                                  {"batch_norm_inference", "variance", "(4,)"});
  check_throws_naming<ShapeError>([&] { ops::batch_norm_training(c3, c3, c3); }, {"batch_norm_training", "rank 2"});
  check_throws_naming<ValueError>([&] { ops::batch_norm_training(x, c3, c3, -1.0); },
                                  {"batch_norm_training", "epsilon"});
  check_throws_naming<ShapeError>([&] { ops::layer_norm(x, c3, c4); }, {"layer_norm", "(4,)", "beta"});
  check_throws_naming<ShapeError>([&] { ops::layer_norm_grad(g.placeholder({-1, 5, 5, 4}), x, c3); },
                                  {"layer_norm_grad", "dy", "same shape"});
}

TEST_CASE("nn: dropout keeps about 1 - rate, scales, and follows uniform_at") {
  const double rate = 0.3;
  const std::uint64_t seed = 0xfeedbeefcafe1234ull;  // above 2^63: the attr keeps all 64 bits
  Graph g;
  auto x = g.placeholder({100, 1000});
  Tensor xt = random_tensor({100, 1000}, 2, 0.1, 1.0, false, DType::float32);
  auto out = ops::dropout(x, rate, seed);
  REQUIRE(out.size() == 2);
  Executor executor;
  auto first = executor.run({{x, xt}}, out);
  auto y = first[0].to_vector<double>(), mask = first[1].to_vector<double>(), xv = xt.to_vector<double>();
  const double scale = static_cast<float>(1 / (1 - rate));
  std::size_t kept = 0, mismatches = 0;
  for (std::size_t i = 0; i < mask.size(); ++i) {
    bool keep = uniform_at(seed, 0, i) < 1 - rate;
    kept += keep;
    if (mask[i] != (keep ? scale : 0.0) || std::abs(y[i] - xv[i] * mask[i]) > 1e-6) ++mismatches;
  }
  CHECK(mismatches == 0);
  CHECK(std::abs(static_cast<double>(kept) / static_cast<double>(mask.size()) - (1 - rate)) < 0.01);

  // The same seed in another graph repeats the first run; the node's second run draws a new mask.
  Graph g2;
  auto x2 = g2.placeholder({100, 1000});
  auto again = evaluate({ops::dropout(x2, rate, seed)[1]}, {{x2, xt}});
  CHECK(again[0].to_vector<double>() == mask);
  auto second = executor.run({{x, xt}}, out);
  CHECK(second[1].to_vector<double>() != mask);
  auto other_seed = evaluate({ops::dropout(x2, rate, seed + 1)[1]}, {{x2, xt}});
  CHECK(other_seed[0].to_vector<double>() != mask);

  // rate 0 keeps everything unscaled.
  auto none = evaluate({ops::dropout(x2, 0.0, 5)[0]}, {{x2, xt}});
  check_close(none[0], xt);
}

TEST_CASE("nn: dropout with a row offset draws, for its rows, the whole batch's masks") {
  // Rows not a multiple of 4 elements: shares start inside a Philox block. 7 rows of 3 split 3:2:2;
  // 20 rows of 37 split 7:6:7, long enough for the CPU's 64 elements at a time with a ragged start.
  for (const std::int64_t width : {3, 37}) {
    CAPTURE(width);
    const std::vector<std::int64_t> shares =
        width == 3 ? std::vector<std::int64_t>{3, 2, 2} : std::vector<std::int64_t>{7, 6, 7};
    Graph g;
    auto x = g.placeholder({-1, width});
    Tensor xt = random_tensor({shares[0] + shares[1] + shares[2], width}, 5, 0.1, 1.0, false, DType::float32);
    std::vector<SymbolicTensor> fetches{ops::dropout(x, 0.5, 11)[1]};
    for (int i = 0; i < 3; ++i)
      fetches.push_back(ops::dropout(ops::batch_share(x, shares, i), 0.5, 11, ops::batch_share_start(x, shares, i))[1]);
    const auto r = evaluate(fetches, {{x, xt}});
    const auto whole = r[0].to_vector<float>();
    std::vector<float> joined;
    for (int i = 1; i <= 3; ++i)
      for (float v : r[static_cast<std::size_t>(i)].to_vector<float>()) joined.push_back(v);
    CHECK(joined == whole);
    for (std::size_t i = 0; i < whole.size(); ++i)
      if ((whole[i] != 0) != (uniform_at(11, 0, i) < 0.5)) FAIL_CHECK("element ", i, " differs from uniform_at");
  }
  Graph g;
  auto x = g.placeholder({-1, 3});
  check_throws_naming<ValueError>([&] { ops::dropout(x, 0.5, 1, g.constant(Tensor::scalar(1.0))); },
                                  {"dropout", "row offset", "int64"});
}

TEST_CASE("nn: dropout gradient is dy * mask") {
  for (DType dtype : {DType::float64, DType::float32}) {
    Graph g;
    auto x = g.placeholder({4, 50}, dtype);
    auto out = ops::dropout(x, 0.5, 99);
    auto dy = g.placeholder({4, 50}, dtype);
    auto dx = gradients(out[0], {x}, dy)[0];
    REQUIRE(dx.defined());
    Tensor dyt = random_tensor({4, 50}, 6, 0.1, 1.0, false, dtype);
    auto r = evaluate({dx, out[1]}, {{x, random_tensor({4, 50}, 5, 0.1, 1.0, false, dtype)}, {dy, dyt}});
    auto m = r[1].to_vector<double>(), d = dyt.to_vector<double>();
    std::vector<double> expected(m.size());
    for (std::size_t i = 0; i < m.size(); ++i) expected[i] = d[i] * m[i];
    check_close(r[0], expected, 1e-6, 1e-6);
  }
}

TEST_CASE("nn: dropout rejects a rate outside [0, 1)") {
  Graph g;
  auto x = g.placeholder({-1, 8});
  check_throws_naming<ValueError>([&] { ops::dropout(x, 1.0, 1); }, {"dropout", "rate", "(None, 8)"});
  check_throws_naming<ValueError>([&] { ops::dropout(x, -0.1, 1); }, {"dropout", "rate"});
  check_throws_naming<DTypeError>([&] { ops::dropout(g.placeholder({4}, DType::int32), 0.5, 1); },
                                  {"dropout", "int32"});
}

TEST_CASE("nn: conv2d and pooling on an empty batch") {
  Graph g;
  auto x = g.placeholder({-1, 5, 5, 3});
  auto k = g.placeholder({3, 3, 3, 4});
  auto dy = g.placeholder({-1, 3, 3, 4});
  Tensor xt = Tensor::zeros({0, 5, 5, 3}), kt = random_tensor({3, 3, 3, 4}, 1, 0.1, 1.0, false, DType::float32);
  auto r = evaluate({ops::conv2d(x, k), ops::conv2d_backward_data(dy, k, x, {}),
                     ops::conv2d_backward_filter(x, dy, k, {}), ops::max_pool2d(x), ops::avg_pool2d(x)},
                    {{x, xt}, {k, kt}, {dy, Tensor::zeros({0, 3, 3, 4})}});
  CHECK(r[0].shape() == Shape{0, 3, 3, 4});
  CHECK(r[1].shape() == Shape{0, 5, 5, 3});
  check_close(r[2], std::vector<double>(108, 0.0));  // no rows: a zero gradient
  CHECK(r[3].shape() == Shape{0, 2, 2, 3});
}

namespace {

// tf.image.resize (half-pixel centers) computed directly in double: bilinear or nearest.
std::vector<double> resize_reference(const Tensor& x, std::int64_t out_h, std::int64_t out_w, bool bilinear) {
  const Shape& s = x.shape();
  const auto v = x.to_vector<double>();
  auto at = [&](std::int64_t n, std::int64_t iy, std::int64_t ix, std::int64_t c) {
    return v[static_cast<std::size_t>(((n * s[1] + iy) * s[2] + ix) * s[3] + c)];
  };
  struct Tap {
    std::int64_t lo, hi;
    double lerp;
  };
  auto tap = [&](std::int64_t i, std::int64_t in, std::int64_t out) {
    const double scale = static_cast<double>(in) / static_cast<double>(out);
    if (!bilinear) {
      const auto src = std::min<std::int64_t>(static_cast<std::int64_t>(std::floor((i + 0.5) * scale)), in - 1);
      return Tap{src, src, 0.0};
    }
    const double src = (i + 0.5) * scale - 0.5;
    return Tap{std::max<std::int64_t>(static_cast<std::int64_t>(std::floor(src)), 0),
               std::min<std::int64_t>(static_cast<std::int64_t>(std::ceil(src)), in - 1), src - std::floor(src)};
  };
  std::vector<double> y;
  for (std::int64_t n = 0; n < s[0]; ++n)
    for (std::int64_t oy = 0; oy < out_h; ++oy)
      for (std::int64_t ox = 0; ox < out_w; ++ox)
        for (std::int64_t c = 0; c < s[3]; ++c) {
          const Tap ty = tap(oy, s[1], out_h), tx = tap(ox, s[2], out_w);
          const double top = at(n, ty.lo, tx.lo, c) * (1 - tx.lerp) + at(n, ty.lo, tx.hi, c) * tx.lerp;
          const double bottom = at(n, ty.hi, tx.lo, c) * (1 - tx.lerp) + at(n, ty.hi, tx.hi, c) * tx.lerp;
          y.push_back(top * (1 - ty.lerp) + bottom * ty.lerp);
        }
  return y;
}

}  // namespace

TEST_CASE("nn: resize (bilinear and nearest, up and down) against tf.image.resize's rule, and its gradient") {
  struct Case {
    Shape x;
    std::int64_t h, w;
  };
  std::uint64_t seed = 70;
  for (const std::string method : {"bilinear", "nearest"})
    for (const auto& c : {Case{{2, 3, 4, 2}, 6, 8}, Case{{1, 5, 7, 3}, 3, 4}, Case{{2, 4, 3, 1}, 7, 5},
                          Case{{1, 1, 2, 2}, 3, 1}}) {
      CAPTURE(method);
      CAPTURE(c.x.to_string());
      Tensor xt = random_tensor(c.x, seed++, 0.1, 1.0, false, DType::float64);
      Graph g;
      auto x = g.placeholder({-1, c.x[1], c.x[2], c.x[3]}, DType::float64);
      auto y = ops::resize(x, c.h, c.w, method);
      CHECK(y.shape() == Shape{-1, c.h, c.w, c.x[3]});
      check_close(evaluate({y}, {{x, xt}})[0], resize_reference(xt, c.h, c.w, method == "bilinear"), 1e-6, 1e-6);
      check_gradients({c.x}, [&](const Inputs& in) { return Inputs{ops::resize(in[0], c.h, c.w, method)}; });
    }
  Graph g;
  auto x = g.placeholder({-1, 4, 4, 1});
  check_throws_naming<ValueError>([&] { ops::resize(x, 8, 8, "bicubic"); }, {"resize", "bicubic"});
  check_throws_naming<ValueError>([&] { ops::resize(x, 0, 8); }, {"resize", "positive"});
  check_throws_naming<ShapeError>([&] { ops::resize(g.placeholder({4, 4, 1}), 8, 8); }, {"resize", "rank 4"});
}
