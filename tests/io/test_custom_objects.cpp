// Keras's custom_objects: a user's layer class, loss and metric named in a saved file load back through
// load_model(path, custom_objects), io::model_from_json(json, custom_objects), CustomObjectScope and
// register_layer / register_loss / register_metric; without them, the error says how to supply them.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "tower/core/error.h"
#include "tower/core/ops.h"
#include "tower/io/keras_model.h"
#include "tower/io/model_config.h"
#include "tower/layers/layer_config.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tests/support/errors.h"
#include "tests/support/temp_dir.h"

using namespace tower;
using tower::testing::contains;
using tower::testing::message_of;
using tower::testing::TempDir;

namespace {

// A layer class of the user's own, as a Keras user writes one: y = x * scale + offset, with one weight
// "scale" (features,) and one argument, offset, that its config carries.
class ScaleShift : public Layer {
 public:
  explicit ScaleShift(double offset, const std::string& name = "") : Layer(name, "scale_shift"), offset_(offset) {}

  void build(const std::vector<Shape>& input_shapes) override {
    add_weight("scale", {input_shapes.at(0).dim(-1)}, Initializer::random_uniform(0.5, 1.5));  // (features,)
  }
  std::vector<SymbolicTensor> call(CallContext& ctx, const std::vector<SymbolicTensor>& inputs) override {
    const SymbolicTensor& x = inputs.at(0);  // (batch, features)
    auto y = ops::multiply(x, read(ctx, weight("scale")));
    return {ops::add(y, ops::fill_like(y, offset_))};
  }
  std::shared_ptr<Layer> share() const override { return std::make_shared<ScaleShift>(*this); }
  std::string class_name() const override { return "ScaleShift"; }
  nlohmann::json get_config() const override { return layers::layer_config(*this, {{"offset", offset_}}); }
  static LayerPtr from_config(const nlohmann::json& config) {
    layers::ConfigReader r(config, "ScaleShift");
    return r.finish(ScaleShift(r.number("offset", 0.0), r.name()));
  }

 private:
  double offset_;
};

Tensor inputs(std::int64_t n) {
  std::vector<float> v;
  for (std::int64_t i = 0; i < n * 4; ++i) v.push_back(static_cast<float>((i * 7) % 11) / 5.0f - 1.0f);
  return Tensor::from_vector<float>({n, 4}, v);
}

Tensor targets(std::int64_t n) {
  std::vector<float> v;
  for (std::int64_t i = 0; i < n * 2; ++i) v.push_back(static_cast<float>((i * 3) % 5) / 4.0f);
  return Tensor::from_vector<float>({n, 2}, v);
}

Model model_with_custom_layer() {
  auto x = layers::Input({4});
  auto h = layers::Dense(3, {.activation = "tanh"})(x);
  h = ScaleShift(0.25, "shift")(h);
  auto y = layers::Dense(2)(h);
  return Model(x, y, "custom");
}

// The user's loss and metric: per-sample values (batch,).
SymbolicTensor scaled_mse(const SymbolicTensor& y_true, const SymbolicTensor& y_pred) {
  return ops::scale(ops::mean_squared_error(y_true, y_pred), 3.0);
}
SymbolicTensor worst_error(const SymbolicTensor& y_true, const SymbolicTensor& y_pred) {
  return ops::reduce_max(ops::abs(ops::subtract(y_true, y_pred)), {-1});
}

}  // namespace

TEST_CASE("custom_objects: a model with the user's layer class loads with custom_objects and with register_layer") {
  TempDir dir("custom_layer");
  Model model = model_with_custom_layer();
  const Tensor x = inputs(5);
  const auto expected = model.predict(x).to_vector<float>();
  const std::string path = dir.file("custom.h5");
  model.save(path);

  // Without the class: the error names it and says how to supply it.
  auto msg = message_of<NotFoundError>([&] { models::load_model(path); });
  CHECK(contains(msg, "\"ScaleShift\""));
  CHECK(contains(msg, "\"shift\""));
  CHECK(contains(msg, "custom_objects"));
  CHECK(contains(msg, "layers::register_layer(\"ScaleShift\""));
  CHECK(contains(msg, "Dense"));  // the supported classes are still listed

  // custom_objects: a name -> factory map, for this call only.
  int built = 0;
  const CustomObjects custom{.layers = {{"ScaleShift", [&](const nlohmann::json& config) {
                                           ++built;
                                           return ScaleShift::from_config(config);
                                         }}}};
  Model loaded = models::load_model(path, custom);
  CHECK(built == 1);
  CHECK(loaded.get_layer("shift")->class_name() == "ScaleShift");
  CHECK(loaded.get_layer("shift")->get_config()["offset"] == 0.25);
  CHECK(loaded.predict(x).to_vector<float>() == expected);
  CHECK_THROWS_AS(models::load_model(path), NotFoundError);  // the custom objects were for that call only
  // Keras's call spelled in C++: load_model(path, custom_objects={"ScaleShift": ScaleShift}).
  Model braced = models::load_model(path, {.layers = {{"ScaleShift", &ScaleShift::from_config}}});
  CHECK(braced.predict(x).to_vector<float>() == expected);
  CHECK(io::model_from_json(model.to_json(), {.layers = {{"ScaleShift", &ScaleShift::from_config}}}).count_params() ==
        model.count_params());

  // The architecture alone, from JSON, and a CustomObjectScope around the plain calls.
  Model from_json = io::model_from_json(model.to_json(), custom);
  CHECK(from_json.get_layer("shift")->class_name() == "ScaleShift");
  from_json.set_weights(model.get_weights());
  CHECK(from_json.predict(x).to_vector<float>() == expected);
  {
    CustomObjectScope scope(custom);
    CHECK(models::load_model(path).predict(x).to_vector<float>() == expected);
    CHECK(io::model_from_config(io::model_to_config(model)).count_params() == model.count_params());
  }
  CHECK(built == 4);

  // Registered once, the class loads everywhere in the process.
  layers::register_layer("ScaleShift", &ScaleShift::from_config);
  CHECK(models::load_model(path).predict(x).to_vector<float>() == expected);
  CHECK(layers::custom_layer_names() == std::vector<std::string>{"ScaleShift"});
  const auto builtin = layers::registered_layer_names();
  CHECK(std::find(builtin.begin(), builtin.end(), "ScaleShift") == builtin.end());
  // Keras 3 writes a registered class's registered_name beside its class name.
  auto entry = nlohmann::json{{"class_name", "Renamed"}, {"registered_name", "ScaleShift"},
                              {"config", {{"name", "s2"}, {"offset", 1.5}}}};
  CHECK(layers::layer_from_config(entry)->get_config()["offset"] == 1.5);
  // A user's factory gets the config as written (tower's Keras 1 renames, such as init ->
  // kernel_initializer, are for its own classes).
  const nlohmann::json written = {{"name", "probe"}, {"init", "ones"}, {"p", 0.5}, {"offset", 2.0}};
  nlohmann::json seen;
  {
    CustomObjectScope scope({.layers = {{"Custom>Probe", [&](const nlohmann::json& config) {
                                           seen = config;
                                           return ScaleShift::from_config(config);
                                         }}}});
    layers::layer_from_config({{"class_name", "Probe"}, {"registered_name", "Custom>Probe"}, {"config", written}});
  }
  CHECK(seen == written);

  CHECK(contains(message_of<ValueError>([] { layers::register_layer("ScaleShift", &ScaleShift::from_config); }),
                 "already registered"));
  CHECK(contains(message_of<ValueError>([] { layers::register_layer("Dense", &ScaleShift::from_config); }),
                 "one of tower's own layer classes"));
  CHECK(contains(message_of<ValueError>([] { layers::register_layer("Other", nullptr); }), "empty"));
  auto null_factory = CustomObjects{.layers = {{"ScaleShift", [](const nlohmann::json&) { return LayerPtr(); }}}};
  CHECK(contains(message_of<ValueError>([&] { models::load_model(path, null_factory); }), "returned no layer"));

  // custom_objects win over tower's own classes for their call, as in Keras.
  int dense = 0;
  CustomObjects replace_dense{.layers = {{"Dense", [&](const nlohmann::json& config) {
                                            ++dense;
                                            return layers::Dense::from_config(config);
                                          }}}};
  CHECK(models::load_model(path, replace_dense).predict(x).to_vector<float>() == expected);
  CHECK(dense == 2);
}

TEST_CASE("custom_objects: the user's loss and metric by name in a saved training_config") {
  TempDir dir("custom_loss");
  const Tensor x = inputs(8), y = targets(8);
  Model model = [] {
    auto in = layers::Input({4});
    return Model(in, layers::Dense(2)(layers::Dense(3, {.activation = "relu"})(in)), "trained");
  }();
  model.compile("sgd", losses::Loss(scaled_mse, "scaled_mse"), {metrics::Metric(worst_error, "worst_error")});
  model.fit(x, y, {.batch_size = 4, .epochs = 2, .verbose = 0});
  const Logs score = model.evaluate(x, y, {.verbose = 0});
  REQUIRE(score.size() == 2);
  const std::string path = dir.file("trained.h5");
  model.save(path);

  // Without the loss: the error names it and says how to supply it; compile = false still loads.
  auto msg = message_of<ValueError>([&] { models::load_model(path); });
  CHECK(contains(msg, "\"scaled_mse\""));
  CHECK(contains(msg, "custom_objects"));
  CHECK(contains(msg, "losses::register_loss(\"scaled_mse\""));
  CHECK_FALSE(models::load_model(path, {.compile = false}).compiled());
  msg = message_of<ValueError>([&] { models::load_model(path, {.losses = {{"scaled_mse", scaled_mse}}}); });
  CHECK(contains(msg, "\"worst_error\""));
  CHECK(contains(msg, "metrics::register_metric(\"worst_error\""));

  auto check_loaded = [&](Model loaded) {
    REQUIRE(loaded.compiled());
    const Logs again = loaded.evaluate(x, y, {.verbose = 0});
    REQUIRE(again.size() == 2);
    CHECK(again.entries()[0].first == "loss");
    CHECK(again.entries()[1].first == "worst_error");
    CHECK(again[0] == doctest::Approx(score[0]).epsilon(1e-6));
    CHECK(again[1] == doctest::Approx(score[1]).epsilon(1e-6));
    loaded.fit(x, y, {.batch_size = 4, .epochs = 1, .verbose = 0});  // the functions outlive the load call
  };
  check_loaded(models::load_model(
      path, CustomObjects{.losses = {{"scaled_mse", scaled_mse}}, .metrics = {{"worst_error", worst_error}}}));

  // Registered once: load_model finds them, and compile takes them by name.
  losses::register_loss("scaled_mse", scaled_mse);
  metrics::register_metric("worst_error", worst_error);
  check_loaded(models::load_model(path));
  Model by_name = model_with_custom_layer();  // its ScaleShift builds from the class itself
  by_name.compile("sgd", "scaled_mse", {"worst_error", "mae"});
  CHECK(by_name.evaluate(inputs(4), targets(4), {.verbose = 0}).size() == 3);
  CHECK(losses::Loss("scaled_mse").name() == "scaled_mse");

  CHECK(contains(message_of<ValueError>([] { losses::register_loss("scaled_mse", scaled_mse); }),
                 "already registered"));
  CHECK(contains(message_of<ValueError>([] { losses::register_loss("MSE", scaled_mse); }), "tower's own losses"));
  CHECK(contains(message_of<ValueError>([] { metrics::register_metric("acc", worst_error); }), "tower's own"));
  CHECK(contains(message_of<ValueError>([] { metrics::register_metric("huber", worst_error); }), "tower's own"));
  // Built-in names keep their meaning.
  CHECK(losses::Loss("mse").name() == "mean_squared_error");
  CHECK(metrics::Metric("accuracy").name() == "accuracy");

  // Keras 3 writes a plain function loss as {"class_name": "function", "config": "<name>"}.
  auto config = io::training_config(model);
  config["loss"] = {{"module", "builtins"}, {"class_name", "function"}, {"config", "scaled_mse"},
                    {"registered_name", "function"}};
  Model recompiled = model_with_custom_layer();
  io::compile_from_config(recompiled, config);
  CHECK(recompiled.compiled());
}
