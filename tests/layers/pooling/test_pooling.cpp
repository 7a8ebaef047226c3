// The pooling family: MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, GlobalMaxPooling2D:
// shapes, values, gradients and errors.
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

TEST_CASE("MaxPooling2D and AveragePooling2D: shapes and values") {
  CHECK(keras_shape(layers::MaxPooling2D({2, 2}), {26, 26, 32}) == Shape{-1, 13, 13, 32});
  CHECK(keras_shape(layers::MaxPooling2D(3), {7, 7, 1}) == Shape{-1, 2, 2, 1});
  CHECK(keras_shape(layers::MaxPooling2D({2, 2}, {.strides = {1, 1}}), {4, 5, 2}) == Shape{-1, 3, 4, 2});
  CHECK(keras_shape(layers::AveragePooling2D({2, 2}, {.padding = "same"}), {5, 5, 1}) == Shape{-1, 3, 3, 1});
  CHECK(layers::MaxPooling2D({3, 2}).strides() == Ints{3, 2});
  CHECK(layers::MaxPooling2D().weights().empty());

  // x (1, 3, 3, 1) = 1..9.
  Tensor x = floats({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  layers::MaxPooling2D max_valid;
  check_close(run1(max_valid, x), {5});
  layers::MaxPooling2D max_same({2, 2}, {.padding = "same"});
  check_close(run1(max_same, x), {5, 6, 8, 9});
  layers::AveragePooling2D avg_same({2, 2}, {.padding = "same"});  // padding excluded from the mean, as Keras
  check_close(run1(avg_same, x), {3, 4.5, 7.5, 9});
  layers::AveragePooling2D avg_strided({2, 2}, {.strides = {1, 1}});
  check_close(run1(avg_strided, x), {3, 4, 6, 7});

  layers::MaxPooling2D grad_max({2, 2}, {.strides = {1, 1}});
  check_weightless_gradients(grad_max, {{2, 3, 3, 2}});
  layers::AveragePooling2D grad_avg({2, 2}, {.padding = "same"});
  check_weightless_gradients(grad_avg, {{1, 3, 3, 2}});
}

TEST_CASE("pooling: bad arguments and inputs") {
  CHECK(contains(message_of<ValueError>([] { layers::MaxPooling2D({0, 2}); }), "pool_size"));
  CHECK(contains(message_of<ValueError>([] { layers::AveragePooling2D({2, 2}, {.strides = {1, 2, 3}}); }), "strides"));
  CHECK(contains(message_of<ValueError>([] { layers::MaxPooling2D({2, 2}, {.padding = "causal"}); }), "causal"));
  auto msg = message_of<ShapeError>([] { layers::MaxPooling2D({2, 2}, {.name = "pool"})(layers::Input({10})); });
  CHECK(contains(msg, "MaxPooling2D \"pool\""));
  CHECK(contains(msg, "(None, 10)"));
}

TEST_CASE("GlobalAveragePooling2D and GlobalMaxPooling2D") {
  CHECK(keras_shape(layers::GlobalAveragePooling2D(), {4, 4, 3}) == Shape{-1, 3});
  CHECK(keras_shape(layers::GlobalMaxPooling2D({.keepdims = true}), {4, 4, 3}) == Shape{-1, 1, 1, 3});
  // x (1, 2, 2, 2): channel 0 = 1, 2, 3, 4 and channel 1 = -1, 5, 0, 2.
  Tensor x = floats({1, 2, 2, 2}, {1, -1, 2, 5, 3, 0, 4, 2});
  layers::GlobalAveragePooling2D avg;
  check_close(run1(avg, x), {2.5, 1.5});
  layers::GlobalMaxPooling2D max({.keepdims = true});
  Tensor y = run1(max, x);
  CHECK(y.shape() == Shape{1, 1, 1, 2});
  check_close(y, {4, 5});
  check_weightless_gradients(avg, {{2, 3, 2, 2}});
  CHECK(contains(message_of<ShapeError>([] { layers::GlobalMaxPooling2D()(layers::Input({4, 4})); }), "rank 4"));
}
