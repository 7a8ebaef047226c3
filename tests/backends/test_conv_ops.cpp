// conv2d (grouped too), its backward ops and conv2d_transpose: forward values against direct loops,
// finite-difference gradients, and bad input at build time.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "tower/backends/cpu/onednn.h"
#include "tower/core/autodiff.h"
#include "tower/core/executor.h"
#include "tower/core/op_names.h"
#include "tower/core/ops.h"
#include "tests/backends/window_reference.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::check_gradients;
using tower::testing::check_throws_naming;
using tower::testing::evaluate;
using tower::testing::for_each_tap;
using tower::testing::Geo;
using tower::testing::geometry;
using tower::testing::random_tensor;
using Inputs = std::vector<SymbolicTensor>;
using Ints = std::vector<std::int64_t>;

namespace {

struct ConvRef {
  std::vector<double> y, dx, dk;  // y (n, oh, ow, f); dx = x's shape; dk = kernel's shape
  Shape y_shape;
};

// Direct-loop conv2d (with args.groups) and its two backward products for a given dy (n, oh, ow, f).
ConvRef conv_reference(const Tensor& x, const Tensor& k, const std::vector<double>& dy, const ops::Conv2DArgs& args) {
  const Shape& ks = k.shape();
  Geo g = geometry(x.shape(), ks[0], ks[1], args.strides, args.dilation_rate, args.padding);
  const std::int64_t c = g.c, cg = ks[2], f = ks[3], fg = f / args.groups;
  auto xv = x.to_vector<double>(), kv = k.to_vector<double>();
  ConvRef r;
  r.y_shape = Shape{g.n, g.oh, g.ow, f};
  r.y.assign(static_cast<std::size_t>(g.n * g.oh * g.ow * f), 0.0);
  r.dx.assign(xv.size(), 0.0);
  r.dk.assign(kv.size(), 0.0);
  for_each_tap(g, [&](auto n, auto oy, auto ox, auto i, auto j, auto iy, auto ix) {
    for (std::int64_t o = 0; o < f; ++o)
      for (std::int64_t ci = 0; ci < cg; ++ci) {
        const std::int64_t channel = o / fg * cg + ci;  // the input channel of o's group
        auto yi = static_cast<std::size_t>(((n * g.oh + oy) * g.ow + ox) * f + o);
        auto xi = static_cast<std::size_t>(((n * g.h + iy) * g.w + ix) * c + channel);
        auto ki = static_cast<std::size_t>(((i * g.kw + j) * cg + ci) * f + o);
        r.y[yi] += xv[xi] * kv[ki];
        if (!dy.empty()) {
          r.dx[xi] += dy[yi] * kv[ki];
          r.dk[ki] += xv[xi] * dy[yi];
        }
      }
  });
  return r;
}

struct ConvCase {
  Shape x, kernel;
  ops::Conv2DArgs args;
};

// Stride 2, dilation 2, same and valid, 1x1 kernels and non-square kernels; windows of up to 32
// taps (kh * kw * c_in) take the small-K loops, larger ones BLAS; 37 filters cover every vector tail.
const std::vector<ConvCase> kConvCases = {
    {{2, 7, 6, 5}, {3, 3, 5, 4}, {.strides = {2, 2}, .padding = "same"}},
    {{1, 9, 8, 4}, {3, 3, 4, 3}, {.padding = "same", .dilation_rate = {2, 2}}},
    {{2, 6, 5, 12}, {2, 3, 12, 2}, {.strides = {1, 2}, .padding = "valid"}},
    {{2, 4, 3, 40}, {1, 1, 40, 3}, {}},
    {{2, 5, 5, 1}, {3, 3, 1, 37}, {.padding = "same"}},
    {{2, 7, 6, 3}, {3, 3, 3, 4}, {}},
    {{2, 7, 6, 3}, {3, 3, 3, 4}, {.strides = {2, 2}, .padding = "same"}},
    {{2, 8, 7, 2}, {3, 2, 2, 3}, {.strides = {2, 1}, .padding = "valid"}},
    {{1, 9, 8, 2}, {3, 3, 2, 3}, {.padding = "valid", .dilation_rate = {2, 2}}},
    {{1, 9, 8, 2}, {3, 3, 2, 3}, {.padding = "same", .dilation_rate = {2, 1}}},
    {{2, 5, 4, 3}, {1, 1, 3, 5}, {}},
    {{2, 6, 6, 3}, {1, 1, 3, 2}, {.strides = {2, 2}, .padding = "same"}},
    {{3, 5, 5, 1}, {5, 3, 1, 2}, {.padding = "same"}},
    // Grouped: depthwise (one channel per group, multiplier 1 and 2), two and three groups, 1x1.
    {{2, 6, 5, 4}, {3, 3, 1, 4}, {.padding = "same", .groups = 4}},
    {{2, 7, 6, 3}, {3, 3, 1, 6}, {.strides = {2, 2}, .padding = "same", .groups = 3}},
    {{1, 9, 8, 4}, {3, 3, 1, 4}, {.padding = "valid", .dilation_rate = {2, 2}, .groups = 4}},
    {{2, 6, 5, 6}, {3, 2, 3, 4}, {.strides = {1, 2}, .padding = "valid", .groups = 2}},
    {{2, 5, 4, 6}, {1, 1, 2, 9}, {.groups = 3}},
    {{2, 5, 5, 8}, {3, 3, 4, 10}, {.padding = "same", .groups = 2}},  // 36 taps per group: BLAS
};

}  // namespace

TEST_CASE("nn: conv2d forward and backward ops match direct loops") {
  for (DType dtype : {DType::float64, DType::float32}) {
    const double tol = dtype == DType::float64 ? 1e-10 : 1e-4;
    std::uint64_t seed = 11;
    for (const auto& cc : kConvCases) {
      CAPTURE(cc.x.to_string());
      CAPTURE(cc.kernel.to_string());
      CAPTURE(cc.args.padding);
      CAPTURE(cc.args.groups);
      Tensor xt = random_tensor(cc.x, seed++, 0.1, 1.0, false, dtype);
      Tensor kt = random_tensor(cc.kernel, seed++, 0.1, 1.0, false, dtype);
      ConvRef shape_only = conv_reference(xt, kt, {}, cc.args);
      Tensor dyt = random_tensor(shape_only.y_shape, seed++, 0.1, 1.0, false, dtype);
      ConvRef ref = conv_reference(xt, kt, dyt.to_vector<double>(), cc.args);

      Graph g;
      auto x = g.placeholder(cc.x, dtype);
      auto k = g.placeholder(cc.kernel, dtype);
      auto dy = g.placeholder(ref.y_shape, dtype);
      auto y = ops::conv2d(x, k, cc.args);
      CHECK(y.shape() == ref.y_shape);
      auto r =
          evaluate({y, ops::conv2d_backward_data(dy, k, x, cc.args), ops::conv2d_backward_filter(x, dy, k, cc.args)},
                   {{x, xt}, {k, kt}, {dy, dyt}});
      CHECK(r[0].dtype() == dtype);
      check_close(r[0], ref.y, tol, tol);
      CHECK(r[1].shape() == cc.x);
      check_close(r[1], ref.dx, tol, tol);
      CHECK(r[2].shape() == cc.kernel);
      check_close(r[2], ref.dk, tol, tol);
    }
  }
}

TEST_CASE("nn: conv2d on a larger batch splits across threads and blocks like one pass") {
  // Enough rows for two im2col blocks per pool thread, through BLAS (72 taps) and through the
  // small-window loops (27 taps, whose filter gradient accumulates across blocks).
  struct Case {
    Shape x, kernel;
    ops::Conv2DArgs args;
  };
  for (const auto& c : {Case{{24, 14, 13, 8}, {3, 3, 8, 16}, {.padding = "same"}},
                        Case{{16, 30, 30, 3}, {3, 3, 3, 4}, {.padding = "valid"}},
                        // The depthwise loops (one channel per group), multiplier 1 and 2.
                        Case{{24, 14, 13, 8}, {3, 3, 1, 8}, {.strides = {2, 2}, .padding = "same", .groups = 8}},
                        Case{{16, 12, 12, 4}, {3, 3, 1, 8}, {.padding = "valid", .groups = 4}}}) {
    Tensor xt = random_tensor(c.x, 3, 0.1, 1.0, false, DType::float32);
    Tensor kt = random_tensor(c.kernel, 4, 0.1, 1.0, false, DType::float32);
    Shape y_shape = conv_reference(xt, kt, {}, c.args).y_shape;
    Tensor dyt = random_tensor(y_shape, 5, 0.1, 1.0, false, DType::float32);
    ConvRef ref = conv_reference(xt, kt, dyt.to_vector<double>(), c.args);
    Graph g;
    auto x = g.placeholder({-1, c.x[1], c.x[2], c.x[3]});
    auto k = g.placeholder(c.kernel);
    auto dy = g.placeholder({-1, y_shape[1], y_shape[2], y_shape[3]});
    auto y = ops::conv2d(x, k, c.args);
    CHECK(y.shape() == Shape{-1, y_shape[1], y_shape[2], y_shape[3]});
    auto r = evaluate({y, ops::conv2d_backward_data(dy, k, x, c.args), ops::conv2d_backward_filter(x, dy, k, c.args)},
                      {{x, xt}, {k, kt}, {dy, dyt}});
    check_close(r[0], ref.y, 1e-4, 1e-4);
    check_close(r[1], ref.dx, 1e-4, 1e-4);
    check_close(r[2], ref.dk, 1e-4, 1e-2);  // sums of thousands of float32 products
  }
}

TEST_CASE("nn: float32 conv2d through oneDNN equals tower's own loops") {
  // The float32 cases of the tests above run through oneDNN when it is built in (onednn.h); here
  // the same ops run both ways, on batches split unevenly over the pool (7 images on 2 threads).
  MESSAGE((std::string("oneDNN built in: ") + (cpu::onednn::built_in() ? "yes" : "no")));
  struct Case {
    Shape x, kernel;
    ops::Conv2DArgs args;
  };
  for (const auto& c : {Case{{7, 26, 26, 32}, {3, 3, 32, 64}, {}},
                        Case{{7, 13, 12, 8}, {3, 3, 8, 16}, {.strides = {2, 2}, .padding = "same"}},
                        Case{{5, 14, 15, 6}, {3, 2, 6, 5}, {.strides = {2, 3}, .padding = "valid"}},
                        Case{{3, 11, 10, 4}, {3, 3, 4, 7}, {.padding = "same", .dilation_rate = {2, 2}}}}) {
    CAPTURE(c.x.to_string());
    Tensor xt = random_tensor(c.x, 21, 0.1, 1.0, false, DType::float32);
    Tensor kt = random_tensor(c.kernel, 22, 0.1, 1.0, false, DType::float32);
    Shape y_shape = conv_reference(xt, kt, {}, c.args).y_shape;
    Tensor dyt = random_tensor(y_shape, 23, 0.1, 1.0, false, DType::float32);
    std::vector<std::vector<double>> results[2];
    for (bool onednn : {true, false}) {
      cpu::onednn::set_enabled(onednn);
      Graph g;
      auto x = g.placeholder(c.x);
      auto k = g.placeholder(c.kernel);
      auto dy = g.placeholder(y_shape);
      auto r = evaluate({ops::conv2d(x, k, c.args), ops::conv2d_backward_data(dy, k, x, c.args),
                         ops::conv2d_backward_filter(x, dy, k, c.args)},
                        {{x, xt}, {k, kt}, {dy, dyt}});
      for (const Tensor& t : r) results[onednn].push_back(t.to_vector<double>());
    }
    cpu::onednn::set_enabled(true);
    for (std::size_t i = 0; i < 3; ++i) {
      CAPTURE(i);
      REQUIRE(results[0][i].size() == results[1][i].size());
      double worst = 0, scale = 0;
      for (std::size_t e = 0; e < results[0][i].size(); ++e) {
        worst = std::max(worst, std::abs(results[0][i][e] - results[1][i][e]));
        scale = std::max(scale, std::abs(results[0][i][e]));
      }
      CHECK(worst <= 1e-5 * scale);  // two float32 summation orders of the same products
    }
  }
}

TEST_CASE("nn: conv2d_bias equals conv2d then bias_add, and its gradients check") {
  // Through oneDNN (float32, >= 4 input channels) the bias and ReLU are added as the output is
  // written: the same sums, checked within the summation-order bound; otherwise (the im2col loops'
  // blocks, the small-K loops of one input channel, groups) bit for bit.
  struct Case {
    Shape x, kernel;
    std::int64_t groups;
  };
  for (const auto& c : {Case{{7, 9, 10, 8}, {3, 3, 8, 16}, 1}, Case{{3, 6, 7, 1}, {3, 3, 1, 5}, 1},
                        Case{{2, 6, 6, 4}, {3, 3, 2, 6}, 2}})
    for (bool onednn : {true, false})
      for (DType dtype : {DType::float32, DType::float64})
        for (const char* activation : {"linear", "relu"}) {
          CAPTURE(c.x.to_string());
          CAPTURE(onednn);
          CAPTURE(dtype_name(dtype));
          CAPTURE(activation);
          cpu::onednn::set_enabled(onednn);
          const ops::Conv2DArgs args{.strides = {2, 1}, .padding = "same", .groups = c.groups};
          Graph g;
          auto x = g.constant(random_tensor(c.x, 31, 0.1, 1.0, false, dtype));
          auto k = g.constant(random_tensor(c.kernel, 32, 0.1, 1.0, false, dtype));
          auto b = g.constant(random_tensor({c.kernel[3]}, 33, 0.1, 1.0, false, dtype));
          auto r = evaluate(
              {ops::conv2d_bias(x, k, b, args, activation), ops::bias_add(ops::conv2d(x, k, args), b, activation)});
          const auto fused = r[0].to_vector<double>(), unfused = r[1].to_vector<double>();
          REQUIRE(fused.size() == unfused.size());
          double worst = 0, scale = 0;
          for (std::size_t e = 0; e < fused.size(); ++e) {
            worst = std::max(worst, std::abs(fused[e] - unfused[e]));
            scale = std::max(scale, std::abs(unfused[e]));
          }
          const bool through_onednn =
              onednn && cpu::onednn::built_in() && dtype == DType::float32 && c.x[3] >= 4 && c.groups == 1;
          CHECK(worst <= (through_onednn ? 1e-5 * scale : 0.0));
          if (std::string(activation) == "relu")
            CHECK(std::count(fused.begin(), fused.end(), 0.0) > 0);  // some pre-activations were negative
        }
  cpu::onednn::set_enabled(true);
  for (const char* activation : {"linear", "relu"}) {
    CAPTURE(activation);
    check_gradients({{2, 5, 5, 2}, {3, 3, 2, 3}, {3}}, [&](const Inputs& in) {
      return Inputs{ops::conv2d_bias(in[0], in[1], in[2], {.padding = "same"}, activation)};
    });
  }
  // Under a max pooling the ReLU's mask and the bias's gradient come from the pooled gradient
  // (bias_add_relu_grad's rewrite), the routed gradient through max_pool2d_with_argmax.
  check_gradients({{2, 6, 7, 2}, {3, 3, 2, 3}, {3}}, [&](const Inputs& in) {
    return Inputs{ops::max_pool2d(ops::conv2d_bias(in[0], in[1], in[2], {.padding = "same"}, "relu"))};
  });
  check_gradients({{2, 6, 7, 3}, {3}}, [&](const Inputs& in) {
    return Inputs{ops::max_pool2d(ops::bias_add(in[0], in[1], "relu"), {.pool_size = {3, 3}, .strides = {2, 2}})};
  });
  {
    // The fused bias gradient sums the pooled gradient, the unfused one the routed gradient: the same
    // sum in another order, float32 within rounding; dx bit for bit.
    Graph g;
    auto x = g.placeholder({4, 12, 12, 8}, DType::float32, "x");
    auto k = g.placeholder({3, 3, 8, 16}, DType::float32, "k");
    auto b = g.placeholder({16}, DType::float32, "b");
    const FeedMap feeds{{x, random_tensor({4, 12, 12, 8}, 34, 0.1, 1.0, false, DType::float32)},
                        {k, random_tensor({3, 3, 8, 16}, 35, 0.1, 1.0, false, DType::float32)},
                        {b, random_tensor({16}, 36, 0.1, 1.0, false, DType::float32)}};
    auto y = ops::conv2d_bias(x, k, b, {}, "relu");
    auto pooled = ops::max_pool2d(y);
    auto w = g.constant(random_tensor(pooled.shape(), 37, 0.1, 1.0, false, DType::float32));
    auto grads = gradients(ops::reduce_sum(ops::multiply(pooled, w)), {x, k, b});
    CHECK(grads[2].node()->op() == std::string(op_names::bias_add_relu_grad));
    const Node& pool_grad = *grads[0].node()->inputs()[0].node();  // conv2d_backward_data(dz, ...)
    CHECK(pool_grad.op() == std::string(op_names::max_pool2d_with_argmax_grad));
    auto dz = grads[0].node()->inputs()[0];
    auto r = evaluate({grads[2], dz}, feeds);
    auto unfused = evaluate({ops::bias_add_grad(ops::relu_grad(g.constant(r[1]), y))}, feeds);
    const auto fused_db = r[0].to_vector<double>(), unfused_db = unfused[0].to_vector<double>();
    const auto dz_values = r[1].to_vector<double>();
    double magnitude = 0;  // sum of |dz| per channel bounds the rounding of either order
    for (double v : dz_values) magnitude = std::max(magnitude, std::abs(v));
    for (std::size_t j = 0; j < fused_db.size(); ++j)
      CHECK(std::abs(fused_db[j] - unfused_db[j]) <= 1e-6 * magnitude * static_cast<double>(dz_values.size()));
  }
  Graph g;
  auto x = g.placeholder({2, 5, 5, 2});
  auto k = g.placeholder({3, 3, 2, 3});
  CHECK_THROWS_AS(ops::conv2d_bias(x, k, g.placeholder({4}), {}), ShapeError);
  CHECK_THROWS_AS(ops::conv2d_bias(x, k, g.placeholder({3}), {}, "tanh"), ValueError);
}

TEST_CASE("nn: conv2d gradients") {
  for (const auto& args : {ops::Conv2DArgs{}, ops::Conv2DArgs{.strides = {2, 2}, .padding = "same"},
                           ops::Conv2DArgs{.padding = "same", .dilation_rate = {2, 2}}}) {
    CAPTURE(args.padding);
    check_gradients({{2, 5, 5, 2}, {3, 3, 2, 2}},
                    [&](const Inputs& in) { return Inputs{ops::conv2d(in[0], in[1], args)}; });
  }
  // A window of more than 32 taps: the BLAS path.
  check_gradients({{2, 4, 4, 5}, {3, 3, 5, 2}}, [](const Inputs& in) {
    return Inputs{ops::conv2d(in[0], in[1], {.strides = {2, 1}, .padding = "same"})};
  });
  // The backward ops are differentiable too (gradient penalties, second derivatives).
  ops::Conv2DArgs args{.strides = {2, 1}, .padding = "same"};
  check_gradients({{2, 3, 4, 2}, {3, 3, 3, 2}}, [&](const Inputs& in) {
    auto& g = in[0].graph();
    auto x_shape = g.constant(Tensor::zeros({2, 5, 4, 3}, DType::float64));
    return Inputs{ops::conv2d_backward_data(in[0], in[1], x_shape, args)};
  });
  check_gradients({{2, 5, 4, 3}, {2, 3, 4, 2}}, [&](const Inputs& in) {
    auto& g = in[0].graph();
    auto k_shape = g.constant(Tensor::zeros({3, 3, 3, 2}, DType::float64));
    return Inputs{ops::conv2d_backward_filter(in[0], in[1], k_shape, args)};
  });
}

TEST_CASE("nn: conv2d rejects bad input at build time") {
  Graph g;
  auto x = g.placeholder({-1, 2, 2, 1});
  auto k3 = g.placeholder({3, 3, 1, 1});
  check_throws_naming<ShapeError>([&] { ops::conv2d(x, k3); }, {"conv2d", "(None, 2, 2, 1)", "(3, 3, 1, 1)", "same"});
  // "same" padding makes room for any kernel.
  CHECK(ops::conv2d(x, k3, {.padding = "same"}).shape() == Shape{-1, 2, 2, 1});

  auto x4 = g.placeholder({1, 4, 4, 1});
  check_throws_naming<ShapeError>(
      [&] {
        ops::conv2d(x4, k3, {.dilation_rate = {2, 2}});
      },
      {"conv2d", "(1, 4, 4, 1)", "(3, 3, 1, 1)", "dilation"});

  auto x3 = g.placeholder({1, 5, 5, 3});
  auto k2 = g.placeholder({3, 3, 2, 4});
  check_throws_naming<ShapeError>([&] { ops::conv2d(x3, k2); }, {"conv2d", "(1, 5, 5, 3)", "(3, 3, 2, 4)", "channels"});

  auto k = g.placeholder({3, 3, 3, 4});
  check_throws_naming<ValueError>([&] { ops::conv2d(x3, k, {.padding = "SAME"}); }, {"conv2d", "padding", "SAME"});
  check_throws_naming<ValueError>([&] { ops::conv2d(x3, k, {.strides = {0, 1}}); }, {"conv2d", "strides"});
  check_throws_naming<ShapeError>([&] { ops::conv2d(g.placeholder({5, 5, 3}), k); }, {"conv2d", "rank 4"});
  check_throws_naming<DTypeError>(
      [&] {
        ops::conv2d(x3, g.placeholder({3, 3, 3, 4}, DType::float64));
      },
      {"conv2d", "float64"});
  auto dy = g.placeholder({1, 4, 4, 4});
  check_throws_naming<ShapeError>([&] { ops::conv2d_backward_data(dy, k, x3, {}); },
                                  {"conv2d_backward_data", "(1, 4, 4, 4)", "(1, 3, 3, 4)"});
}

TEST_CASE("nn: grouped conv2d gradients and bad groups") {
  check_gradients({{2, 4, 4, 4}, {3, 3, 2, 4}}, [](const Inputs& in) {
    return Inputs{ops::conv2d(in[0], in[1], {.strides = {2, 1}, .padding = "same", .groups = 2})};
  });
  check_gradients({{1, 5, 4, 3}, {3, 3, 1, 6}}, [](const Inputs& in) {  // depthwise, multiplier 2
    return Inputs{ops::conv2d(in[0], in[1], {.padding = "same", .groups = 3})};
  });
  Graph g;
  auto x = g.placeholder({1, 5, 5, 6});
  check_throws_naming<ShapeError>([&] { ops::conv2d(x, g.placeholder({3, 3, 2, 4}), {.groups = 2}); },
                                  {"conv2d", "(1, 5, 5, 6)", "(3, 3, 2, 4)", "2 group(s)", "expects 4"});
  check_throws_naming<ShapeError>([&] { ops::conv2d(x, g.placeholder({3, 3, 2, 5}), {.groups = 3}); },
                                  {"conv2d", "3 groups", "5 filters"});
  check_throws_naming<ValueError>([&] { ops::conv2d(x, g.placeholder({3, 3, 6, 4}), {.groups = 0}); },
                                  {"groups", "at least 1"});
}

namespace {

// Keras 3's deconv_output_length for one axis (output_padding -1: None).
std::int64_t keras_deconv_length(std::int64_t in, std::int64_t k, const std::string& padding, std::int64_t op,
                                 std::int64_t stride, std::int64_t dilation) {
  k = k + (k - 1) * (dilation - 1);
  if (op < 0) return padding == "valid" ? in * stride + std::max<std::int64_t>(k - stride, 0) : in * stride;
  const std::int64_t pad = padding == "same" ? k / 2 : 0;
  return (in - 1) * stride + k - 2 * pad + op;
}

}  // namespace

TEST_CASE("nn: conv2d_transpose is the data gradient of the convolution back to Keras's output size") {
  struct Case {
    Shape x, kernel;  // kernel (kh, kw, filters, in)
    ops::Conv2DArgs args;
    Ints output_padding;
  };
  const Case cases[] = {
      {{2, 3, 4, 3}, {3, 3, 2, 3}, {.strides = {2, 2}, .padding = "same"}, {}},
      {{2, 3, 4, 3}, {3, 3, 2, 3}, {.strides = {2, 2}, .padding = "valid"}, {}},
      {{1, 4, 3, 2}, {2, 2, 5, 2}, {.strides = {2, 2}, .padding = "valid"}, {}},
      {{1, 4, 3, 2}, {3, 3, 4, 2}, {.strides = {3, 2}, .padding = "same"}, {1, 0}},
      {{2, 3, 3, 2}, {3, 3, 3, 2}, {.strides = {2, 2}, .padding = "valid"}, {1, 1}},
      {{1, 5, 4, 2}, {3, 3, 2, 2}, {.padding = "same", .dilation_rate = {2, 2}}, {}},
      {{1, 3, 3, 1}, {4, 4, 2, 1}, {.strides = {1, 1}, .padding = "valid"}, {}},
  };
  std::uint64_t seed = 40;
  for (const auto& c : cases) {
    CAPTURE(c.x.to_string());
    CAPTURE(c.kernel.to_string());
    CAPTURE(c.args.padding);
    Shape out{c.x[0], 0, 0, c.kernel[2]};
    for (int a = 0; a < 2; ++a)
      out[a + 1] = keras_deconv_length(c.x[a + 1], c.kernel[a], c.args.padding,
                                       c.output_padding.empty() ? -1 : c.output_padding[a], c.args.strides[a],
                                       c.args.dilation_rate[a]);
    Tensor xt = random_tensor(c.x, seed++, 0.1, 1.0, false, DType::float64);
    Tensor kt = random_tensor(c.kernel, seed++, 0.1, 1.0, false, DType::float64);
    // The reference: the data gradient of conv2d(z, kernel) for z of the output's size, with x as dy.
    ConvRef ref = conv_reference(Tensor::zeros(out, DType::float64), kt, xt.to_vector<double>(), c.args);
    REQUIRE(ref.y_shape == c.x);
    Graph g;
    auto x = g.placeholder({-1, c.x[1], c.x[2], c.x[3]}, DType::float64);
    auto k = g.placeholder(c.kernel, DType::float64);
    auto y = ops::conv2d_transpose(x, k, c.args, c.output_padding);
    CHECK(y.shape() == Shape{-1, out[1], out[2], out[3]});
    auto r = evaluate({y}, {{x, xt}, {k, kt}});
    CHECK(r[0].shape() == out);
    check_close(r[0], ref.dx, 1e-10, 1e-10);
  }
  check_gradients({{2, 3, 2, 3}, {3, 3, 2, 3}}, [](const Inputs& in) {
    return Inputs{ops::conv2d_transpose(in[0], in[1], {.strides = {2, 2}, .padding = "same"}, {1, 0})};
  });
  check_gradients({{1, 2, 3, 2}, {2, 3, 3, 2}}, [](const Inputs& in) {
    return Inputs{ops::conv2d_transpose(in[0], in[1], {.strides = {2, 1}, .padding = "valid"})};
  });
}

TEST_CASE("nn: conv2d_transpose rejects bad input at build time") {
  Graph g;
  auto x = g.placeholder({-1, 4, 4, 3});
  check_throws_naming<ShapeError>([&] { ops::conv2d_transpose(x, g.placeholder({3, 3, 3, 2})); },
                                  {"conv2d_transpose", "3 channels", "(3, 3, 3, 2)", "(kernel_h, kernel_w, filters"});
  auto k = g.placeholder({3, 3, 2, 3});
  check_throws_naming<ValueError>([&] { ops::conv2d_transpose(x, k, {.strides = {2, 2}}, {2, 0}); },
                                  {"conv2d_transpose", "output_padding 2"});
  check_throws_naming<ValueError>([&] { ops::conv2d_transpose(x, k, {.groups = 3}); }, {"groups"});
}
