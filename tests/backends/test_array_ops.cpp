// Array ops (reshape, reshape_like, reverse, transpose, concat, slice, split, pad, one_hot,
// gather): build-time shapes with unknown dims, forward values against naive references, finite-difference gradients, errors.
#include <doctest/doctest.h>

#include <numeric>

#include "tower/core/autodiff.h"
#include "tower/core/ops.h"
#include "tower/core/ops/shape_utils.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::contains;
using tower::testing::message_of;
using tower::testing::check_gradients;
using tower::testing::evaluate;
using tower::testing::random_tensor;
using Inputs = std::vector<SymbolicTensor>;
using Ints = std::vector<std::int64_t>;

namespace {

// 0, 1, 2, ... as a tensor of `shape`.
Tensor iota(const Shape& shape, DType dtype = DType::float64) {
  std::vector<double> v(static_cast<std::size_t>(shape.num_elements()));
  std::iota(v.begin(), v.end(), 0.0);
  Tensor t = Tensor::from_vector(shape, v);
  if (dtype == DType::float64) return t;
  Graph g;
  return evaluate({ops::cast(g.constant(t), dtype)})[0];
}

// Row-major flat index of `idx` in `dims`.
std::int64_t flat(const Ints& idx, const Ints& dims) {
  std::int64_t f = 0;
  for (std::size_t i = 0; i < dims.size(); ++i) f = f * dims[i] + idx[i];
  return f;
}

// Calls fn(idx) for every multi-index of `dims` in row-major order.
template <typename F>
void for_each_index(const Ints& dims, F&& fn) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  Ints idx(dims.size(), 0);
  for (std::int64_t k = 0; k < n; ++k) {
    fn(idx);
    for (std::size_t i = dims.size(); i-- > 0;) {
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
}


}  // namespace

TEST_CASE("array: reshape infers -1 and keeps the unknown batch") {
  Graph g;
  auto images = g.placeholder({-1, 28, 28, 1});
  auto flat_images = ops::reshape(images, {-1, 784});
  CHECK(flat_images.shape() == Shape{-1, 784});
  CHECK(ops::reshape(images, {-1, 28, 28}).shape() == Shape{-1, 28, 28});

  auto x = g.constant(iota({2, 3, 4}));
  auto y = ops::reshape(x, {4, -1});
  CHECK(y.shape() == Shape{4, 6});
  CHECK(ops::reshape(x, {24}).shape() == Shape{24});

  Tensor batch = iota({3, 28, 28, 1}, DType::float32);
  auto r = evaluate({flat_images, y, ops::reshape(ops::reshape(x, {-1}), {2, 12})}, {{images, batch}});
  CHECK(r[0].shape() == Shape{3, 784});
  check_close(r[0], batch.to_vector<double>());
  CHECK(r[1].shape() == Shape{4, 6});
  check_close(r[1], iota({24}).to_vector<double>());
  CHECK(r[2].shape() == Shape{2, 12});
}

TEST_CASE("array: reshape errors name the op and the shapes") {
  Graph g;
  auto x = g.placeholder({2, 3});
  auto msg = message_of<ShapeError>([&] { ops::reshape(x, {4, 2}); });
  CHECK(contains(msg, "reshape"));
  CHECK(contains(msg, "(2, 3)"));
  CHECK(contains(msg, "(4, 2)"));
  CHECK_THROWS_AS(ops::reshape(x, {-1, -1}), ShapeError);
  CHECK_THROWS_AS(ops::reshape(x, {4, -1}), ShapeError);
  CHECK_THROWS_AS(ops::reshape(x, {-2, 3}), ShapeError);
}

TEST_CASE("array: reshape gradients, also with several unknown dims") {
  check_gradients({{2, 3, 4}}, [](const Inputs& in) -> Inputs { return {ops::reshape(in[0], {4, -1})}; });
  check_gradients({{2, 3, 4}}, [](const Inputs& in) -> Inputs { return {ops::reshape(in[0], {3, 2, 2, 2})}; });

  Graph g;
  auto x = g.placeholder({-1, -1, 3}, DType::float64);
  auto y = ops::reshape(x, {-1, 3});
  auto gy = g.placeholder({-1, 3}, DType::float64);
  auto dx = gradients(y, {x}, gy)[0];
  CHECK(dx.shape() == Shape{-1, -1, 3});
  Tensor gv = random_tensor({8, 3}, 3);
  auto r = evaluate({dx}, {{x, random_tensor({2, 4, 3}, 4)}, {gy, gv}});
  CHECK(r[0].shape() == Shape{2, 4, 3});
  check_close(r[0], gv.to_vector<double>());
}

TEST_CASE("array: reshape_like takes like's leading dims at plan time (unknown batch and time)") {
  Graph g;
  auto x = g.placeholder({-1, -1, 3});                  // (batch, time, features)
  auto rows = ops::reshape(x, {-1, 3});                 // (batch·time, 3)
  auto projected = ops::matmul(rows, g.constant(iota({3, 2}, DType::float32)));  // (batch·time, 2)
  auto back = ops::reshape_like(projected, x, 2, {2});  // (batch, time, 2)
  CHECK(back.shape() == Shape{-1, -1, 2});
  CHECK(ops::reshape_like(rows, x).shape() == Shape{-1, -1, 3});
  CHECK(ops::reshape_like(rows, x, 1, {-1}).shape() == Shape{-1, -1});
  for (std::int64_t time : {5, 9}) {
    CAPTURE(time);
    Tensor xv = iota({2, time, 3}, DType::float32);
    auto r = evaluate({back, ops::reshape_like(rows, x, 1, {-1}), projected}, {{x, xv}});
    CHECK(r[0].shape() == Shape{2, time, 2});
    check_close(r[0], r[2].to_vector<double>());
    CHECK(r[1].shape() == Shape{2, time * 3});
    check_close(r[1], xv.to_vector<double>());
  }
  // Known shapes are inferred at build time, tail's -1 included.
  auto k = g.constant(iota({2, 3, 4}));
  CHECK(ops::reshape_like(k, g.placeholder({2, 7}), 1, {-1, 2}).shape() == Shape{2, 6, 2});
  CHECK(ops::reshape_like(k, g.placeholder({4, 6})).shape() == Shape{4, 6});
}

TEST_CASE("array: reshape_like errors and gradients") {
  Graph g;
  auto x = g.placeholder({2, 3, 4});
  auto msg = message_of<ShapeError>([&] { ops::reshape_like(x, g.placeholder({5, 2}), 1, {3}); });
  CHECK(contains(msg, "reshape_like"));
  CHECK(contains(msg, "(2, 3, 4)"));
  CHECK(contains(msg, "(5, 3)"));
  CHECK_THROWS_AS(ops::reshape_like(x, g.placeholder({5, 2}), 1, {-1}), ShapeError);     // 24 / 5
  CHECK_THROWS_AS(ops::reshape_like(x, g.placeholder({2, 2}), 3), ShapeError);           // keep > rank
  CHECK_THROWS_AS(ops::reshape_like(x, g.placeholder({2, 2}), 1, {-1, -1}), ShapeError); // two -1
  CHECK_THROWS_AS(ops::reshape_like(x, g.placeholder({2, 2}), 1, {-3}), ShapeError);
  // Unknown at build time, wrong at plan time: the plan's shape inference refuses it.
  auto u = g.placeholder({-1, 4});
  auto bad = ops::reshape_like(u, g.placeholder({-1, 5}), 1, {3});
  CHECK_THROWS_AS(evaluate({bad}, {{u, iota({6, 4})}}), ShapeError);

  check_gradients({{2, 3, 4}}, [](const Inputs& in) -> Inputs {
    return {ops::reshape_like(in[0], in[0].graph().constant(iota({3, 2})), 1, {4, -1})};
  });
  // With unknown dims the gradient is dy viewed back as x, at plan time.
  auto p = g.placeholder({-1, -1, 3}, DType::float64);
  auto y = ops::reshape_like(ops::reshape(p, {-1, 3}), p, 2, {3});
  auto gy = g.placeholder({-1, -1, 3}, DType::float64);
  auto dx = gradients(y, {p}, gy)[0];
  Tensor gv = random_tensor({2, 7, 3}, 5);
  auto r = evaluate({dx}, {{p, random_tensor({2, 7, 3}, 6)}, {gy, gv}});
  CHECK(r[0].shape() == Shape{2, 7, 3});
  check_close(r[0], gv.to_vector<double>());
}

TEST_CASE("array: reverse along any axis, with a run-time length, and its gradient") {
  Tensor xv = iota({2, 3, 4});
  for (int axis : {0, 1, 2, -1}) {
    CAPTURE(axis);
    Graph g;
    auto r = evaluate({ops::reverse(g.constant(xv), axis)})[0];
    const int a = axis < 0 ? axis + 3 : axis;
    CHECK(r.shape() == xv.shape());
    std::vector<double> want(24), xs = xv.to_vector<double>();
    for_each_index({2, 3, 4}, [&](const Ints& idx) {
      Ints from = idx;
      from[static_cast<std::size_t>(a)] = xv.shape()[a] - 1 - idx[static_cast<std::size_t>(a)];
      want[static_cast<std::size_t>(flat(idx, {2, 3, 4}))] = xs[static_cast<std::size_t>(flat(from, {2, 3, 4}))];
    });
    check_close(r, want);
    check_gradients({{2, 3, 4}}, [&](const Inputs& in) -> Inputs { return {ops::reverse(in[0], axis)}; });
  }
  Graph g;
  auto seq = g.placeholder({-1, -1}, DType::int32);  // (time, batch), unknown both
  auto rev = ops::reverse(seq, 0);
  CHECK(rev.shape() == Shape{-1, -1});
  for (std::int64_t time : {1, 4}) {
    std::vector<std::int32_t> v(static_cast<std::size_t>(time * 2));
    std::iota(v.begin(), v.end(), 0);
    auto r = evaluate({rev}, {{seq, Tensor::from_vector<std::int32_t>({time, 2}, v)}})[0].to_vector<std::int32_t>();
    for (std::int64_t t = 0; t < time; ++t)
      for (int b = 0; b < 2; ++b)
        CHECK(r[static_cast<std::size_t>(t * 2 + b)] == v[static_cast<std::size_t>((time - 1 - t) * 2 + b)]);
  }
  CHECK(evaluate({rev}, {{seq, Tensor::zeros({0, 2}, DType::int32)}})[0].shape() == Shape{0, 2});
  CHECK_THROWS_AS(ops::reverse(g.placeholder({2, 3}), 2), ShapeError);
  CHECK_THROWS_AS(ops::reverse(g.constant(Tensor::from_vector<double>({}, {1.0})), 0), ShapeError);
}

TEST_CASE("array: transpose forward against a naive reference, every dtype") {
  const Ints dims{6, 7, 5, 3};
  for (Ints perm : {Ints{0, 1, 2, 3}, Ints{3, 2, 1, 0}, Ints{2, 0, 3, 1}, Ints{1, 0, 2, 3}, Ints{0, 1, 3, 2}}) {
    for (DType dtype : {DType::float32, DType::float64, DType::int32, DType::int64, DType::uint8}) {
      CAPTURE(dtype_name(dtype));
      Graph g;
      Tensor xv = iota(Shape(dims), dtype == DType::uint8 ? DType::int32 : dtype);
      if (dtype == DType::uint8) xv = evaluate({ops::cast(g.constant(xv), DType::uint8)})[0];
      auto y = evaluate({ops::transpose(g.constant(xv), perm)})[0];
      Ints out_dims;
      for (auto p : perm) out_dims.push_back(dims[static_cast<std::size_t>(p)]);
      CHECK(y.shape() == Shape(out_dims));
      auto xs = xv.to_vector<double>();
      std::vector<double> expected(xs.size());
      for_each_index(dims, [&](const Ints& idx) {
        Ints oi;
        for (auto p : perm) oi.push_back(idx[static_cast<std::size_t>(p)]);
        expected[static_cast<std::size_t>(flat(oi, out_dims))] = xs[static_cast<std::size_t>(flat(idx, dims))];
      });
      check_close(y, expected, 0, 0);
    }
  }
  // Large enough to be split between threads.
  Graph g;
  Tensor big = iota({64, 130, 9});
  auto y = evaluate({ops::transpose(g.constant(big), {2, 0, 1})})[0];
  auto xs = big.to_vector<double>(), ys = y.to_vector<double>();
  bool ok = true;
  for_each_index({64, 130, 9}, [&](const Ints& i) {
    ok = ok && ys[static_cast<std::size_t>(flat({i[2], i[0], i[1]}, {9, 64, 130}))] ==
                   xs[static_cast<std::size_t>(flat(i, {64, 130, 9}))];
  });
  CHECK(ok);
  // Empty perm reverses the axes, as NumPy does.
  CHECK(ops::transpose(g.placeholder({-1, 3, 5}), {}).shape() == Shape{5, 3, -1});
}

TEST_CASE("array: transpose errors and gradients") {
  Graph g;
  auto x = g.placeholder({2, 3, 4});
  auto msg = message_of<ShapeError>([&] { ops::transpose(x, {0, 0, 1}); });
  CHECK(contains(msg, "transpose"));
  CHECK(contains(msg, "(2, 3, 4)"));
  CHECK_THROWS_AS(ops::transpose(x, {0, 1}), ShapeError);
  check_gradients({{2, 3, 4}}, [](const Inputs& in) -> Inputs { return {ops::transpose(in[0], {2, 0, 1})}; });
  check_gradients({{3, 5}}, [](const Inputs& in) -> Inputs { return {ops::transpose(in[0], {1, 0})}; });
}

TEST_CASE("array: concat forward, shapes with unknown dims, dtypes") {
  Graph g;
  auto a = g.constant(Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4}));
  auto b = g.constant(Tensor::from_vector<float>({2, 3}, {5, 6, 7, 8, 9, 10}));
  auto c = g.constant(Tensor::from_vector<float>({1, 2}, {11, 12}));
  auto r = evaluate({ops::concat({a, b}, 1), ops::concat({a, b}, -1), ops::concat({a, c}, 0), ops::concat({a}, 0)});
  check_close(r[0], {1, 2, 5, 6, 7, 3, 4, 8, 9, 10});
  CHECK(r[0].shape() == Shape{2, 5});
  check_close(r[1], r[0].to_vector<double>());
  check_close(r[2], {1, 2, 3, 4, 11, 12});
  CHECK(r[2].shape() == Shape{3, 2});
  check_close(r[3], {1, 2, 3, 4});

  auto p = g.placeholder({-1, 3});
  auto q = g.placeholder({-1, 3});
  CHECK(ops::concat({p, q}, 0).shape() == Shape{-1, 3});
  CHECK(ops::concat({p, q}, 1).shape() == Shape{-1, 6});
  auto known = g.placeholder({4, 3});
  CHECK(ops::concat({p, known}, 0).shape() == Shape{-1, 3});
  CHECK(ops::concat({p, g.placeholder({4, 2})}, 1).shape() == Shape{4, 5});

  auto i1 = g.constant(Tensor::from_vector<std::int64_t>({2}, {1, 2}));
  auto i2 = g.constant(Tensor::from_vector<std::int64_t>({1}, {3}));
  CHECK(evaluate({ops::concat({i1, i2}, 0)})[0].to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 2, 3});

  // Many rows of short runs: the copy is split between threads.
  Tensor big_a = random_tensor({5000, 3}, 1), big_b = random_tensor({5000, 4}, 2);
  auto big = evaluate({ops::concat({g.constant(big_a), g.constant(big_b)}, 1)})[0];
  auto av = big_a.to_vector<double>(), bv = big_b.to_vector<double>(), yv = big.to_vector<double>();
  bool ok = true;
  for (std::size_t i = 0; i < 5000; ++i)
    for (std::size_t j = 0; j < 7; ++j) ok = ok && yv[i * 7 + j] == (j < 3 ? av[i * 3 + j] : bv[i * 4 + j - 3]);
  CHECK(ok);
}

TEST_CASE("array: concat errors name the op and the shapes") {
  Graph g;
  auto a = g.placeholder({2, 3});
  auto b = g.placeholder({3, 3});
  auto msg = message_of<ShapeError>([&] { ops::concat({a, b}, 1); });
  CHECK(contains(msg, "concat"));
  CHECK(contains(msg, "(2, 3)"));
  CHECK(contains(msg, "(3, 3)"));
  CHECK_THROWS_AS(ops::concat({a, g.placeholder({2, 3}, DType::float64)}, 0), DTypeError);
  CHECK_THROWS_AS(ops::concat({a, g.placeholder({2})}, 0), ShapeError);
  CHECK_THROWS_AS(ops::concat({a, b}, 2), ShapeError);
  CHECK_THROWS_AS(ops::concat({}, 0), ValueError);
}

TEST_CASE("array: concat gradients, also along an unknown axis") {
  check_gradients({{2, 3}, {2, 4}, {2, 1}}, [](const Inputs& in) -> Inputs { return {ops::concat(in, 1)}; });
  check_gradients({{2, 3, 2}, {1, 3, 2}}, [](const Inputs& in) -> Inputs { return {ops::concat(in, 0)}; });

  Graph g;
  auto a = g.placeholder({-1, 3}, DType::float64);
  auto b = g.placeholder({-1, 3}, DType::float64);
  auto y = ops::concat({a, b}, 0);
  auto gy = g.placeholder({-1, 3}, DType::float64);
  auto grads = gradients(y, {a, b}, gy);
  Tensor gv = random_tensor({5, 3}, 9);
  auto r = evaluate(grads, {{a, random_tensor({2, 3}, 1)}, {b, random_tensor({3, 3}, 2)}, {gy, gv}});
  auto all = gv.to_vector<double>();
  CHECK(r[0].shape() == Shape{2, 3});
  CHECK(r[1].shape() == Shape{3, 3});
  check_close(r[0], std::vector<double>(all.begin(), all.begin() + 6));
  check_close(r[1], std::vector<double>(all.begin() + 6, all.end()));
}

TEST_CASE("array: slice and slice_grad forward") {
  const Ints dims{3, 4, 5};
  Graph g;
  Tensor xv = iota(Shape(dims));
  auto x = g.constant(xv);
  auto y = ops::slice(x, {1, 0, 2}, {2, -1, 2});
  CHECK(y.shape() == Shape{2, 4, 2});
  auto dy = g.constant(iota({2, 4, 2}));
  auto dx = ops::slice_grad(dy, x, {1, 0, 2});
  CHECK(dx.shape() == Shape{3, 4, 5});
  auto r = evaluate({y, dx, ops::slice(x, {0, 0, 0}, {-1, -1, -1}), ops::slice(x, {3, 0, 0}, {-1, 4, 5})});
  std::vector<double> expected, expected_dx(60, 0.0);
  double k = 0;
  for_each_index({2, 4, 2}, [&](const Ints& i) {
    std::int64_t src = flat({i[0] + 1, i[1], i[2] + 2}, dims);
    expected.push_back(static_cast<double>(src));
    expected_dx[static_cast<std::size_t>(src)] = k++;
  });
  check_close(r[0], expected);
  check_close(r[1], expected_dx);
  check_close(r[2], xv.to_vector<double>());
  CHECK(r[3].shape() == Shape{0, 4, 5});

  // int32 and a run long enough to be split between threads.
  auto xi = g.constant(Tensor::from_vector<std::int32_t>({2, 3}, {1, 2, 3, 4, 5, 6}));
  CHECK(evaluate({ops::slice(xi, {0, 1}, {2, 2})})[0].to_vector<std::int32_t>() == std::vector<std::int32_t>{2, 3, 5, 6});
  Tensor big = random_tensor({40000, 3}, 5);
  auto bs = evaluate({ops::slice(g.constant(big), {1, 1}, {39998, 1})})[0];
  auto bv = big.to_vector<double>(), sv = bs.to_vector<double>();
  bool ok = sv.size() == 39998;
  for (std::size_t i = 0; ok && i < sv.size(); ++i) ok = sv[i] == bv[(i + 1) * 3 + 1];
  CHECK(ok);
}

TEST_CASE("array: slice shapes with unknown dims, and errors") {
  Graph g;
  auto x = g.placeholder({-1, 10});
  CHECK(ops::slice(x, {0, 2}, {-1, 3}).shape() == Shape{-1, 3});
  CHECK(ops::slice(x, {1, 2}, {4, -1}).shape() == Shape{4, 8});
  auto r = evaluate({ops::slice(x, {1, 2}, {-1, 3})}, {{x, iota({4, 10}, DType::float32)}});
  CHECK(r[0].shape() == Shape{3, 3});
  check_close(r[0], {12, 13, 14, 22, 23, 24, 32, 33, 34});

  auto msg = message_of<ShapeError>([&] { ops::slice(x, {0, 8}, {-1, 3}); });
  CHECK(contains(msg, "slice"));
  CHECK(contains(msg, "(None, 10)"));
  CHECK_THROWS_AS(ops::slice(x, {0}, {-1}), ShapeError);
  CHECK_THROWS_AS(ops::slice(x, {-1, 0}, {1, 1}), ShapeError);
  CHECK_THROWS_AS(ops::slice_grad(g.placeholder({2, 4}), g.placeholder({3, 3}), {0, 0}), ShapeError);
}

TEST_CASE("array: slice gradients") {
  check_gradients({{4, 5, 3}}, [](const Inputs& in) -> Inputs { return {ops::slice(in[0], {1, 2, 0}, {2, -1, 2})}; });
  check_gradients({{6}}, [](const Inputs& in) -> Inputs { return {ops::slice(in[0], {2}, {3})}; });
}

TEST_CASE("array: split forward, shapes and errors") {
  Graph g;
  auto x = g.constant(iota({2, 6}));
  auto parts = ops::split(x, 1, {1, 2, 3});
  REQUIRE(parts.size() == 3);
  CHECK(parts[2].shape() == Shape{2, 3});
  auto r = evaluate(parts);
  check_close(r[0], {0, 6});
  check_close(r[1], {1, 2, 7, 8});
  check_close(r[2], {3, 4, 5, 9, 10, 11});
  auto rows = evaluate(ops::split(x, 0, {1, 1}));
  check_close(rows[1], {6, 7, 8, 9, 10, 11});

  auto p = g.placeholder({-1, 4});
  auto pp = ops::split(p, -1, {3, 1});
  CHECK(pp[0].shape() == Shape{-1, 3});
  CHECK(ops::split(p, 0, {2, 5})[1].shape() == Shape{5, 4});  // checked when the batch is known

  auto msg = message_of<ShapeError>([&] { ops::split(x, 1, {2, 2}); });
  CHECK(contains(msg, "split"));
  CHECK(contains(msg, "(2, 6)"));
  CHECK_THROWS_AS(ops::split(x, 2, {1, 1}), ShapeError);
  CHECK_THROWS_AS(ops::split(x, 1, {7, -1}), ShapeError);
}

TEST_CASE("array: split gradients, with unused pieces getting zeros") {
  check_gradients({{3, 7}}, [](const Inputs& in) -> Inputs { return ops::split(in[0], 1, {2, 4, 1}); });
  check_gradients({{3, 7}}, [](const Inputs& in) -> Inputs {
    auto parts = ops::split(in[0], 1, {2, 4, 1});
    return {parts[0], parts[2]};
  });
  // Only the unused piece: the gradient there is exactly zero.
  Graph g;
  auto x = g.placeholder({2, 5}, DType::float64);
  auto parts = ops::split(x, 1, {2, 3});
  auto dx = gradients(ops::reduce_sum(parts[1]), {x})[0];
  auto r = evaluate({dx}, {{x, random_tensor({2, 5}, 1)}});
  check_close(r[0], {0, 0, 1, 1, 1, 0, 0, 1, 1, 1}, 0, 0);
}

TEST_CASE("array: pad forward, unknown dims and errors") {
  Graph g;
  auto x = g.constant(Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4}));
  auto y = ops::pad(x, {1, 0, 0, 2}, -1.5);
  CHECK(y.shape() == Shape{3, 4});
  auto xi = g.constant(Tensor::from_vector<std::int64_t>({2}, {7, 8}));
  auto r = evaluate({y, ops::pad(xi, {2, 1})});
  check_close(r[0], {-1.5, -1.5, -1.5, -1.5, 1, 2, -1.5, -1.5, 3, 4, -1.5, -1.5});
  CHECK(r[1].to_vector<std::int64_t>() == std::vector<std::int64_t>{0, 0, 7, 8, 0});

  auto images = g.placeholder({-1, 28, 28, 3});
  CHECK(ops::pad(images, {0, 0, 1, 1, 2, 2, 0, 0}).shape() == Shape{-1, 30, 32, 3});

  auto msg = message_of<ShapeError>([&] { ops::pad(x, {1, 1}); });
  CHECK(contains(msg, "pad"));
  CHECK(contains(msg, "(2, 2)"));
  CHECK_THROWS_AS(ops::pad(x, {1, 1, -1, 0}), ShapeError);
}

TEST_CASE("array: pad gradients, also on an unknown axis padded at its end") {
  check_gradients({{2, 3, 2}}, [](const Inputs& in) -> Inputs { return {ops::pad(in[0], {1, 0, 2, 1, 0, 3}, 0.5)}; });

  Graph g;
  auto x = g.placeholder({-1, 2}, DType::float64);
  auto y = ops::pad(x, {1, 2, 0, 1});
  CHECK(y.shape() == Shape{-1, 3});
  auto gy = g.placeholder({-1, 3}, DType::float64);
  auto dx = gradients(y, {x}, gy)[0];
  CHECK(dx.shape() == Shape{-1, 2});
  auto r = evaluate({dx}, {{x, random_tensor({2, 2}, 1)}, {gy, iota({5, 3})}});
  CHECK(r[0].shape() == Shape{2, 2});
  check_close(r[0], {3, 4, 6, 7});
}

TEST_CASE("array: one_hot") {
  Graph g;
  auto idx = g.constant(Tensor::from_vector<std::int32_t>({2, 2}, {0, 2, -1, 3}));
  auto y = ops::one_hot(idx, 3);
  CHECK(y.shape() == Shape{2, 2, 3});
  CHECK(y.dtype() == DType::float32);
  auto r = evaluate({y, ops::one_hot(idx, 3, DType::float64, 5.0, -1.0),
                     ops::one_hot(g.constant(Tensor::from_vector<std::int64_t>({2}, {1, 0})), 2, DType::int32)});
  check_close(r[0], {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0});
  check_close(r[1], {5, -1, -1, -1, -1, 5, -1, -1, -1, -1, -1, -1});
  CHECK(r[2].to_vector<std::int32_t>() == std::vector<std::int32_t>{0, 1, 1, 0});
  CHECK(ops::one_hot(g.placeholder({-1}, DType::int64), 10).shape() == Shape{-1, 10});

  auto msg = message_of<DTypeError>([&] { ops::one_hot(g.placeholder({4}), 3); });
  CHECK(contains(msg, "one_hot"));
  CHECK(contains(msg, "(4,)"));
  CHECK_THROWS_AS(ops::one_hot(idx, -2), ValueError);
}

TEST_CASE("array: gather and gather_grad forward") {
  Graph g;
  Tensor pv = iota({5, 3});
  auto params = g.constant(pv);
  auto idx = g.constant(Tensor::from_vector<std::int32_t>({2, 2}, {4, 0, 4, 1}));
  auto y = ops::gather(params, idx);
  CHECK(y.shape() == Shape{2, 2, 3});
  auto dy = g.constant(iota({2, 2, 3}));
  auto dp = ops::gather_grad(dy, idx, params);
  CHECK(dp.shape() == Shape{5, 3});
  auto r = evaluate({y, dp, ops::gather(g.constant(Tensor::from_vector<std::int64_t>({3}, {7, 8, 9})),
                                        g.constant(Tensor::from_vector<std::int64_t>({2}, {2, 2})))});
  check_close(r[0], {12, 13, 14, 0, 1, 2, 12, 13, 14, 3, 4, 5});
  // Row 4 gets dy rows 0 and 2 (6..8 + 0..2), row 0 gets dy row 1, row 1 gets dy row 3.
  check_close(r[1], {3, 4, 5, 9, 10, 11, 0, 0, 0, 0, 0, 0, 6, 8, 10});
  CHECK(r[2].to_vector<std::int64_t>() == std::vector<std::int64_t>{9, 9});

  auto emb = g.placeholder({-1}, DType::int32);
  CHECK(ops::gather(g.placeholder({100, 8}), emb).shape() == Shape{-1, 8});
}

TEST_CASE("array: gather with an index out of range throws ValueError naming it") {
  Graph g;
  auto params = g.constant(iota({5, 3}));
  auto idx = g.placeholder({3}, DType::int64);
  auto y = ops::gather(params, idx);
  auto msg = message_of<ValueError>(
      [&] { evaluate({y}, {{idx, Tensor::from_vector<std::int64_t>({3}, {1, 7, 2})}}); });
  CHECK(contains(msg, "gather"));
  CHECK(contains(msg, "index 7"));
  CHECK(contains(msg, "5 rows"));
  CHECK_THROWS_AS(evaluate({y}, {{idx, Tensor::from_vector<std::int64_t>({3}, {1, -1, 2})}}), ValueError);
  auto msg2 = message_of<DTypeError>([&] { ops::gather(params, g.placeholder({2})); });
  CHECK(contains(msg2, "gather"));
  CHECK_THROWS_AS(ops::gather(g.constant(Tensor::scalar(1.0)), idx), ShapeError);
}

TEST_CASE("array: gather gradients to params") {
  check_gradients({{5, 3}}, [](const Inputs& in) -> Inputs {
    auto idx = in[0].graph().constant(Tensor::from_vector<std::int32_t>({2, 3}, {4, 0, 4, 1, 1, 3}));
    return {ops::gather(in[0], idx)};
  });
  check_gradients({{4}}, [](const Inputs& in) -> Inputs {
    auto idx = in[0].graph().constant(Tensor::from_vector<std::int64_t>({5}, {3, 3, 0, 2, 3}));
    return {ops::gather(in[0], idx)};
  });
}

TEST_CASE("largest_remainder_split: sums to n, proportional, leftovers to the largest remainders") {
  CHECK(largest_remainder_split(128, {1, 1}) == Ints{64, 64});
  CHECK(largest_remainder_split(128, {3, 1}) == Ints{96, 32});
  CHECK(largest_remainder_split(10, {1, 1, 1}) == Ints{4, 3, 3});  // equal remainders: lower index first
  CHECK(largest_remainder_split(100, {5, 2, 1}) == Ints{63, 25, 12});  // 62.5, 25, 12.5
  CHECK(largest_remainder_split(2, {1, 1, 1}) == Ints{1, 1, 0});   // fewer samples than shares
  CHECK(largest_remainder_split(0, {1, 2}) == Ints{0, 0});
  CHECK(largest_remainder_split(7, {0, 1}) == Ints{0, 7});
  CHECK(largest_remainder_split(1388, {820, 568}) == Ints{820, 568});
  for (std::int64_t n = 0; n < 50; ++n) {
    const auto s = largest_remainder_split(n, {5, 2, 1});
    CHECK(std::accumulate(s.begin(), s.end(), std::int64_t{0}) == n);
  }
  CHECK(share_range(100, {5, 2, 1}, 2) == std::pair<std::int64_t, std::int64_t>{88, 12});
  CHECK(contains(message_of<ValueError>([] { largest_remainder_split(4, {0, 0}); }), "at least one entry above 0"));
  CHECK(contains(message_of<ValueError>([] { largest_remainder_split(4, {1, -1}); }), ">= 0"));
}

TEST_CASE("array: batch_share takes a share of the rows at run time; its gradient puts dy back") {
  Graph g;
  auto x = g.placeholder({-1, 2}, DType::float32, "x");
  std::vector<SymbolicTensor> shares;
  for (int i = 0; i < 3; ++i) shares.push_back(ops::batch_share(x, {5, 2, 1}, i));
  CHECK(shares[0].shape() == Shape{-1, 2});  // unknown until run
  std::vector<float> values(16);
  std::iota(values.begin(), values.end(), 0.0f);
  auto r = evaluate(shares, {{x, Tensor::from_vector<float>({8, 2}, values)}});  // 8 rows: 5, 2, 1
  check_close(r[0], {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  check_close(r[1], {10, 11, 12, 13});
  check_close(r[2], {14, 15});
  r = evaluate(shares, {{x, Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4})}});  // 2 rows: 1, 1, 0
  CHECK(r[2].shape() == Shape{0, 2});
  check_close(r[1], {3, 4});
  // batch_share_start: where each share begins (8 rows: 0, 5, 7).
  std::vector<SymbolicTensor> starts;
  for (int i = 0; i < 3; ++i) starts.push_back(ops::batch_share_start(x, {5, 2, 1}, i));
  CHECK(starts[1].dtype() == DType::int64);
  r = evaluate(starts, {{x, Tensor::zeros({8, 2})}});
  CHECK((std::vector<double>{r[0].item(), r[1].item(), r[2].item()} == std::vector<double>{0, 5, 7}));
  check_gradients({{7, 3}}, [](const Inputs& in) -> Inputs {
    return {ops::multiply(ops::batch_share(in[0], {2, 1}, 0), ops::batch_share(in[0], {2, 1}, 0)),
            ops::batch_share(in[0], {2, 1}, 1)};
  });
}
