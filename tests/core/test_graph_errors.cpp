// Bad input at graph-build time throws tower::Error naming the op and the shapes.
#include <doctest/doctest.h>

#include "tower/core/op_registry.h"
#include "tower/core/ops.h"
#include "tests/support/errors.h"

using namespace tower;

using tower::testing::contains;
using tower::testing::message_of;

TEST_CASE("graph errors: mismatched matmul shapes name the op and both shapes") {
  Graph g;
  auto a = g.placeholder({-1, 3});
  auto b = g.placeholder({4, 5});
  auto msg = message_of<ShapeError>([&] { ops::matmul(a, b); });
  CHECK(contains(msg, "matmul"));
  CHECK(contains(msg, "(None, 3)"));
  CHECK(contains(msg, "(4, 5)"));
}

TEST_CASE("graph errors: mismatched dtypes") {
  Graph g;
  auto a = g.placeholder({2, 3}, DType::float32);
  auto b = g.placeholder({2, 3}, DType::float64);
  auto msg = message_of<DTypeError>([&] { ops::add(a, b); });
  CHECK(contains(msg, "add"));
  CHECK(contains(msg, "float32"));
  CHECK(contains(msg, "float64"));
}

TEST_CASE("graph errors: shapes that do not broadcast") {
  Graph g;
  auto a = g.placeholder({-1, 3});
  auto b = g.placeholder({-1, 4});
  auto msg = message_of<ShapeError>([&] { ops::multiply(a, b); });
  CHECK(contains(msg, "multiply"));
  CHECK(contains(msg, "(None, 4)"));
}

TEST_CASE("graph errors: a conv kernel larger than its padded input") {
  Graph g;
  auto x = g.placeholder({-1, 2, 2, 1});
  auto k = g.placeholder({3, 3, 1, 8});
  auto msg = message_of<ShapeError>([&] { ops::conv2d(x, k); });
  CHECK(contains(msg, "conv2d"));
  CHECK(contains(msg, "(None, 2, 2, 1)"));
  CHECK(contains(msg, "(3, 3, 1, 8)"));
  // With "same" padding the same kernel fits.
  CHECK(ops::conv2d(x, k, {.padding = "same"}).shape() == Shape{-1, 2, 2, 8});
}

TEST_CASE("graph errors: bias, axes and unknown ops") {
  Graph g;
  auto x = g.placeholder({-1, 10});
  auto bias = g.placeholder({9});
  CHECK(contains(message_of<ShapeError>([&] { ops::bias_add(x, bias); }), "bias_add"));
  CHECK(contains(message_of<ShapeError>([&] { ops::reduce_sum(x, {2}); }), "reduce_sum"));
  CHECK_THROWS_AS(g.add("no_such_op", {x}), NotFoundError);
  CHECK(contains(message_of<NotFoundError>([] { find_kernel("no_such_op", DeviceKind::cuda); }), "no cuda kernel"));
  Graph other;
  auto y = other.placeholder({-1, 10});
  CHECK_THROWS_AS(ops::add(x, y), ValueError);
}
