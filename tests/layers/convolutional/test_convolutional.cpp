// The convolutional family: Conv2D's shapes, weight names, forward values against a direct loop,
// gradients, and the errors for bad arguments and inputs.
#include <doctest/doctest.h>

#include <algorithm>

#include "tower/core/ops.h"
#include "tower/layers/layers.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::check_layer_gradients;
using tower::testing::contains;
using tower::testing::floats;
using tower::testing::keras_shape;
using tower::testing::message_of;
using tower::testing::random_tensor;
using tower::testing::run1;

// ---- convolution and pooling ------------------------------------------------------------------------

TEST_CASE("Conv2D: shapes, weights, forward values, gradients") {
  clear_session();
  auto x = layers::Input({28, 28, 1});
  layers::Conv2D conv(32, {3, 3}, {.activation = "relu"});
  CHECK(conv(x).shape() == Shape{-1, 26, 26, 32});
  REQUIRE(conv.weights().size() == 2);
  CHECK(conv.weights()[0]->name() == "conv2d/kernel:0");
  CHECK(conv.weights()[0]->shape() == Shape{3, 3, 1, 32});
  CHECK(conv.weights()[1]->name() == "conv2d/bias:0");
  CHECK(conv.weights()[1]->shape() == Shape{32});
  CHECK(conv.count_params() == 320);
  CHECK(conv.get_weights()[1].to_vector<float>() == std::vector<float>(32, 0.0f));

  CHECK(keras_shape(layers::Conv2D(8, 3, {.strides = {2}, .padding = "same"}), {28, 28, 1}) == Shape{-1, 14, 14, 8});
  CHECK(keras_shape(layers::Conv2D(4, {3, 5}, {.padding = "SAME"}), {7, 9, 2}) == Shape{-1, 7, 9, 4});
  CHECK(keras_shape(layers::Conv2D(4, {3, 3}, {.dilation_rate = {2, 2}}), {9, 9, 2}) == Shape{-1, 5, 5, 4});
  CHECK(keras_shape(layers::Conv2D(4, {2, 2}, {.strides = {2, 1}, .use_bias = false}), {6, 6, 3}) ==
        Shape{-1, 3, 5, 4});

  SUBCASE("handles share the weights, whichever handle built them") {
    layers::Conv2D original(2, 3);
    layers::Conv2D copy = original;  // as a Sequential's layer list holds it
    copy(layers::Input({5, 5, 1}));
    CHECK(original.built());
    CHECK(original(layers::Input({6, 6, 1})).shape() == Shape{-1, 4, 4, 2});
    CHECK(original.weights()[0] == copy.weights()[0]);
  }
  SUBCASE("forward against a direct loop") {
    // x (2, 4, 3, 2), kernel (2, 2, 2, 3), "valid", strides (1, 1): y (2, 3, 2, 3).
    layers::Conv2D layer(3, {2, 2}, {.activation = "relu"});
    layer.ensure_built({{-1, 4, 3, 2}});
    Tensor xv = random_tensor({2, 4, 3, 2}, 11, 0.1, 1.0, false, DType::float32);
    Tensor kv = random_tensor({2, 2, 2, 3}, 12, 0.1, 1.0, false, DType::float32);
    Tensor bv = floats({3}, {0.5f, -0.25f, 0.0f});
    layer.set_weights({kv, bv});
    auto xs = xv.to_vector<double>(), ks = kv.to_vector<double>(), bs = bv.to_vector<double>();
    std::vector<double> expected;
    for (int n = 0; n < 2; ++n)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 2; ++j)
          for (int f = 0; f < 3; ++f) {
            double sum = bs[f];
            for (int di = 0; di < 2; ++di)
              for (int dj = 0; dj < 2; ++dj)
                for (int c = 0; c < 2; ++c)
                  sum += xs[((n * 4 + i + di) * 3 + j + dj) * 2 + c] * ks[((di * 2 + dj) * 2 + c) * 3 + f];
            expected.push_back(std::max(sum, 0.0));
          }
    Tensor y = run1(layer, xv);
    CHECK(y.shape() == Shape{2, 3, 2, 3});
    check_close(y, expected, 1e-5, 1e-5);
  }
  SUBCASE("gradient with respect to the input") {
    layers::Conv2D layer(2, {2, 2}, {.strides = {2, 2}, .padding = "same"});
    check_layer_gradients(layer, {{2, 3, 3, 2}});
  }
}

TEST_CASE("Conv2D: bad arguments and inputs") {
  CHECK(contains(message_of<ValueError>([] { layers::Conv2D(0, 3); }), "filters must be positive"));
  auto msg = message_of<ValueError>([] { layers::Conv2D(4, {3, 3, 3}, {.name = "c"}); });
  CHECK(contains(msg, "Conv2D \"c\""));
  CHECK(contains(msg, "kernel_size"));
  CHECK(contains(message_of<ValueError>([] { layers::Conv2D(4, 3, {.padding = "full"}); }), "\"full\""));
  CHECK(contains(message_of<ValueError>([] { layers::Conv2D(4, 3, {.strides = {2}, .dilation_rate = {2}}); }),
                 "dilation_rate"));
  CHECK(contains(message_of<ValueError>([] { layers::Conv2D(4, 3, {.activation = "nope"}); }), "nope"));
  msg = message_of<ShapeError>([] { layers::Conv2D(4, 3, {.name = "c2"})(layers::Input({28, 28})); });
  CHECK(contains(msg, "Conv2D \"c2\""));
  CHECK(contains(msg, "rank 4"));
  CHECK(contains(msg, "(None, 28, 28)"));
  // A second call with other channels than the kernel was built for.
  layers::Conv2D shared(4, 3, {.name = "c3"});
  shared(layers::Input({8, 8, 1}));
  msg = message_of<ShapeError>([&] { shared(layers::Input({8, 8, 3})); });
  CHECK(contains(msg, "expected input with 1 channels"));
  // Too small for the kernel with "valid" padding.
  CHECK(contains(message_of<ShapeError>([] { layers::Conv2D(4, 5)(layers::Input({3, 3, 1})); }), "\"same\""));
}
