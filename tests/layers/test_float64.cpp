// float64 models: set_floatx(float64) as keras.config.set_floatx("float64"), layer dtypes from configs,
// autocast of inputs, training. Numbers against Keras: the golden test "conv_family as a float64 model".
#include <doctest/doctest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "tower/io/keras_model.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tower/optimizers/optimizers.h"
#include "tests/layers/layer_testing.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"
#include "tests/support/temp_dir.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::contains;
using tower::testing::message_of;
using tower::testing::random_tensor;

namespace {
// Restores floatx when a test ends, even on failure.
struct FloatxScope {
  explicit FloatxScope(DType dtype) { set_floatx(dtype); }
  ~FloatxScope() { set_floatx(DType::float32); }
};
}  // namespace

TEST_CASE("float64 models: set_floatx makes float64 layers that train and predict in float64") {
  clear_session();
  FloatxScope scope(DType::float64);
  Sequential model({layers::Input({4}), layers::Dense(8, {.activation = "tanh"}), layers::BatchNormalization(),
                    layers::Dense(3, {.activation = "softmax"})});
  for (const auto& w : model.weights()) CHECK(w->dtype() == DType::float64);
  CHECK(model.layers()[0]->get_config()["dtype"] == "float64");
  for (const char* optimizer : {"sgd", "adam", "rmsprop"}) {
    INFO(optimizer);
    model.compile(optimizer, "sparse_categorical_crossentropy", {"accuracy"});
    const Tensor x = random_tensor({16, 4}, 3);  // float64
    std::vector<std::int32_t> labels;
    for (int i = 0; i < 16; ++i) labels.push_back(i % 3);
    const Tensor y = Tensor::from_vector<std::int32_t>({16}, labels);
    const auto history = model.fit(x, y, {.batch_size = 8, .epochs = 3, .verbose = 0});
    for (double loss : history.history.at("loss")) CHECK(std::isfinite(loss));
    CHECK(model.predict(x).dtype() == DType::float64);
    for (const auto& w : model.weights()) CHECK(w->dtype() == DType::float64);
  }
  // Saved and loaded (with floatx back at float32): the layers stay float64, as their configs say.
  testing::TempDir dir("float64");
  const std::string path = (dir.path / "m64.h5").string();
  model.save(path);
  set_floatx(DType::float32);
  Model loaded = models::load_model(path);
  for (const auto& w : loaded.weights()) CHECK(w->dtype() == DType::float64);
  const Tensor x = random_tensor({5, 4}, 9);
  check_close(loaded.predict(x), model.predict(x).to_vector<double>(), 0, 0);
}

TEST_CASE("float64 models: layer dtypes from configs; float32 inputs cast; unknown dtypes refused") {
  clear_session();
  auto dense = layers::layer_from_config(nlohmann::json::parse(
      R"({"class_name": "Dense", "config": {"name": "d64", "units": 2, "dtype": "float64"}})"));
  CHECK(dense->dtype() == DType::float64);
  // Keras 3's policy form.
  auto conv = layers::layer_from_config(nlohmann::json::parse(R"({"class_name": "Conv2D", "config": {"name": "c64",
      "filters": 2, "kernel_size": 3, "dtype": {"module": "keras", "class_name": "DTypePolicy",
      "config": {"name": "float64"}, "registered_name": null}}})"));
  CHECK(conv->dtype() == DType::float64);
  // A float32 input to a float64 layer is cast, as Keras's autocast does.
  auto in = layers::Input({3});
  auto y = (*dense)(in);
  CHECK(y.dtype() == DType::float64);
  CHECK(dense->weights()[0]->dtype() == DType::float64);
  // Half dtypes are policies now (tests/layers/test_mixed_precision.cpp); unknown ones are refused.
  CHECK(contains(message_of<ValueError>([] {
                   layers::layer_from_config(nlohmann::json::parse(
                       R"({"class_name": "Dense", "config": {"name": "d8", "units": 2, "dtype": "int8"}})"));
                 }),
                 "int8"));
  CHECK(contains(message_of<ValueError>([] { set_floatx(DType::int32); }), "float32 or float64"));
  CHECK(floatx() == DType::float32);
}
