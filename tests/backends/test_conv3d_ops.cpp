// conv3d (grouped too), its backward ops, conv3d_transpose and 3-D max/avg pooling: values against
// direct loops, finite-difference gradients, and bad input at build time.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "tower/core/autodiff.h"
#include "tower/core/executor.h"
#include "tower/core/ops.h"
#include "tests/backends/window_reference.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::check_gradients;
using tower::testing::check_throws_naming;
using tower::testing::evaluate;
using tower::testing::random_tensor;
using Inputs = std::vector<SymbolicTensor>;
using Ints = std::vector<std::int64_t>;

namespace {

// TF's window geometry of 3 axes, computed independently of the library.
struct Geo3 {
  std::int64_t n, c, in[3], k[3], s[3], d[3], out[3], pad[3];
};

Geo3 geometry3(const Shape& x, const Ints& k, const Ints& strides, const Ints& dilation, const std::string& padding) {
  Geo3 g{x[0], x[4], {x[1], x[2], x[3]}, {k[0], k[1], k[2]}, {strides[0], strides[1], strides[2]},
         {dilation[0], dilation[1], dilation[2]}, {}, {}};
  for (int a = 0; a < 3; ++a) {
    const std::int64_t span = (g.k[a] - 1) * g.d[a] + 1;
    if (padding == "same") {
      g.out[a] = (g.in[a] + g.s[a] - 1) / g.s[a];
      g.pad[a] = std::max<std::int64_t>((g.out[a] - 1) * g.s[a] + span - g.in[a], 0) / 2;
    } else {
      g.out[a] = (g.in[a] - span) / g.s[a] + 1;
      g.pad[a] = 0;
    }
  }
  return g;
}

// Calls f(n, output voxel index, tap index (i * kh + j) * kw + l, input voxel index) for every tap inside x.
template <typename F>
void for_each_tap3(const Geo3& g, F&& f) {
  for (std::int64_t n = 0; n < g.n; ++n)
    for (std::int64_t oz = 0; oz < g.out[0]; ++oz)
      for (std::int64_t oy = 0; oy < g.out[1]; ++oy)
        for (std::int64_t ox = 0; ox < g.out[2]; ++ox)
          for (std::int64_t i = 0; i < g.k[0]; ++i)
            for (std::int64_t j = 0; j < g.k[1]; ++j)
              for (std::int64_t l = 0; l < g.k[2]; ++l) {
                const std::int64_t iz = oz * g.s[0] - g.pad[0] + i * g.d[0], iy = oy * g.s[1] - g.pad[1] + j * g.d[1],
                                   ix = ox * g.s[2] - g.pad[2] + l * g.d[2];
                if (iz < 0 || iz >= g.in[0] || iy < 0 || iy >= g.in[1] || ix < 0 || ix >= g.in[2]) continue;
                f(n, ((n * g.out[0] + oz) * g.out[1] + oy) * g.out[2] + ox, (i * g.k[1] + j) * g.k[2] + l,
                  ((n * g.in[0] + iz) * g.in[1] + iy) * g.in[2] + ix);
              }
}

struct ConvRef {
  std::vector<double> y, dx, dk;
  Shape y_shape;
};

// Direct-loop conv3d (with groups) and its two backward products for dy (n, od, oh, ow, f).
ConvRef conv_reference(const Tensor& x, const Tensor& k, const std::vector<double>& dy, const ops::Conv3DArgs& args) {
  const Shape& ks = k.shape();
  const Geo3 g = geometry3(x.shape(), {ks[0], ks[1], ks[2]}, args.strides, args.dilation_rate, args.padding);
  const std::int64_t c = g.c, cg = ks[3], f = ks[4], fg = f / args.groups;
  auto xv = x.to_vector<double>(), kv = k.to_vector<double>();
  ConvRef r;
  r.y_shape = Shape{g.n, g.out[0], g.out[1], g.out[2], f};
  r.y.assign(static_cast<std::size_t>(r.y_shape.num_elements()), 0.0);
  r.dx.assign(xv.size(), 0.0);
  r.dk.assign(kv.size(), 0.0);
  for_each_tap3(g, [&](auto, auto o, auto t, auto in) {
    for (std::int64_t of = 0; of < f; ++of)
      for (std::int64_t ci = 0; ci < cg; ++ci) {
        const auto yi = static_cast<std::size_t>(o * f + of);
        const auto xi = static_cast<std::size_t>(in * c + of / fg * cg + ci);
        const auto ki = static_cast<std::size_t>((t * cg + ci) * f + of);
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
  ops::Conv3DArgs args;
};

const std::vector<ConvCase> kConvCases = {
    {{2, 4, 5, 3, 2}, {2, 3, 2, 2, 3}, {}},
    {{2, 5, 4, 5, 3}, {3, 3, 3, 3, 2}, {.strides = {2, 1, 2}, .padding = "same"}},
    {{1, 5, 6, 5, 2}, {3, 2, 3, 2, 4}, {.padding = "same", .dilation_rate = {2, 1, 2}}},
    {{1, 6, 5, 6, 2}, {2, 2, 2, 2, 3}, {.padding = "valid", .dilation_rate = {2, 2, 1}}},
    {{2, 3, 4, 4, 5}, {1, 1, 1, 5, 3}, {}},
    {{2, 4, 4, 3, 4}, {3, 2, 2, 2, 6}, {.strides = {1, 2, 1}, .padding = "same", .groups = 2}},
    {{1, 4, 3, 4, 3}, {2, 2, 3, 1, 6}, {.padding = "valid", .groups = 3}},
    {{2, 3, 3, 3, 1}, {3, 3, 3, 1, 37}, {.padding = "same"}},  // 27 taps, 37 filters
};

}  // namespace

TEST_CASE("nn: conv3d forward and backward ops match direct loops") {
  for (DType dtype : {DType::float64, DType::float32}) {
    const double tol = dtype == DType::float64 ? 1e-10 : 1e-4;
    std::uint64_t seed = 71;
    for (const auto& cc : kConvCases) {
      CAPTURE(cc.x.to_string());
      CAPTURE(cc.kernel.to_string());
      CAPTURE(cc.args.padding);
      Tensor xt = random_tensor(cc.x, seed++, 0.1, 1.0, false, dtype);
      Tensor kt = random_tensor(cc.kernel, seed++, 0.1, 1.0, false, dtype);
      const Shape y_shape = conv_reference(xt, kt, {}, cc.args).y_shape;
      Tensor dyt = random_tensor(y_shape, seed++, 0.1, 1.0, false, dtype);
      ConvRef ref = conv_reference(xt, kt, dyt.to_vector<double>(), cc.args);
      Graph g;
      auto x = g.placeholder(cc.x, dtype);
      auto k = g.placeholder(cc.kernel, dtype);
      auto dy = g.placeholder(y_shape, dtype);
      auto y = ops::conv3d(x, k, cc.args);
      CHECK(y.shape() == y_shape);
      auto r =
          evaluate({y, ops::conv3d_backward_data(dy, k, x, cc.args), ops::conv3d_backward_filter(x, dy, k, cc.args)},
                   {{x, xt}, {k, kt}, {dy, dyt}});
      check_close(r[0], ref.y, tol, tol);
      CHECK(r[1].shape() == cc.x);
      check_close(r[1], ref.dx, tol, tol);
      CHECK(r[2].shape() == cc.kernel);
      check_close(r[2], ref.dk, tol, tol);
    }
  }
}

TEST_CASE("nn: conv3d on a larger batch splits across threads and blocks like one pass") {
  const Shape xs{12, 6, 7, 6, 4}, ks{3, 3, 3, 4, 8};
  const ops::Conv3DArgs args{.padding = "same"};
  Tensor xt = random_tensor(xs, 3, 0.1, 1.0, false, DType::float32);
  Tensor kt = random_tensor(ks, 4, 0.1, 1.0, false, DType::float32);
  const Shape y_shape = conv_reference(xt, kt, {}, args).y_shape;
  Tensor dyt = random_tensor(y_shape, 5, 0.1, 1.0, false, DType::float32);
  ConvRef ref = conv_reference(xt, kt, dyt.to_vector<double>(), args);
  Graph g;
  auto x = g.placeholder({-1, 6, 7, 6, 4});
  auto k = g.placeholder(ks);
  auto dy = g.placeholder({-1, 6, 7, 6, 8});
  auto r = evaluate({ops::conv3d(x, k, args), ops::conv3d_backward_data(dy, k, x, args),
                     ops::conv3d_backward_filter(x, dy, k, args)},
                    {{x, xt}, {k, kt}, {dy, dyt}});
  check_close(r[0], ref.y, 1e-4, 1e-4);
  check_close(r[1], ref.dx, 1e-4, 1e-4);
  check_close(r[2], ref.dk, 1e-4, 1e-2);  // sums of thousands of float32 products
}

TEST_CASE("nn: conv3d gradients") {
  for (const auto& args : {ops::Conv3DArgs{}, ops::Conv3DArgs{.strides = {2, 1, 2}, .padding = "same"},
                           ops::Conv3DArgs{.padding = "same", .dilation_rate = {1, 2, 2}},
                           ops::Conv3DArgs{.strides = {1, 2, 1}, .padding = "same", .groups = 2}}) {
    CAPTURE(args.padding);
    check_gradients({{2, 3, 4, 3, 2}, {2, 3, 2, 2 / args.groups, 2}},
                    [&](const Inputs& in) { return Inputs{ops::conv3d(in[0], in[1], args)}; });
  }
  // The backward ops are differentiable too.
  ops::Conv3DArgs args{.strides = {2, 1, 1}, .padding = "same"};
  check_gradients({{1, 2, 3, 3, 2}, {2, 2, 2, 3, 2}}, [&](const Inputs& in) {
    auto x_shape = in[0].graph().constant(Tensor::zeros({1, 4, 3, 3, 3}, DType::float64));
    return Inputs{ops::conv3d_backward_data(in[0], in[1], x_shape, args)};
  });
  check_gradients({{1, 4, 3, 3, 3}, {1, 2, 3, 3, 2}}, [&](const Inputs& in) {
    auto k_shape = in[0].graph().constant(Tensor::zeros({2, 2, 2, 3, 2}, DType::float64));
    return Inputs{ops::conv3d_backward_filter(in[0], in[1], k_shape, args)};
  });
}

TEST_CASE("nn: conv3d_transpose is the data gradient of the convolution back to Keras's output size") {
  struct Case {
    Shape x, kernel;  // kernel (kd, kh, kw, filters, in)
    ops::Conv3DArgs args;
    Ints output_padding, out;  // out: Keras's (d, h, w)
  };
  const Case cases[] = {
      // keras.layers.Conv3DTranspose(2, 3, strides=2, padding="same") on (2, 3, 2) -> (4, 6, 4).
      {{2, 2, 3, 2, 3}, {3, 3, 3, 2, 3}, {.strides = {2, 2, 2}, .padding = "same"}, {}, {4, 6, 4}},
      // padding="valid": in * stride + max(k - stride, 0).
      {{1, 2, 3, 2, 2}, {3, 2, 2, 4, 2}, {.strides = {2, 1, 2}, .padding = "valid"}, {}, {5, 4, 4}},
      // output_padding (1, 0, 1), "same": (in - 1) * stride + k - 2 * (k / 2) + output_padding.
      {{1, 2, 2, 2, 2}, {3, 3, 3, 2, 2}, {.strides = {2, 2, 2}, .padding = "same"}, {1, 0, 1}, {4, 3, 4}},
      {{1, 3, 3, 2, 1}, {3, 3, 3, 2, 1}, {.padding = "same", .dilation_rate = {2, 1, 2}}, {}, {3, 3, 2}},
  };
  std::uint64_t seed = 90;
  for (const auto& c : cases) {
    CAPTURE(c.x.to_string());
    const Shape out{c.x[0], c.out[0], c.out[1], c.out[2], c.kernel[3]};
    Tensor xt = random_tensor(c.x, seed++, 0.1, 1.0, false, DType::float64);
    Tensor kt = random_tensor(c.kernel, seed++, 0.1, 1.0, false, DType::float64);
    ConvRef ref = conv_reference(Tensor::zeros(out, DType::float64), kt, xt.to_vector<double>(), c.args);
    REQUIRE(ref.y_shape == c.x);
    Graph g;
    auto x = g.placeholder({-1, c.x[1], c.x[2], c.x[3], c.x[4]}, DType::float64);
    auto k = g.placeholder(c.kernel, DType::float64);
    auto y = ops::conv3d_transpose(x, k, c.args, c.output_padding);
    CHECK(y.shape() == Shape{-1, out[1], out[2], out[3], out[4]});
    auto r = evaluate({y}, {{x, xt}, {k, kt}});
    CHECK(r[0].shape() == out);
    check_close(r[0], ref.dx, 1e-10, 1e-10);
  }
  check_gradients({{1, 2, 2, 3, 2}, {3, 3, 3, 2, 2}}, [](const Inputs& in) {
    return Inputs{ops::conv3d_transpose(in[0], in[1], {.strides = {2, 1, 2}, .padding = "same"}, {1, 0, 0})};
  });
}

TEST_CASE("nn: conv3d and conv3d_transpose reject bad input at build time") {
  Graph g;
  auto x = g.placeholder({-1, 2, 4, 4, 1});
  auto k3 = g.placeholder({3, 3, 3, 1, 1});
  check_throws_naming<ShapeError>([&] { ops::conv3d(x, k3); }, {"conv3d", "depth", "same"});
  CHECK(ops::conv3d(x, k3, {.padding = "same"}).shape() == Shape{-1, 2, 4, 4, 1});
  auto x3 = g.placeholder({1, 5, 5, 5, 3});
  check_throws_naming<ShapeError>([&] { ops::conv3d(x3, g.placeholder({3, 3, 3, 2, 4})); },
                                  {"conv3d", "(1, 5, 5, 5, 3)", "channels"});
  check_throws_naming<ShapeError>([&] { ops::conv3d(x3, g.placeholder({3, 3, 3, 1, 4}), {.groups = 3}); },
                                  {"conv3d", "3 groups", "4 filters"});
  auto k = g.placeholder({3, 3, 3, 3, 4});
  check_throws_naming<ValueError>([&] { ops::conv3d(x3, k, {.strides = {1, 1}}); }, {"conv3d", "strides"});
  check_throws_naming<ShapeError>([&] { ops::conv3d(g.placeholder({1, 5, 5, 3}), k); }, {"conv3d", "rank 5"});
  check_throws_naming<ShapeError>([&] { ops::conv3d_backward_data(g.placeholder({1, 4, 4, 4, 4}), k, x3, {}); },
                                  {"conv3d_backward_data", "(1, 4, 4, 4, 4)", "(1, 3, 3, 3, 4)"});
  check_throws_naming<ShapeError>([&] { ops::conv3d_transpose(x3, g.placeholder({3, 3, 3, 3, 2})); },
                                  {"conv3d_transpose", "3 channels", "(kernel_d, kernel_h, kernel_w, filters"});
  check_throws_naming<ValueError>(
      [&] { ops::conv3d_transpose(x3, g.placeholder({3, 3, 3, 2, 3}), {.strides = {2, 2, 2}}, {0, 2, 0}); },
      {"conv3d_transpose", "output_padding 2"});
}

namespace {

struct PoolRef {
  std::vector<double> y, dx;
  Shape y_shape;
};

// Direct-loop max/avg pooling over the window's part inside x, and the gradient for dy (max: to the
// first maximum in (d, h, w) order).
PoolRef pool_reference(const Tensor& x, const std::vector<double>& dy, const ops::Pool3DArgs& args, bool max) {
  const Ints strides = args.strides.empty() ? args.pool_size : args.strides;
  const Geo3 g = geometry3(x.shape(), args.pool_size, strides, {1, 1, 1}, args.padding);
  const std::int64_t c = g.c;
  auto xv = x.to_vector<double>();
  PoolRef r;
  r.y_shape = Shape{g.n, g.out[0], g.out[1], g.out[2], c};
  const auto outputs = static_cast<std::size_t>(r.y_shape.num_elements());
  r.y.assign(outputs, max ? -std::numeric_limits<double>::infinity() : 0.0);
  std::vector<double> count(outputs / static_cast<std::size_t>(c), 0.0);
  std::vector<std::int64_t> first(outputs, -1);
  r.dx.assign(xv.size(), 0.0);
  for_each_tap3(g, [&](auto, auto o, auto, auto in) {
    count[static_cast<std::size_t>(o)] += 1;
    for (std::int64_t e = 0; e < c; ++e) {
      const auto yi = static_cast<std::size_t>(o * c + e), xi = static_cast<std::size_t>(in * c + e);
      if (!max) r.y[yi] += xv[xi];
      else if (xv[xi] > r.y[yi]) r.y[yi] = xv[xi], first[yi] = static_cast<std::int64_t>(xi);
    }
  });
  for (std::size_t i = 0; i < outputs; ++i)
    if (!max) r.y[i] /= count[i / static_cast<std::size_t>(c)];
  if (dy.empty()) return r;
  for_each_tap3(g, [&](auto, auto o, auto, auto in) {
    for (std::int64_t e = 0; e < c; ++e) {
      const auto yi = static_cast<std::size_t>(o * c + e), xi = static_cast<std::size_t>(in * c + e);
      if (!max) r.dx[xi] += dy[yi] / count[static_cast<std::size_t>(o)];
    }
  });
  if (max)
    for (std::size_t i = 0; i < outputs; ++i) r.dx[static_cast<std::size_t>(first[i])] += dy[i];
  return r;
}

}  // namespace

TEST_CASE("nn: max_pool3d and avg_pool3d and their gradients match direct loops") {
  const std::vector<std::pair<Shape, ops::Pool3DArgs>> cases = {
      {{2, 4, 4, 4, 3}, {}},
      {{2, 5, 4, 3, 2}, {.pool_size = {2, 2, 2}, .padding = "same"}},
      {{1, 5, 6, 5, 3}, {.pool_size = {3, 2, 3}, .strides = {2, 2, 1}, .padding = "same"}},
      {{2, 5, 5, 4, 2}, {.pool_size = {3, 3, 2}, .strides = {1, 2, 2}, .padding = "valid"}},
  };
  std::uint64_t seed = 120;
  for (bool max : {true, false})
    for (const auto& [shape, args] : cases) {
      CAPTURE(shape.to_string());
      CAPTURE(max);
      Tensor xt = random_tensor(shape, seed++, 0.1, 1.0, false, DType::float64);
      const Shape y_shape = pool_reference(xt, {}, args, max).y_shape;
      Tensor dyt = random_tensor(y_shape, seed++, 0.1, 1.0, false, DType::float64);
      PoolRef ref = pool_reference(xt, dyt.to_vector<double>(), args, max);
      Graph g;
      auto x = g.placeholder(shape, DType::float64);
      auto dy = g.placeholder(y_shape, DType::float64);
      auto y = max ? ops::max_pool3d(x, args) : ops::avg_pool3d(x, args);
      CHECK(y.shape() == y_shape);
      auto dx = max ? ops::max_pool3d_grad(dy, x, y, args) : ops::avg_pool3d_grad(dy, x, args);
      auto r = evaluate({y, dx}, {{x, xt}, {dy, dyt}});
      check_close(r[0], ref.y, 1e-12, 1e-12);
      check_close(r[1], ref.dx, 1e-12, 1e-12);
      check_gradients({shape}, [&](const Inputs& in) {
        return Inputs{max ? ops::max_pool3d(in[0], args) : ops::avg_pool3d(in[0], args)};
      });
    }
  Graph g;
  auto x = g.placeholder({1, 1, 4, 4, 2});
  check_throws_naming<ShapeError>([&] { ops::max_pool3d(x); }, {"max_pool3d", "depth", "same"});
  check_throws_naming<ValueError>([&] { ops::avg_pool3d(x, {.pool_size = {2, 2}}); }, {"avg_pool3d", "pool_size"});
  check_throws_naming<ShapeError>([&] { ops::avg_pool3d(g.placeholder({1, 4, 4, 2})); }, {"avg_pool3d", "rank 5"});
}
