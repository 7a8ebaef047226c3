// The reshaping family: Flatten, Reshape and ZeroPadding2D: shapes, values, gradients and errors.
#include <doctest/doctest.h>

#include "tower/core/ops.h"
#include "tower/layers/layers.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::check_weightless_gradients;
using tower::testing::contains;
using tower::testing::floats;
using tower::testing::keras_shape;
using tower::testing::message_of;
using tower::testing::run1;
using Ints = std::vector<std::int64_t>;

// ---- reshaping --------------------------------------------------------------------------------------

TEST_CASE("Flatten and Reshape") {
  CHECK(keras_shape(layers::Flatten(), {12, 12, 64}) == Shape{-1, 9216});
  CHECK(keras_shape(layers::Flatten(), {4}) == Shape{-1, 4});
  CHECK(keras_shape(layers::Reshape({3, 4}), {12}) == Shape{-1, 3, 4});
  CHECK(keras_shape(layers::Reshape({-1, 2}), {2, 3}) == Shape{-1, 3, 2});  // as Keras: (None, 3, 2)

  Tensor x = floats({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  layers::Flatten flatten;
  Tensor flat = run1(flatten, x);
  CHECK(flat.shape() == Shape{2, 6});
  check_close(flat, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  layers::Reshape reshape({3, -1});
  Tensor r = run1(reshape, x);
  CHECK(r.shape() == Shape{2, 3, 2});
  check_close(r, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  check_weightless_gradients(reshape, {{2, 2, 3}});

  CHECK(contains(message_of<ValueError>([] { layers::Reshape({-1, -1}); }), "at most one -1"));
  CHECK(contains(message_of<ValueError>([] { layers::Reshape({0, 2}); }), "target_shape"));
  auto msg = message_of<ShapeError>([] { layers::Reshape({5}, {.name = "r"})(layers::Input({2, 3})); });
  CHECK(contains(msg, "Reshape \"r\""));
  CHECK(contains(msg, "6 elements"));
  CHECK(contains(message_of<ShapeError>([] { layers::Reshape({4, -1})(layers::Input({2, 3})); }), "[4, -1]"));
}

TEST_CASE("ZeroPadding2D: Keras's three padding forms") {
  CHECK(keras_shape(layers::ZeroPadding2D({{1, 2}, {3, 4}}), {5, 5, 1}) == Shape{-1, 8, 12, 1});
  CHECK(keras_shape(layers::ZeroPadding2D(2), {5, 5, 1}) == Shape{-1, 9, 9, 1});
  CHECK(keras_shape(layers::ZeroPadding2D({1, 2}), {5, 5, 1}) == Shape{-1, 7, 9, 1});
  CHECK(layers::ZeroPadding2D().padding() == Ints{1, 1, 1, 1});

  layers::ZeroPadding2D pad({{1, 0}, {0, 1}});
  Tensor y = run1(pad, floats({1, 2, 2, 1}, {1, 2, 3, 4}));
  CHECK(y.shape() == Shape{1, 3, 3, 1});
  check_close(y, {0, 0, 0, 1, 2, 0, 3, 4, 0});
  check_weightless_gradients(pad, {{2, 2, 2, 2}});

  CHECK(contains(message_of<ValueError>([] { layers::ZeroPadding2D(-1); }), "padding"));
  CHECK(contains(message_of<ValueError>([] { layers::ZeroPadding2D({{1, 2, 3}, {1, 2}}); }), "(top, bottom)"));
  CHECK(contains(message_of<ShapeError>([] { layers::ZeroPadding2D()(layers::Input({5, 5})); }), "rank 4"));
}
