// Mixed precision as Keras 3: policies (global, per layer, in configs), autocast of inputs and weights,
// BatchNormalization and the losses in float32, compile's LossScaleOptimizer, training under both
// policies, files. Numbers against Keras: tests/golden/test_golden_mixed_precision.cpp.
#include <doctest/doctest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "tower/io/keras_model.h"
#include "tower/layers/layers.h"
#include "tower/layers/registry.h"
#include "tower/optimizers/optimizers.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"
#include "tests/support/policy_scope.h"
#include "tests/support/temp_dir.h"

using namespace tower;
using nlohmann::json;
using tower::testing::contains;
using tower::testing::message_of;
using tower::testing::PolicyScope;
using tower::testing::random_tensor;

namespace {

Tensor labels(int n, int classes) {
  std::vector<std::int32_t> v;
  for (int i = 0; i < n; ++i) v.push_back(i % classes);
  return Tensor::from_vector<std::int32_t>({n}, v);
}

Sequential small_convnet() {
  return Sequential({layers::Input({8, 8, 2}), layers::Conv2D(4, {3, 3}, {.activation = "relu"}),
                     layers::BatchNormalization(), layers::MaxPooling2D({2, 2}), layers::Flatten(),
                     layers::Dense(8, {.activation = "relu"}), layers::Dense(3), layers::Activation("softmax")});
}
}  // namespace

TEST_CASE("mixed precision: policies by name, the global policy, Keras's properties") {
  CHECK(mixed_precision::global_policy().name() == "float32");
  const DTypePolicy mixed("mixed_float16");
  CHECK(mixed.compute_dtype() == DType::float16);
  CHECK(mixed.variable_dtype() == DType::float32);
  CHECK(DTypePolicy("mixed_bfloat16").compute_dtype() == DType::bfloat16);
  CHECK(DTypePolicy(DType::float64).name() == "float64");
  CHECK(contains(message_of<ValueError>([] { DTypePolicy("int8_from_float32"); }), "not supported"));
  PolicyScope scope("mixed_bfloat16");
  CHECK(mixed_precision::global_policy().name() == "mixed_bfloat16");
  layers::Dense dense(4);
  CHECK(dense.dtype_policy().name() == "mixed_bfloat16");
  CHECK(dense.dtype() == DType::float32);
  CHECK(dense.compute_dtype() == DType::bfloat16);
}

TEST_CASE("mixed precision: float32 variables, half outputs; BatchNormalization and softmax as Keras 3") {
  clear_session();
  for (const char* policy : {"mixed_float16", "mixed_bfloat16"}) {
    INFO(policy);
    PolicyScope scope(policy);
    const DType half = DTypePolicy(policy).compute_dtype();
    Sequential model = small_convnet();
    for (const auto& w : model.weights()) CHECK(w->dtype() == DType::float32);
    // Keras 3: every layer's output is in the compute dtype, the softmax's too (Keras casts it to float32
    // only in the loss); BatchNormalization computes in float32 and casts back.
    // Each layer call from the output back to the Input (which stays float32).
    int calls = 0;
    for (KerasTensor t = model.outputs()[0]; t.defined() && !t.node()->inputs.empty(); t = t.node()->inputs[0]) {
      INFO(t.layer().name());
      CHECK(t.dtype() == half);
      ++calls;
    }
    CHECK(calls == 7);
    CHECK(model.inputs()[0].dtype() == DType::float32);
    const Tensor x = random_tensor({6, 8, 8, 2}, 3, 0.1, 1.0, false, DType::float32);
    const Tensor p = model.predict(x);
    CHECK(p.dtype() == half);
    double total = 0;
    for (float v : p.to_vector<float>()) total += v;
    CHECK(total == doctest::Approx(6.0).epsilon(1e-2));  // rows of probabilities, in half precision
  }
}

TEST_CASE("mixed precision: compile wraps the optimizer in a LossScaleOptimizer under mixed_float16 only") {
  clear_session();
  {
    PolicyScope scope("mixed_float16");
    Sequential model = small_convnet();
    model.compile("sgd", "sparse_categorical_crossentropy");
    const auto* lso = dynamic_cast<const optimizers::LossScaleOptimizer*>(&model.optimizer());
    REQUIRE(lso != nullptr);
    CHECK(lso->inner_optimizer().name() == "SGD");
    CHECK(lso->initial_scale() == 32768.0);
    CHECK(lso->dynamic_growth_steps() == 2000);
    // One given explicitly is kept.
    model.compile(optimizers::LossScaleOptimizer(optimizers::Adam(1e-3), {.initial_scale = 8.0}), "mse");
    CHECK(dynamic_cast<const optimizers::LossScaleOptimizer&>(model.optimizer()).initial_scale() == 8.0);
  }
  {
    PolicyScope scope("mixed_bfloat16");
    Sequential model = small_convnet();
    model.compile("sgd", "sparse_categorical_crossentropy");
    CHECK(model.optimizer().name() == "SGD");
  }
}

TEST_CASE("mixed precision: configs read and write the policy as Keras does") {
  clear_session();
  for (const char* dtype : {R"("mixed_float16")", R"({"class_name": "Policy", "config": {"name": "mixed_float16"}})",
                            R"({"module": "keras", "class_name": "DTypePolicy", "config": {"name": "mixed_float16"},
                                "registered_name": null})"}) {
    INFO(dtype);
    auto dense = layers::layer_from_config(
        json::parse(std::string(R"({"class_name": "Dense", "config": {"name": "d16", "units": 2, "dtype": )") + dtype + "}}"));
    CHECK(dense->dtype_policy().name() == "mixed_float16");
    CHECK(dense->get_config()["dtype"] == json::parse(R"({"class_name": "Policy", "config": {"name": "mixed_float16"}})"));
    clear_session();
  }
  CHECK(layers::Dense(2).get_config()["dtype"] == "float32");
  CHECK(contains(message_of<ValueError>([] {
                   layers::layer_from_config(json::parse(
                       R"({"class_name": "Dense", "config": {"name": "q", "units": 2, "dtype": "int8_from_mixed_bfloat16"}})"));
                 }),
                 "dtype"));
}

TEST_CASE("mixed precision: per-layer policies; a float32 softmax layer as the Keras guide recommends") {
  clear_session();
  auto in = layers::Input({4});
  layers::Dense dense(3);
  dense.set_dtype_policy("mixed_float16");
  auto h = dense(in);
  CHECK(h.dtype() == DType::float16);
  layers::Activation softmax("softmax");
  softmax.set_dtype_policy("float32");
  auto out = softmax(h);  // its float16 input is cast to float32
  CHECK(out.dtype() == DType::float32);
  Model model(in, out);
  CHECK(model.predict(random_tensor({2, 4}, 1, 0.1, 1.0, false, DType::float32)).dtype() == DType::float32);
  CHECK(contains(message_of<ValueError>([&] { dense.set_dtype_policy("float32"); }), "after it was built"));
}

TEST_CASE("mixed precision: a convnet trains under both policies, and saves and loads with its policy and loss scale") {
  clear_session();
  const Tensor x = random_tensor({32, 8, 8, 2}, 5, 0.1, 1.0, false, DType::float32);
  const Tensor y = labels(32, 3);
  for (const char* policy : {"mixed_float16", "mixed_bfloat16"}) {
    INFO(policy);
    PolicyScope scope(policy);
    Sequential model = small_convnet();
    model.compile(optimizers::Adam(1e-2), "sparse_categorical_crossentropy", {"accuracy"});
    const auto history = model.fit(x, y, {.batch_size = 8, .epochs = 8, .verbose = 0});
    const auto& losses = history.history.at("loss");
    for (double loss : losses) CHECK(std::isfinite(loss));
    CHECK(losses.back() < losses.front());
    testing::TempDir dir("mixed");
    const std::string path = (dir.path / "m.h5").string();
    model.save(path);
    mixed_precision::set_global_policy("float32");  // the file says which policy each layer has
    Model loaded = models::load_model(path);
    for (const auto& layer : loaded.layers()) CHECK(layer->dtype_policy().name() == policy);
    for (const auto& w : loaded.weights()) CHECK(w->dtype() == DType::float32);
    CHECK(loaded.predict(x).to_vector<float>() == model.predict(x).to_vector<float>());
    if (std::string(policy) == "mixed_float16") {
      const auto& a = dynamic_cast<const optimizers::LossScaleOptimizer&>(model.optimizer());
      const auto& b = dynamic_cast<const optimizers::LossScaleOptimizer&>(loaded.optimizer());
      CHECK(b.dynamic_scale() == a.dynamic_scale());
      CHECK(b.step_counter() == a.step_counter());
      // 8 epochs of 4 steps. The first steps may overflow at the initial scale 2^15 (Keras's too): each
      // skipped step halves the scale, so skipped + applied = 32, and the counter counts the good steps
      // since the last skip (no growth in 32 steps of dynamic_growth_steps = 2000).
      const double skipped = std::log2(32768.0 / a.dynamic_scale());
      MESSAGE("steps applied " << a.applied_steps() << ", scale " << a.dynamic_scale() << ", counter "
                               << a.step_counter());
      CHECK(skipped == std::round(skipped));
      CHECK(skipped <= 4);
      CHECK(a.applied_steps() + skipped == 32);
      CHECK(a.step_counter() <= a.applied_steps());
      CHECK(a.step_counter() > 0);
    }
  }
}
