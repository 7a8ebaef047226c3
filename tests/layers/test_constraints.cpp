// Weight constraints (layers/constraints.h): Keras's MaxNorm, NonNeg, UnitNorm and MinMaxNorm values,
// their configs, and their application after each training step.
#include <doctest/doctest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "tower/core/executor.h"
#include "tower/layers/constraints.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tower/optimizers/optimizers.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"

using namespace tower;
using nlohmann::json;
using tower::testing::check_close;
using tower::testing::contains;
using tower::testing::floats;
using tower::testing::message_of;

namespace {
// The constraint's value of w, computed by its graph on the CPU.
Tensor constrained(const Constraint& c, const Tensor& w) {
  Graph graph;
  Executor executor(cpu_device());
  return executor.run({}, {c(graph.constant(w))})[0];
}
}  // namespace

TEST_CASE("constraints: values as Keras 3 computes them") {
  const Tensor w = floats({2, 3}, {1, -2, 0.5, 3, 0.1, -1});
  // Printed by keras.constraints.<Class>(...)(w) with Keras 3.15.
  check_close(constrained(constraints::max_norm(), w),
              {0.63245553, -1.99750471, 0.49999994, 1.89736652, 0.09987523, -0.99999988}, 1e-6, 1e-7);
  check_close(constrained(constraints::max_norm(1.5), w),
              {0.47434163, -1.49812853, 0.49999994, 1.42302489, 0.07490643, -0.99999988}, 1e-6, 1e-7);
  check_close(constrained(constraints::max_norm(1.0, {1}), w),
              {0.43643576, -0.87287152, 0.21821788, 0.94820935, 0.03160698, -0.31606978}, 1e-6, 1e-7);
  check_close(constrained(constraints::non_neg(), w), {1, 0, 0.5, 3, 0.1, 0}, 1e-6, 1e-7);
  check_close(constrained(constraints::unit_norm(), w),
              {0.31622776, -0.99875236, 0.44721353, 0.94868326, 0.04993762, -0.89442706}, 1e-6, 1e-7);
  check_close(constrained(constraints::unit_norm({0, 1}), w),
              {0.25598985, -0.5119797, 0.12799492, 0.76796955, 0.02559898, -0.25598985}, 1e-6, 1e-7);
  check_close(constrained(constraints::min_max_norm(), w),
              {0.31622776, -0.99875236, 0.44721353, 0.94868326, 0.04993762, -0.89442706}, 1e-6, 1e-7);
  check_close(constrained(constraints::min_max_norm(0.5, 2.5, 0.7, {1}), w),
              {1.0, -2.0, 0.5, 2.55936623, 0.08531221, -0.85312206}, 1e-6, 1e-7);
  check_close(constrained(Constraint{}, w), {1, -2, 0.5, 3, 0.1, -1});  // none: w itself
  CHECK(contains(message_of<ValueError>([&] { constrained(constraints::unit_norm({2}), w); }), "axis 2"));
}

TEST_CASE("constraints: configs in every spelling, round trips, errors") {
  for (const Constraint& c : {constraints::max_norm(1.5), constraints::max_norm(2.0, {0, 1, 2}), constraints::non_neg(),
                              constraints::unit_norm({-1}), constraints::min_max_norm(0.1, 0.9, 0.5, {1})}) {
    const json config = c.get_config();
    CHECK(config["module"] == "keras.constraints");
    const Constraint back = Constraint::from_config(config);
    CHECK(back.get_config() == config);
    CHECK(back.kind == c.kind);
    CHECK(back.axis == c.axis);
  }
  CHECK(Constraint{}.get_config().is_null());
  CHECK(!Constraint::from_config(nullptr).defined());
  // As Keras 3 writes them.
  auto m = Constraint::from_config(json::parse(
      R"({"module": "keras.constraints", "class_name": "MaxNorm", "config": {"max_value": 2, "axis": 0}, "registered_name": null})"));
  CHECK(m.kind == Constraint::Kind::max_norm);
  CHECK(m.max_value == 2.0);
  CHECK(m.axis == std::vector<std::int64_t>{0});
  CHECK(constraints::max_norm().get_config()["config"] == json({{"max_value", 2.0}, {"axis", 0}}));
  CHECK(constraints::unit_norm({0, 1}).get_config()["config"]["axis"] == json::array({0, 1}));
  // By name, with Keras's defaults; Keras 2's aliases and class names.
  auto mm = Constraint::from_config("min_max_norm");
  CHECK(mm.kind == Constraint::Kind::min_max_norm);
  CHECK(mm.min_value == 0.0);
  CHECK(mm.max_value == 1.0);
  CHECK(mm.rate == 1.0);
  CHECK(Constraint::from_config("max_norm").max_value == 2.0);
  CHECK(Constraint::from_config("maxnorm").kind == Constraint::Kind::max_norm);
  CHECK(Constraint::from_config("non_neg").kind == Constraint::Kind::non_neg);
  CHECK(Constraint::from_config("NonNeg").kind == Constraint::Kind::non_neg);
  CHECK(Constraint::from_config("unit_norm").kind == Constraint::Kind::unit_norm);
  CHECK(Constraint::from_config(json{{"class_name", "UnitNorm"}, {"config", {{"axis", 1}}}}).axis ==
        std::vector<std::int64_t>{1});

  CHECK(contains(message_of<ValueError>([] { Constraint::from_config("radial"); }), "radial"));
  CHECK(contains(message_of<ValueError>([] { Constraint::from_config(3); }), "constraint"));
  CHECK(contains(message_of<ValueError>([] {
                   Constraint::from_config(json{{"class_name", "MaxNorm"}, {"config", {{"max_value", "big"}}}});
                 }),
                 "max_value"));
  CHECK(contains(message_of<ValueError>([] {
                   Constraint::from_config(json{{"class_name", "MaxNorm"}, {"config", {{"axis", 0.5}}}});
                 }),
                 "axis"));
}

TEST_CASE("constraints: applied to the weights after each training step") {
  clear_session();
  Sequential model({layers::Input({4}),
                    layers::Dense(3, {.kernel_initializer = Initializer::constant(1.0),
                                      .bias_initializer = Initializer::constant(-0.5),
                                      .kernel_constraint = constraints::max_norm(0.5),
                                      .bias_constraint = constraints::non_neg(),
                                      .name = "d"}),
                    layers::PReLU({.alpha_initializer = Initializer::constant(-2.0),
                                   .alpha_constraint = constraints::min_max_norm(0.5, 1.0, 1.0, {0}),
                                   .name = "p"})});
  auto d = model.get_layer("d");
  auto p = model.get_layer("p");
  // Not applied when weights are created or set (as Keras): only after an optimizer update.
  check_close(d->weights()[0]->value(), std::vector<double>(12, 1.0));
  model.compile(optimizers::SGD(0.01), "mse");
  const Tensor x = floats({2, 4}, {1, 2, 3, 4, -1, 0.5, 2, 1});
  const Tensor y = floats({2, 3}, {0, 1, 2, 1, 0, -1});
  for (int step = 0; step < 2; ++step) {
    model.train_on_batch({x}, {y});
    auto kernel = d->weights()[0]->value().to_vector<double>();  // (4, 3)
    for (int j = 0; j < 3; ++j) {
      double norm = 0;
      for (int i = 0; i < 4; ++i) norm += kernel[i * 3 + j] * kernel[i * 3 + j];
      CHECK(std::sqrt(norm) <= 0.5 + 1e-6);
      if (step == 0) CHECK(std::sqrt(norm) == doctest::Approx(0.5));  // 2 before: scaled down to max_value
    }
    for (double b : d->weights()[1]->value().to_vector<double>()) CHECK(b >= 0.0);
    // alpha (3,), axis 0: the norm of all three slopes clipped into [0.5, 1].
    double alpha_norm = 0;
    for (double a : p->weights()[0]->value().to_vector<double>()) alpha_norm += a * a;
    CHECK(std::sqrt(alpha_norm) == doctest::Approx(1.0).epsilon(1e-5));
  }
  // Not applied by evaluation or prediction.
  d->set_weights({floats({4, 3}, std::vector<float>(12, 2.0f)), floats({3}, {-1, -1, -1})});
  model.predict_on_batch({x});
  model.test_on_batch({x}, {y});
  check_close(d->weights()[0]->value(), std::vector<double>(12, 2.0));
  // A model rebuilt from its config keeps the constraints.
  auto config = model.get_config();
  CHECK(config.dump().find("MaxNorm") != std::string::npos);
  CHECK(config.dump().find("MinMaxNorm") != std::string::npos);
}

TEST_CASE("constraints: Conv1D, Embedding, the normalizations and the recurrent layers take theirs") {
  clear_session();
  // Every weight starts negative and non_neg holds each at >= 0 after a step.
  const Initializer minus = Initializer::constant(-0.3);
  auto in = layers::Input({5}, {.dtype = DType::int32});
  auto e = layers::Embedding(7, 4, {.embeddings_initializer = minus, .embeddings_constraint = constraints::non_neg(),
                                    .name = "emb"})(in);
  auto c = layers::Conv1D(3, 2, {.kernel_initializer = minus, .bias_initializer = minus,
                                 .kernel_constraint = constraints::non_neg(), .bias_constraint = constraints::non_neg(),
                                 .name = "conv"})(e);
  auto b = layers::BatchNormalization({.beta_initializer = minus, .gamma_initializer = minus,
                                       .beta_constraint = constraints::non_neg(),
                                       .gamma_constraint = constraints::non_neg(), .name = "bn"})(c);
  auto l = layers::LayerNormalization({.beta_initializer = minus, .gamma_initializer = minus,
                                       .beta_constraint = constraints::non_neg(),
                                       .gamma_constraint = constraints::non_neg(), .name = "ln"})(b);
  auto r = layers::LSTM(2, {.kernel_initializer = minus, .recurrent_initializer = minus,
                            .kernel_constraint = constraints::non_neg(),
                            .recurrent_constraint = constraints::non_neg(), .bias_constraint = constraints::non_neg(),
                            .name = "lstm"})(l);
  Model model(in, r);
  model.compile(optimizers::SGD(0.01), "mse");
  const Tensor x = Tensor::from_vector<std::int32_t>({2, 5}, {1, 2, 3, 4, 5, 6, 0, 1, 2, 3});
  model.train_on_batch({x}, {floats({2, 2}, {1, -1, 0.5, 2})});
  for (const auto& w : model.trainable_weights()) {
    INFO(w->name());
    for (double v : w->value().to_vector<double>()) CHECK(v >= 0.0);
  }
  // The configs carry them, and a model rebuilt from its config keeps them.
  for (const char* name : {"emb", "conv", "bn", "ln", "lstm"}) {
    INFO(name);
    CHECK(model.get_layer(name)->get_config().dump().find("NonNeg") != std::string::npos);
  }
  // A layer that takes no constraint still refuses one, naming the field.
  json dropout_config = layers::Dropout(0.5).get_config();
  dropout_config["kernel_constraint"] = constraints::non_neg().get_config();
  CHECK(contains(message_of<ValueError>(
                     [&] { layers::layer_from_config({{"class_name", "Dropout"}, {"config", dropout_config}}); }),
                 "kernel_constraint"));
}
