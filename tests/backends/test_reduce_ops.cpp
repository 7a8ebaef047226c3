// Reductions: sum, mean, max over axes (kept or dropped), argmax; forward values and gradients.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "tower/core/ops.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::check_gradients;
using tower::testing::evaluate;
using Inputs = std::vector<SymbolicTensor>;

TEST_CASE("reduce: sum, mean and max over axes") {
  Graph g;
  // x[i][j][k] = 100 i + 10 j + k, shape (2, 2, 3)
  std::vector<double> v;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) v.push_back(100 * i + 10 * j + k);
  auto x = g.constant(Tensor::from_vector<double>({2, 2, 3}, v));
  auto r = evaluate({ops::reduce_sum(x), ops::reduce_sum(x, {1}), ops::reduce_mean(x, {0, 2}, true),
                     ops::reduce_max(x, {-1}), ops::reduce_sum(x, {0, 2}), ops::reduce_max(x, {0, 2})});
  check_close(r[0], {672});
  check_close(r[1], {10, 12, 14, 210, 212, 214});
  CHECK(r[2].shape() == Shape{1, 2, 1});
  check_close(r[2], {51, 61});
  check_close(r[3], {2, 12, 102, 112});
  check_close(r[4], {306, 366});  // non-consecutive axes
  check_close(r[5], {102, 112});
}

TEST_CASE("reduce: max of a row of -inf is -inf (not the lowest finite value); integers start at their lowest") {
  Graph g;
  const float inf = std::numeric_limits<float>::infinity();
  auto f32 = g.constant(Tensor::from_vector<float>({2, 3}, {-inf, -inf, -inf, -inf, 2.0f, -inf}));
  auto f64 = g.constant(Tensor::from_vector<double>({2}, {-double(inf), -double(inf)}));
  auto i32 = g.constant(Tensor::from_vector<std::int32_t>({3}, {std::numeric_limits<std::int32_t>::lowest(), -5, -7}));
  auto r = evaluate({ops::reduce_max(f32, {1}), ops::reduce_max(f64), ops::reduce_max(i32)});
  CHECK(r[0].data<float>()[0] == -inf);
  CHECK(r[0].data<float>()[1] == 2.0f);
  CHECK(r[1].data<double>()[0] == -double(inf));
  CHECK(r[2].data<std::int32_t>()[0] == -5);
}

TEST_CASE("reduce: long reductions split across threads") {
  Graph g;
  auto x = g.constant(Tensor::full({100000, 3}, 0.5, DType::float64));
  auto r = evaluate({ops::reduce_sum(x, {0}), ops::reduce_mean(x)});
  check_close(r[0], {50000, 50000, 50000});
  check_close(r[1], {0.5});
}

TEST_CASE("reduce: rows to one value (partial results across the row), axes of length 1, and their gradients") {
  Graph g;
  // x[i][j] = (j * 37 + i * 11) mod 101 - 50: rows of 150 (past 16 partial results of 4 each) and of 7.
  std::vector<double> long_rows, short_rows;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 150; ++j) long_rows.push_back((j * 37 + i * 11) % 101 - 50);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 7; ++j) short_rows.push_back(j - i);
  auto a = g.constant(Tensor::from_vector<double>({3, 150}, long_rows));
  auto b = g.constant(Tensor::from_vector<double>({3, 1, 7}, short_rows));
  auto r = evaluate(
      {ops::reduce_sum(a, {1}), ops::reduce_max(a, {-1}), ops::reduce_sum(b, {1}), ops::reduce_mean(b, {1, 2})});
  std::vector<double> sums(3, 0), maxima(3, -1e9);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 150; ++j) {
      const double v = long_rows[static_cast<std::size_t>(i * 150 + j)];
      sums[static_cast<std::size_t>(i)] += v;
      maxima[static_cast<std::size_t>(i)] = std::max(maxima[static_cast<std::size_t>(i)], v);
    }
  check_close(r[0], sums);
  check_close(r[1], maxima);
  CHECK(r[2].shape() == Shape{3, 7});  // over the axis of length 1: the values themselves
  check_close(r[2], short_rows);
  check_close(r[3], {3, 2, 1});
  // The gradients broadcast one value across each row (a sum's and a mean's).
  check_gradients({{3, 70}}, [](const Inputs& in) {
    return Inputs{ops::multiply(ops::reduce_mean(in[0], {1}, true), ops::reduce_sum(in[0], {-1}, true))};
  });
}

TEST_CASE("reduce: argmax picks the first maximum, int64") {
  Graph g;
  auto x = g.constant(Tensor::from_vector<float>({2, 3}, {1, 5, 5, 7, 2, 3}));
  auto r = evaluate({ops::argmax(x, -1), ops::argmax(x, 0)});
  CHECK(r[0].dtype() == DType::int64);
  CHECK(r[0].to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 0});
  CHECK(r[1].to_vector<std::int64_t>() == std::vector<std::int64_t>{1, 0, 0});
}

TEST_CASE("reduce: gradients") {
  for (bool keepdims : {false, true}) {
    check_gradients({{3, 4, 2}}, [&](const Inputs& in) -> Inputs { return {ops::reduce_sum(in[0], {1}, keepdims)}; });
    check_gradients({{3, 4, 2}}, [&](const Inputs& in) -> Inputs { return {ops::reduce_mean(in[0], {0, 2}, keepdims)}; });
    check_gradients({{3, 4, 2}}, [&](const Inputs& in) -> Inputs { return {ops::reduce_max(in[0], {2}, keepdims)}; });
    check_gradients({{3, 4, 2}}, [&](const Inputs& in) -> Inputs { return {ops::reduce_max(in[0], {0, 2}, keepdims)}; });
  }
  check_gradients({{5, 3}}, [](const Inputs& in) -> Inputs { return {ops::reduce_mean(in[0])}; });
}

TEST_CASE("reduce: unknown batch reduced at run time") {
  Graph g;
  auto x = g.placeholder({-1, 2}, DType::float32);
  auto m = ops::reduce_mean(x);
  CHECK(m.shape() == Shape{});
  auto r = evaluate({m}, {{x, Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6})}});
  check_close(r[0], {3.5});
}
