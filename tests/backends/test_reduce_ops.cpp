// Reductions: sum, mean, max over axes (kept or dropped), argmax; forward values and gradients.
#include <doctest/doctest.h>

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

TEST_CASE("reduce: long reductions split across threads") {
  Graph g;
  auto x = g.constant(Tensor::full({100000, 3}, 0.5, DType::float64));
  auto r = evaluate({ops::reduce_sum(x, {0}), ops::reduce_mean(x)});
  check_close(r[0], {50000, 50000, 50000});
  check_close(r[1], {0.5});
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
