// The activations family: activation functions by name (values printed by Keras 3.15, gradients),
// and the layers Activation, ReLU, LeakyReLU, ELU, Softmax, PReLU and ThresholdedReLU.
#include <doctest/doctest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "tower/core/ops.h"
#include "tower/layers/activations/activations.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::as_doubles;
using tower::testing::check_close;
using tower::testing::check_gradients;
using tower::testing::check_weightless_gradients;
using tower::testing::contains;
using tower::testing::floats;
using tower::testing::message_of;
using tower::testing::run1;
using Inputs = std::vector<SymbolicTensor>;

TEST_CASE("activations: values as Keras 3 computes them") {
  const std::vector<float> x{-4.f, -2.f, -0.5f, 0.f, 0.3f, 1.f, 2.5f, 7.f};
  // Printed by keras.activations.get(name)(x.reshape(2, 4)) with Keras 3.15.
  const std::vector<std::pair<std::string, std::vector<double>>> expected{
      // Keras 3's hard_sigmoid, tower's hard_sigmoid_keras3.
      {"hard_sigmoid_keras3", {0.0, 0.16666667, 0.41666666, 0.5, 0.55, 0.66666669, 0.91666669, 1.0}},
      // Keras 2's, clip(0.2 x + 0.5, 0, 1) as tf.keras 2's backend.hard_sigmoid defines it.
      {"hard_sigmoid", {0.0, 0.1, 0.4, 0.5, 0.56, 0.7, 1.0, 1.0}},
      {"selu", {-1.72589862, -1.52016652, -0.69175816, 0.0, 0.31521031, 1.05070102, 2.62675261, 7.35490704}},
      {"softplus", {0.01814993, 0.12692800, 0.47407699, 0.69314718, 0.85435522, 1.31326163, 2.57888985, 7.00091171}},
      {"softsign", {-0.8, -0.66666669, -0.33333334, 0.0, 0.23076925, 0.5, 0.71428573, 0.875}},
      {"swish", {-0.07194484, -0.23840588, -0.18877034, 0.0, 0.17233273, 0.73105854, 2.31035447, 6.99362278}},
      {"leaky_relu", {-0.8, -0.4, -0.1, 0.0, 0.3, 1.0, 2.5, 7.0}},
      {"hard_silu", {0.0, -0.33333334, -0.20833333, 0.0, 0.165, 0.66666669, 2.29166675, 7.0}},
      {"relu6", {0.0, 0.0, 0.0, 0.0, 0.3, 1.0, 2.5, 6.0}},
      {"elu", {-0.98168439, -0.86466473, -0.39346933, 0.0, 0.3, 1.0, 2.5, 7.0}},
      {"exponential", {0.01831564, 0.13533528, 0.60653067, 1.0, 1.34985876, 2.71828175, 12.18249416, 1096.63317871}},
      {"log_softmax",
       {-4.56541729, -2.56541705, -1.06541705, -0.56541705, -6.71470976, -6.01470995, -4.51470995, -0.01470994}},
      {"softmax", {0.01040554, 0.07688712, 0.34458411, 0.56812322, 0.00121294, 0.00244256, 0.01094678, 0.98539770}},
      {"relu", {0, 0, 0, 0, 0.3, 1, 2.5, 7}},
      // 0.5 x (1 + erf(x / sqrt 2)), Keras's exact gelu (its default), from Python's math.erf.
      {"gelu", {-0.00012668, -0.04550026, -0.15426877, 0.0, 0.18537343, 0.84134475, 2.48447584, 7.0}},
      {"linear", {-4, -2, -0.5, 0, 0.3, 1, 2.5, 7}},
      {"", {-4, -2, -0.5, 0, 0.3, 1, 2.5, 7}},
  };
  for (const auto& [name, values] : expected) {
    CAPTURE(name);
    Graph g;
    auto in = g.constant(floats({2, 4}, x));
    check_close(testing::evaluate({apply_activation(name, in)})[0], values, 1e-5, 1e-6);
  }
  // Large inputs stay finite where a naive log(1 + exp(x)) overflows.
  Graph g;
  auto big = g.constant(floats({2}, {100.f, -100.f}));
  check_close(testing::evaluate({apply_activation("softplus", big)})[0], {100.0, 0.0}, 1e-6, 1e-6);
}

TEST_CASE("activations: gradients of the composed ones, and unknown names") {
  for (const char* name : {"softplus", "selu", "softsign", "swish", "hard_sigmoid", "hard_sigmoid_keras3", "hard_silu", "relu6", "gelu"}) {
    CAPTURE(name);
    check_gradients({{3, 4}}, [&](const Inputs& xs) { return Inputs{apply_activation(name, ops::scale(xs[0], 2.0))}; });
  }
  auto msg = message_of<ValueError>([] { check_activation_name("gelu_new"); });
  CHECK(contains(msg, "unknown activation \"gelu_new\""));
  CHECK(contains(msg, "relu"));
  CHECK(contains(message_of<ValueError>([] { layers::Dense(3, {.activation = "rleu"}); }), "rleu"));
}

// ---- activation layers -----------------------------------------------------------------------------

TEST_CASE("Activation, ReLU, LeakyReLU, ELU, Softmax: values as Keras") {
  const Tensor x = floats({2, 4}, {-4.f, -2.f, -0.5f, 0.f, 0.3f, 1.f, 2.5f, 7.f});
  layers::Activation tanh("tanh");
  std::vector<double> tanh_x;
  for (double v : as_doubles(x)) tanh_x.push_back(std::tanh(v));
  check_close(run1(tanh, x), tanh_x, 1e-6, 1e-6);
  CHECK(contains(message_of<ValueError>([] { layers::Activation("relu7"); }), "relu7"));

  // Printed by keras.layers.ReLU(**options)(x) with Keras 3.15.
  const std::vector<std::pair<layers::ReLUOptions, std::vector<double>>> relu_cases{
      {{}, {0, 0, 0, 0, 0.3, 1, 2.5, 7}},
      {{.max_value = 6.0}, {0, 0, 0, 0, 0.3, 1, 2.5, 6}},
      {{.threshold = 1.0}, {0, 0, 0, 0, 0, 0, 2.5, 7}},
      {{.max_value = 1.0, .negative_slope = 0.2}, {-0.8, -0.4, -0.1, 0, 0.3, 1, 1, 1}},
      {{.negative_slope = 0.1, .threshold = 1.0}, {-0.5, -0.3, -0.15, -0.1, -0.07, 0, 2.5, 7}},
      {{.max_value = 2.0, .threshold = 0.5}, {0, 0, 0, 0, 0, 1, 2, 2}},
      {{.negative_slope = 0.5}, {-2, -1, -0.25, 0, 0.3, 1, 2.5, 7}},
  };
  for (const auto& [options, expected] : relu_cases) {
    layers::ReLU relu(options);
    check_close(run1(relu, x), expected, 1e-6, 1e-6);
  }

  layers::LeakyReLU leaky;
  CHECK(leaky.negative_slope() == 0.3);
  check_close(run1(leaky, x), {-1.2, -0.6, -0.15, 0, 0.3, 1, 2.5, 7}, 1e-6, 1e-6);
  CHECK(layers::LeakyReLU({.alpha = 0.1}).negative_slope() == 0.1);
  CHECK(layers::LeakyReLU({.negative_slope = 0.2, .alpha = 0.1}).negative_slope() == 0.1);  // alpha wins, as Keras
  CHECK(layers::LeakyReLU(0.05).negative_slope() == 0.05);

  layers::ELU elu(0.5);
  std::vector<double> elu_x;
  for (double v : as_doubles(x)) elu_x.push_back(v > 0 ? v : 0.5 * (std::exp(v) - 1));
  check_close(run1(elu, x), elu_x, 1e-6, 1e-6);
  CHECK(layers::ELU().alpha() == 1.0);

  layers::Softmax softmax_rows;
  check_close(run1(softmax_rows, x),
              {0.01040554, 0.07688712, 0.34458411, 0.56812322, 0.00121294, 0.00244256, 0.01094678, 0.98539770}, 1e-5,
              1e-7);
  layers::Softmax softmax_batch({.axis = 0});  // over the first axis: each column sums to 1
  auto cols = run1(softmax_batch, x).to_vector<double>();
  for (int j = 0; j < 4; ++j) CHECK(cols[j] + cols[4 + j] == doctest::Approx(1.0));
  CHECK(cols[0] == doctest::Approx(1.0 / (1.0 + std::exp(4.3))));
}

TEST_CASE("activation layers: gradients and bad arguments") {
  layers::ReLU relu({.max_value = 0.8, .negative_slope = 0.1, .threshold = 0.05});
  // Inputs away from the kinks (|x| >= 0.1, != 0.8 by the random draw) so finite differences are exact.
  check_weightless_gradients(relu, {{3, 5}}, {.min_abs = 0.1, .max_abs = 0.75});
  layers::LeakyReLU leaky(0.2);
  check_weightless_gradients(leaky, {{3, 5}});
  layers::ELU elu(0.7);
  check_weightless_gradients(elu, {{3, 5}});
  layers::Softmax softmax({.axis = 1});
  check_weightless_gradients(softmax, {{2, 3, 4}});

  CHECK(contains(message_of<ValueError>([] { layers::ReLU({.max_value = -1.0}); }), "max_value"));
  CHECK(contains(message_of<ValueError>([] { layers::ReLU({.negative_slope = -0.1}); }), "negative_slope"));
  CHECK(contains(message_of<ValueError>([] { layers::ReLU({.threshold = -1.0}); }), "threshold"));
  auto msg = message_of<ValueError>([] { layers::LeakyReLU({.alpha = -0.3, .name = "lr"}); });
  CHECK(contains(msg, "LeakyReLU \"lr\""));
  CHECK(contains(message_of<ValueError>([] { layers::ELU(NAN); }), "alpha"));
  CHECK(contains(message_of<ValueError>([] { layers::Softmax({.axis = 2})(layers::Input({4})); }), "axis 2"));
}

TEST_CASE("PReLU: weights, values, shared_axes, gradients, configs") {
  clear_session();
  layers::PReLU prelu;
  CHECK(prelu.name() == "p_re_lu");
  CHECK(tower::testing::keras_shape(prelu, {2, 3}) == Shape{-1, 2, 3});
  REQUIRE(prelu.weights().size() == 1);
  CHECK(prelu.weights()[0]->name() == "p_re_lu/alpha:0");
  CHECK(prelu.weights()[0]->shape() == Shape{2, 3});
  check_close(prelu.weights()[0]->value(), {0, 0, 0, 0, 0, 0});  // alpha_initializer "zeros"
  prelu.set_weights({floats({2, 3}, {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f})});
  check_close(run1(prelu, floats({1, 2, 3}, {-1, 2, -3, 4, -5, 6})), {-0.1, 2, -0.9, 4, -2.5, 6}, 1e-6, 1e-6);

  // shared_axes {1}: one slope per channel of (batch, 2, 3), alpha (1, 3), as Keras.
  layers::PReLU shared({.shared_axes = {1}, .name = "shared"});
  CHECK(tower::testing::keras_shape(shared, {2, 3}) == Shape{-1, 2, 3});
  CHECK(shared.weights()[0]->shape() == Shape{1, 3});
  shared.set_weights({floats({1, 3}, {0.5f, -1.f, 2.f})});
  check_close(run1(shared, floats({1, 2, 3}, {-1, -2, -3, 4, -5, 6})), {-0.5, 2, -6, 4, 5, 6}, 1e-6, 1e-6);
  layers::PReLU all_shared({.shared_axes = {1, 2}});
  CHECK(tower::testing::keras_shape(all_shared, {4, 5}) == Shape{-1, 4, 5});
  CHECK(all_shared.weights()[0]->shape() == Shape{1, 1});

  layers::PReLU fresh({.alpha_initializer = Initializer::constant(0.25)});
  tower::testing::check_layer_gradients(fresh, {{2, 3}});
  layers::PReLU fresh_shared({.alpha_initializer = Initializer::constant(-0.5), .shared_axes = {2}});
  tower::testing::check_layer_gradients(fresh_shared, {{3, 2, 4}});

  // Config round trip, with Keras 3's form of shared_axes and alpha_constraint.
  auto config = layers::PReLU({.alpha_regularizer = regularizers::l2(0.01),
                               .alpha_constraint = constraints::non_neg(),
                               .shared_axes = {1, 2},
                               .name = "p"})
                    .get_config();
  CHECK(config["shared_axes"] == nlohmann::json::array({1, 2}));
  CHECK(config["alpha_constraint"]["class_name"] == "NonNeg");
  auto back = layers::layer_from_config({{"class_name", "PReLU"}, {"config", config}});
  CHECK(back->get_config() == config);
  auto* p = dynamic_cast<layers::PReLU*>(back.get());
  REQUIRE(p != nullptr);
  CHECK(p->options().shared_axes == std::vector<std::int64_t>{1, 2});
  CHECK(p->options().alpha_constraint.kind == Constraint::Kind::non_neg);
  CHECK(layers::PReLU().get_config()["shared_axes"].is_null());

  CHECK(contains(message_of<ValueError>([] { layers::PReLU({.shared_axes = {0}}); }), "shared_axes"));
  CHECK(contains(message_of<ValueError>([] { layers::PReLU({.shared_axes = {3}, .name = "p3"})(layers::Input({4})); }),
                 "PReLU \"p3\""));
  CHECK(contains(message_of<ShapeError>([] { layers::PReLU()(layers::Input({-1, 4})); }), "known dimensions"));
}

TEST_CASE("ThresholdedReLU: values as tf.keras 2, gradients, configs") {
  clear_session();
  const Tensor x = floats({2, 4}, {-4.f, -2.f, -0.5f, 0.f, 0.3f, 1.f, 2.5f, 7.f});
  layers::ThresholdedReLU t;
  CHECK(t.name() == "thresholded_re_lu");
  CHECK(t.theta() == 1.0);
  // tf.keras 2: x * (x > theta); x == theta gives 0.
  check_close(run1(t, x), {0, 0, 0, 0, 0, 0, 2.5, 7}, 1e-6, 1e-6);
  layers::ThresholdedReLU low({.theta = 0.3});
  check_close(run1(low, x), {0, 0, 0, 0, 0, 1, 2.5, 7}, 1e-6, 1e-6);
  layers::ThresholdedReLU zero({.theta = 0.0});
  check_close(run1(zero, x), {0, 0, 0, 0, 0.3, 1, 2.5, 7}, 1e-6, 1e-6);
  layers::ThresholdedReLU g({.theta = 0.05});
  check_weightless_gradients(g, {{3, 5}}, {.min_abs = 0.1});

  auto config = layers::ThresholdedReLU({.theta = 0.1, .name = "tr"}).get_config();
  CHECK(config["theta"] == doctest::Approx(0.1));
  auto back = layers::layer_from_config({{"class_name", "ThresholdedReLU"}, {"config", config}});
  CHECK(back->get_config() == config);
  CHECK(dynamic_cast<layers::ThresholdedReLU&>(*back).theta() == doctest::Approx(0.1));
  // A tf.keras 2 config without theta: the default 1.0.
  auto plain = layers::layer_from_config({{"class_name", "ThresholdedReLU"}, {"config", {{"name", "t2"}}}});
  CHECK(dynamic_cast<layers::ThresholdedReLU&>(*plain).theta() == 1.0);
  CHECK(contains(message_of<ValueError>([] { layers::ThresholdedReLU({.theta = -1.0, .name = "tn"}); }),
                 "ThresholdedReLU \"tn\""));
}
