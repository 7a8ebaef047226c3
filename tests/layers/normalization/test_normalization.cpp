// The normalization family: BatchNormalization's weights, training values and moving statistics as
// Keras 3 computes them, images, options, frozen layers, gradients and errors.
#include <doctest/doctest.h>

#include <cmath>

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
using tower::testing::run_layer;

TEST_CASE("BatchNormalization: weights, training values and moving statistics as Keras 3") {
  clear_session();
  layers::BatchNormalization bn;
  CHECK(keras_shape(bn, {2}) == Shape{-1, 2});
  REQUIRE(bn.weights().size() == 4);
  const std::vector<std::string> names{"batch_normalization/gamma:0", "batch_normalization/beta:0",
                                       "batch_normalization/moving_mean:0", "batch_normalization/moving_variance:0"};
  for (std::size_t i = 0; i < 4; ++i) {
    CHECK(bn.weights()[i]->name() == names[i]);
    CHECK(bn.weights()[i]->shape() == Shape{2});
  }
  CHECK(bn.trainable_weights().size() == 2);
  CHECK(bn.non_trainable_weights().size() == 2);

  // The numbers Keras 3.15 printed for BatchNormalization()(x, training=True) on this x.
  Tensor x = floats({3, 2}, {1, 2, 3, 5, 0, -1});
  std::size_t num_updates = 0;
  Tensor y = run_layer(bn, {x}, /*training=*/true, &num_updates)[0];
  CHECK(num_updates == 2);
  check_close(y, {-0.26717538, 0.0, 1.335877, 1.2246429, -1.0687015, -1.2246428}, 1e-5, 1e-5);
  // moving = 0.99 * moving + 0.01 * batch, with the biased batch variance (1.5556, 6).
  auto w = bn.get_weights();
  check_close(w[2], {0.01333333, 0.02}, 1e-5, 1e-7);
  check_close(w[3], {1.0055555, 1.05}, 1e-6, 1e-7);

  // Inference normalizes with the moving statistics: (x - mean) / sqrt(var + 1e-3).
  Tensor inference = run1(bn, x, /*training=*/false);
  std::vector<double> expected;
  auto xs = x.to_vector<double>(), mm = w[2].to_vector<double>(), mv = w[3].to_vector<double>();
  for (std::size_t i = 0; i < xs.size(); ++i) expected.push_back((xs[i] - mm[i % 2]) / std::sqrt(mv[i % 2] + 1e-3));
  check_close(inference, expected, 1e-5, 1e-6);
  CHECK(bn.get_weights()[2].to_vector<float>() == w[2].to_vector<float>());  // inference updates nothing
}

TEST_CASE("BatchNormalization: images, options, frozen layers, gradients, errors") {
  clear_session();
  SUBCASE("rank 4: statistics per channel over batch, height and width") {
    layers::BatchNormalization bn({.momentum = 0.5, .epsilon = 0.01});
    Tensor x = random_tensor({2, 3, 3, 2}, 5, 0.1, 2.0, false, DType::float32);
    Tensor y = run1(bn, x, true);
    auto xs = x.to_vector<double>();
    std::vector<double> mean(2, 0), var(2, 0);
    for (std::size_t i = 0; i < xs.size(); ++i) mean[i % 2] += xs[i] / 18.0;
    for (std::size_t i = 0; i < xs.size(); ++i) var[i % 2] += (xs[i] - mean[i % 2]) * (xs[i] - mean[i % 2]) / 18.0;
    std::vector<double> expected;
    for (std::size_t i = 0; i < xs.size(); ++i)
      expected.push_back((xs[i] - mean[i % 2]) / std::sqrt(var[i % 2] + 0.01));
    check_close(y, expected, 1e-4, 1e-5);
    check_close(bn.get_weights()[2], {0.5 * mean[0], 0.5 * mean[1]}, 1e-5, 1e-6);
    check_close(bn.get_weights()[3], {0.5 + 0.5 * var[0], 0.5 + 0.5 * var[1]}, 1e-5, 1e-6);
  }
  SUBCASE("center and scale off: only the moving statistics") {
    layers::BatchNormalization bn({.center = false, .scale = false});
    bn(layers::Input({4}));
    CHECK(bn.weights().size() == 2);
    CHECK(bn.trainable_weights().empty());
    check_close(run1(bn, floats({2, 4}, {1, 2, 3, 4, 3, 2, 1, 0}), true),
                {-0.999500, 0.0, 0.999500, 0.999875, 0.999500, 0.0, -0.999500, -0.999875}, 1e-5, 1e-5);
  }
  SUBCASE("gamma and beta apply; a frozen layer uses the moving statistics while training") {
    layers::BatchNormalization bn;
    bn(layers::Input({2}));
    bn.set_weights({floats({2}, {2, 3}), floats({2}, {1, -1}), floats({2}, {1, 2}), floats({2}, {4, 9})});
    Tensor x = floats({2, 2}, {3, 2, -1, 5});
    auto expect = [&](double v, int c) {
      double g[] = {2, 3}, b[] = {1, -1}, m[] = {1, 2}, s[] = {4, 9};
      return g[c] * (v - m[c]) / std::sqrt(s[c] + 1e-3) + b[c];
    };
    std::vector<double> expected{expect(3, 0), expect(2, 1), expect(-1, 0), expect(5, 1)};
    check_close(run1(bn, x, false), expected, 1e-5, 1e-5);
    bn.set_trainable(false);
    std::size_t num_updates = 1;
    check_close(run_layer(bn, {x}, true, &num_updates)[0], expected, 1e-5, 1e-5);
    CHECK(num_updates == 0);
  }
  SUBCASE("gradient with respect to the input, training and inference") {
    layers::BatchNormalization bn;
    check_layer_gradients(bn, {{4, 3}}, /*training=*/true);
    check_layer_gradients(bn, {{2, 2, 2, 3}}, /*training=*/false);
  }
  SUBCASE("errors") {
    auto msg = message_of<ValueError>([] {
      layers::BatchNormalization({.axis = 3, .name = "bn"})(layers::Input({3, 4}));
    });
    CHECK(contains(msg, "BatchNormalization \"bn\""));
    CHECK(contains(msg, "axis=3"));
    CHECK_NOTHROW(layers::BatchNormalization({.axis = 1})(layers::Input({3})));  // axis 1 is the last one here
    CHECK(contains(message_of<ValueError>([] { layers::BatchNormalization({.momentum = 1.5}); }), "momentum"));
    CHECK(contains(message_of<ValueError>([] { layers::BatchNormalization({.epsilon = 0}); }), "epsilon"));
    CHECK(contains(message_of<ShapeError>([] { layers::BatchNormalization()(layers::Input({})); }), "(None,)"));
  }
}
