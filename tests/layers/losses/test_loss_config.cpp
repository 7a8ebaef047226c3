// The losses of a training_config: each loss and its options written as Keras's class_name and config
// keys (io/keras_model.cpp) and read back, and Keras 3's own configs read.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <vector>

#include "tower/io/keras_model.h"
#include "tower/layers/engine/sequential.h"
#include "tower/layers/layers.h"
#include "tower/layers/losses/losses.h"

using namespace tower;
using losses::Loss;
using losses::LossOptions;
using nlohmann::json;

namespace {

Sequential small_model() {
  return Sequential({layers::Input({3}), layers::Dense(3)});
}

// Compiles a model with `loss`, and another from the first's training_config: that one's loss.
Loss round_trip(const Loss& loss, json* written = nullptr) {
  Sequential model = small_model();
  model.compile("sgd", loss);
  const json config = io::training_config(model);
  if (written) *written = config.at("loss");
  Sequential again = small_model();
  io::compile_from_config(again, config);
  return again.compile_args().losses.at(0);
}

void check_same(const LossOptions& a, const LossOptions& b) {
  CHECK(a.from_logits == b.from_logits);
  CHECK(a.label_smoothing == b.label_smoothing);
  CHECK(a.delta == b.delta);
  CHECK(a.apply_class_balancing == b.apply_class_balancing);
  CHECK(a.alpha == b.alpha);
  CHECK(a.gamma == b.gamma);
  CHECK(a.axis == b.axis);
}

}  // namespace

TEST_CASE("loss config: every loss and its options round-trip through a training_config") {
  const std::vector<Loss> cases = {
      losses::LogCosh(),
      losses::KLDivergence(),
      losses::Poisson(),
      losses::Hinge(),
      losses::SquaredHinge(),
      losses::CategoricalHinge(),
      losses::CosineSimilarity(),
      losses::CosineSimilarity(1),
      losses::MeanAbsolutePercentageError(),
      losses::MeanSquaredLogarithmicError(),
      losses::Huber(0.5),
      losses::BinaryFocalCrossentropy(),
      losses::BinaryFocalCrossentropy(
          {.from_logits = true, .label_smoothing = 0.1, .apply_class_balancing = true, .alpha = 0.4, .gamma = 3}),
      losses::CategoricalFocalCrossentropy({.label_smoothing = 0.2, .alpha = 0.5, .gamma = 1.5}),
      losses::CategoricalCrossentropy({.from_logits = true}),
  };
  for (const auto& loss : cases) {
    CAPTURE(loss.name());
    const Loss back = round_trip(loss);
    CHECK(back.name() == loss.name());
    check_same(back.options(), loss.options());
  }
}

TEST_CASE("loss config: Keras's class names and only the keys its classes take") {
  json written;
  round_trip(losses::BinaryFocalCrossentropy({.apply_class_balancing = true, .gamma = 3}), &written);
  CHECK(written["class_name"] == "BinaryFocalCrossentropy");
  const json& c = written["config"];
  CHECK(c["reduction"] == "sum_over_batch_size");  // what tf.keras 2 and Keras 3 both accept
  for (const char* key : {"from_logits", "label_smoothing", "axis", "apply_class_balancing", "alpha", "gamma"})
    CHECK_MESSAGE(c.contains(key), key);
  CHECK(c["gamma"] == 3.0);
  round_trip(losses::CategoricalFocalCrossentropy({.alpha = 0.5}), &written);
  CHECK(written["class_name"] == "CategoricalFocalCrossentropy");
  CHECK_FALSE(written["config"].contains("apply_class_balancing"));
  round_trip(losses::CosineSimilarity(1), &written);
  CHECK(written["class_name"] == "CosineSimilarity");
  CHECK(written["config"]["axis"] == 1);
  CHECK_FALSE(written["config"].contains("from_logits"));
  round_trip(losses::Huber(0.5), &written);  // Keras's Huber refuses from_logits
  CHECK(written["class_name"] == "Huber");
  CHECK_FALSE(written["config"].contains("from_logits"));
  round_trip(losses::KLDivergence(), &written);
  CHECK(written == "kl_divergence");  // default options: the name, as Keras's compile(loss="...")
}

TEST_CASE("loss config: Keras 3's serialized losses") {
  Sequential model = small_model();
  // keras.saving.serialize_keras_object(keras.losses.BinaryFocalCrossentropy(...)), Keras 3.15.
  const json config = {
      {"optimizer_config", {{"class_name", "SGD"}, {"config", {{"learning_rate", 0.01}}}}},
      {"loss",
       {{"module", "keras.losses"},
        {"class_name", "BinaryFocalCrossentropy"},
        {"config",
         {{"name", "binary_focal_crossentropy"},
          {"reduction", "sum_over_batch_size"},
          {"from_logits", true},
          {"label_smoothing", 0.1},
          {"axis", -1},
          {"apply_class_balancing", true},
          {"alpha", 0.3},
          {"gamma", 1.0}}},
        {"registered_name", nullptr}}}};
  io::compile_from_config(model, config);
  const Loss& loss = model.compile_args().losses.at(0);
  CHECK(loss.name() == "binary_focal_crossentropy");
  check_same(loss.options(),
             {.from_logits = true, .label_smoothing = 0.1, .apply_class_balancing = true, .alpha = 0.3, .gamma = 1.0});
  json kld = config;
  kld["loss"] = {{"module", "keras.losses"},
                 {"class_name", "KLDivergence"},
                 {"config", {{"name", "kl_divergence"}, {"reduction", "sum_over_batch_size"}}},
                 {"registered_name", nullptr}};
  io::compile_from_config(model, kld);
  CHECK(model.compile_args().losses.at(0).name() == "kl_divergence");
  kld["loss"] = "logcosh";  // tf.keras 2's name
  io::compile_from_config(model, kld);
  CHECK(model.compile_args().losses.at(0).name() == "log_cosh");
}
