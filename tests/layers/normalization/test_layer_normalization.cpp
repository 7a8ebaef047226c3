// LayerNormalization: values and gradients as Keras 3.15 computes them, several axes, options, masks,
// configs and errors.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tower/core/ops.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tests/layers/keras_reference.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::check_layer_gradients;
using tower::testing::contains;
using tower::testing::keras_shape;
using tower::testing::message_of;
using tower::testing::one_plus_seq;
using tower::testing::run_with_gradients;
using tower::testing::seq;

namespace {

// Printed by tests/layers/keras_reference.py layer_norm (Keras 3.15, TF 2.21): LayerNormalization() on
// x = seq((2, 3, 4), 0.7, 0.1, 2) with gamma = 1 + seq((4,), 0.9, 0.3, 0.5), beta = seq((4,), 1.1, 0.5, 0.1),
// then LayerNormalization(axis=[1, 2], epsilon=0.01, center=False) with gamma = 1 + seq((3, 4), 0.9, 0.3, 0.5);
// gradients of sum(y * seq(y.shape, 0.45, 0.2)) by tf.GradientTape.
  const std::vector<double> ln_y{-1.8462207, 0.36785316, 1.494813, 0.42407441, 1.8512738, 0.33389437, -1.1327641, -1.0350089, -1.6309592, -0.40741569, 1.0145804, 1.1485515, 1.6040108, 0.79950607, -0.76096243, -1.422425, -1.3727998, -0.76754731, 0.67971718, 1.4211544, 1.2901995, 1.1455801, -0.39271635, -1.6578174};
  const std::vector<double> ln_dx{0.012440979, -0.073675714, 0.020241559, 0.040993065, -0.15800059, 0.35393, 0.17439952, -0.37032914, 0.15669475, -0.21665458, -0.1909042, 0.25086397, 0.023228467, -0.044215634, 0.021591514, -0.0006043911, -0.21833746, 0.19836426, 0.19244489, -0.17247167, 0.23058721, -0.13767022, -0.24324107, 0.15032408};
  const std::vector<double> ln_dgamma{0.26875055, -0.3391785, 0.49947903, 1.0422482};
  const std::vector<double> ln_dbeta{0.98644024, 0.89355332, 0.62275463, 0.2279619};
  const std::vector<double> ln2_y{-0.0882366, 1.1918427, 1.7417783, 1.0109435, 0.08137323, -0.43085331, -1.1166546, -1.8521885, -1.4899789, -0.075346559, 0.8813439, 0.7918883, 1.2880274, 0.38761777, -1.0731763, -1.5447909, -0.97731048, -0.43537351, 0.094774351, 1.196924, 2.0881736, 1.5799582, 0.2548573, -0.50172901};
  const std::vector<double> ln2_dx{0.14698964, 0.48502347, 0.70292962, 0.59675008, 0.38164276, 0.33358383, 0.33287874, 0.04514724, -0.52067494, -0.94139504, -0.92207491, -0.64080024, -0.45944765, -0.28722009, 0.058469221, 0.22922982, 0.16897498, 0.18716499, 0.43441039, 0.60683227, 0.36462644, -0.15912072, -0.53283119, -0.61108845};
  const std::vector<double> ln2_dgamma{-0.72368664, 0.43090636, 0.92303699, 0.051648974, -1.2258857, -1.4148794, -0.25067869, 0.97854066, 0.93743241, -0.19996242, -0.97962093, -0.40692103};

}  // namespace

TEST_CASE("LayerNormalization: weights, values and gradients as Keras 3") {
  clear_session();
  layers::LayerNormalization ln;
  CHECK(ln.name() == "layer_normalization");
  CHECK(keras_shape(ln, {3, 4}) == Shape{-1, 3, 4});
  REQUIRE(ln.weights().size() == 2);
  CHECK(ln.weights()[0]->name() == "layer_normalization/gamma:0");
  CHECK(ln.weights()[1]->name() == "layer_normalization/beta:0");
  CHECK(ln.weights()[0]->shape() == Shape{4});
  ln.set_weights({one_plus_seq({4}, 0.9, 0.3, 0.5), seq({4}, 1.1, 0.5, 0.1)});
  const Tensor x = seq({2, 3, 4}, 0.7, 0.1, 2.0);
  auto run = run_with_gradients(ln, {x});
  check_close(run.outputs[0], ln_y, 1e-5, 1e-6);
  check_close(run.input_grads[0], ln_dx, 1e-4, 2e-6);
  check_close(run.weight_grads[0], ln_dgamma, 1e-5, 1e-6);
  check_close(run.weight_grads[1], ln_dbeta, 1e-5, 1e-6);

  // Two axes, one weight of their shape, no beta.
  layers::LayerNormalization ln2({.axis = {1, 2}, .epsilon = 0.01, .center = false});
  CHECK(keras_shape(ln2, {3, 4}) == Shape{-1, 3, 4});
  REQUIRE(ln2.weights().size() == 1);
  CHECK(ln2.weights()[0]->shape() == Shape{3, 4});
  ln2.set_weights({one_plus_seq({3, 4}, 0.9, 0.3, 0.5)});
  run = run_with_gradients(ln2, {x});
  check_close(run.outputs[0], ln2_y, 1e-5, 1e-6);
  check_close(run.input_grads[0], ln2_dx, 1e-4, 2e-6);
  check_close(run.weight_grads[0], ln2_dgamma, 1e-5, 1e-6);

  // Finite differences too (the middle axis alone: gamma reshaped to broadcast).
  layers::LayerNormalization middle({.axis = {-2}, .beta_initializer = Initializer::random_normal(0.0, 0.3),
                                     .gamma_initializer = Initializer::random_normal(1.0, 0.3)});
  check_layer_gradients(middle, {{2, 3, 4}});
  CHECK(middle.weights()[0]->shape() == Shape{3});
  layers::LayerNormalization plain({.center = false, .scale = false});
  check_layer_gradients(plain, {{2, 5}});
  CHECK(plain.weights().empty());
}

TEST_CASE("LayerNormalization: the mask passes on; configs; errors") {
  clear_session();
  layers::LayerNormalization ln;
  CHECK(ln.supports_masking());
  Graph g;
  auto x = g.placeholder({-1, 3, 4});
  auto mask = g.placeholder({-1, 3});
  CHECK(ln.compute_mask({x}, {mask}).at(0).node() == mask.node());

  // tf.keras's spelling: axis as given until built, then the non-negative list.
  CHECK(ln.get_config()["axis"] == -1);
  CHECK(ln.get_config()["epsilon"] == 1e-3);
  keras_shape(ln, {3, 4});
  CHECK(ln.get_config()["axis"] == nlohmann::json::array({2}));
  auto rebuilt = layers::layer_from_config({{"class_name", "LayerNormalization"}, {"config", ln.get_config()}});
  CHECK(rebuilt->get_config()["axis"] == nlohmann::json::array({2}));
  // Keras 3's config (axis a list, rms_scaling false, a DTypePolicy) reads; rms_scaling true is refused.
  auto k3 = nlohmann::json::parse(R"({"name": "ln3", "trainable": true, "dtype": {"module": "keras",
      "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}, "axis": [-1],
      "epsilon": 0.001, "center": true, "scale": false, "rms_scaling": false, "beta_initializer": {"module":
      "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name": null}, "gamma_initializer":
      {"module": "keras.initializers", "class_name": "Ones", "config": {}, "registered_name": null},
      "beta_regularizer": null, "gamma_regularizer": null, "beta_constraint": null, "gamma_constraint": null})");
  auto from3 = layers::LayerNormalization::from_config(k3);
  CHECK(keras_shape(*from3, {5}) == Shape{-1, 5});
  CHECK(from3->weights().size() == 1);  // beta only
  k3["rms_scaling"] = true;
  CHECK(contains(message_of<ValueError>([&] { layers::LayerNormalization::from_config(k3); }), "rms_scaling"));

  CHECK(contains(message_of<ValueError>([] { keras_shape(layers::LayerNormalization({.axis = {0}}), {3}); }),
                 "batch axis"));
  CHECK(contains(message_of<ValueError>([] { keras_shape(layers::LayerNormalization({.axis = {3}}), {3}); }),
                 "out of range"));
  CHECK_THROWS_AS(layers::LayerNormalization({.epsilon = 0}), ValueError);
}
