// Model parallelism by placement (issue 38, part 1): layers built under DefaultDeviceScope keep their
// weights on that device, and fit / evaluate / predict run each layer where its weights live, the plan
// copying activations and gradients between devices and each variable updated on its own device.
#include <doctest/doctest.h>

#include <filesystem>

#include "tests/support/errors.h"
#include "tests/support/grad_check.h"
#include "tests/support/temp_dir.h"
#include "tower/io/keras_model.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"
#include "tower/parallel/mirrored_strategy.h"
#include "tower/parallel/multi_gpu_model.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::contains;
using tower::testing::message_of;
using tower::testing::TempDir;

namespace placement_test {

// Input(6) -> Dense(16, relu) -> Dense(8, tanh) -> Dropout-free Dense(3, softmax), each Dense built on
// devices[i] (one device: the same model where it always ran).
Model three_dense(const std::vector<std::string>& devices) {
  clear_session();
  set_random_seed(7);
  const auto on = [&](std::size_t i) { return DefaultDeviceScope(devices[i % devices.size()]); };
  KerasTensor input = layers::Input({6});
  KerasTensor x;
  {
    auto scope = on(0);
    x = layers::Dense(16, {.activation = "relu", .name = "d1"})(input);
  }
  {
    auto scope = on(1);
    x = layers::Dense(8, {.activation = "tanh", .name = "d2"})(layers::Activation("linear")(x));
  }
  {
    auto scope = on(2);
    x = layers::Dense(3, {.activation = "softmax", .name = "d3"})(x);
  }
  return Model(input, x, "placed");
}

std::pair<Tensor, Tensor> data() {
  std::vector<std::int32_t> labels;
  for (int i = 0; i < 24; ++i) labels.push_back(i % 3);
  return {random_normal({24, 6}, 0, 1, 3), Tensor::from_vector<std::int32_t>({24}, labels)};
}

std::vector<Tensor> host_weights(const Model& m) {
  std::vector<Tensor> out;
  for (const auto& w : m.weights()) out.push_back(w->value().to(cpu_device()));
  return out;
}

}  // namespace placement_test

using namespace placement_test;

TEST_CASE("placement: a model whose layers live on three CPU devices trains to the one-device weights") {
  const std::vector<std::string> spread = {"cpu:1", "cpu:2", "cpu:3"};
  for (const char* optimizer : {"sgd", "adam"}) {
    CAPTURE(optimizer);
    auto [x, y] = data();
    Model one = three_dense({"cpu:0"});
    one.compile(optimizers::get(optimizer), "sparse_categorical_crossentropy", {"accuracy"});
    Model placed = three_dense(spread);
    placed.compile(optimizers::get(optimizer), "sparse_categorical_crossentropy", {"accuracy"});
    // The weights (and the optimizer's slots, made beside them) stay where they were built.
    for (std::size_t i = 0; i < 3; ++i)
      for (const auto& w : placed.get_layer("d" + std::to_string(i + 1))->weights())
        CHECK_MESSAGE(w->value().device().name() == spread[i], w->name());
    const auto a = one.fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0, .shuffle = false});
    const auto b = placed.fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0, .shuffle = false});
    CHECK(b.history.at("loss").back() == doctest::Approx(a.history.at("loss").back()).epsilon(1e-6));
    const auto wa = host_weights(one), wb = host_weights(placed);
    REQUIRE(wa.size() == wb.size());
    for (std::size_t i = 0; i < wa.size(); ++i) check_close(wb[i], wa[i], 1e-5, 1e-6);
    for (const auto& slot : placed.optimizer().variables())
      CHECK_MESSAGE(slot->device().name() != "cpu:0", slot->name());
    check_close(placed.predict(x, {.verbose = 0}).to(cpu_device()), one.predict(x, {.verbose = 0}).to(cpu_device()),
                1e-5, 1e-6);
    const Logs ea = one.evaluate(x, y, {.verbose = 0}), eb = placed.evaluate(x, y, {.verbose = 0});
    CHECK(eb[0] == doctest::Approx(ea[0]).epsilon(1e-6));
  }
}

TEST_CASE("placement: a placed model saves as a one-device model, and its file loads onto any placement") {
  TempDir dir("placement");
  auto [x, y] = data();
  Model placed = three_dense({"cpu:1", "cpu:2", "cpu:3"});
  placed.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
  placed.fit(x, y, {.batch_size = 8, .epochs = 1, .verbose = 0});
  placed.save(dir / "placed.h5");
  Model loaded = models::load_model(dir / "placed.h5");  // onto the default device
  for (const auto& w : loaded.weights()) CHECK(w->value().device().name() == "cpu:0");
  check_close(loaded.predict(x, {.verbose = 0}).to(cpu_device()), placed.predict(x, {.verbose = 0}).to(cpu_device()),
              1e-6, 1e-6);
  Model again = three_dense({"cpu:2", "cpu:1"});  // another placement takes the same weights
  again.load_weights(dir / "placed.h5");
  check_close(again.predict(x, {.verbose = 0}).to(cpu_device()), placed.predict(x, {.verbose = 0}).to(cpu_device()),
              1e-6, 1e-6);
}

TEST_CASE("placement: a placed Sequential trains like one on one device; towers refuse a placed model") {
  auto [x, y] = data();
  const auto sequential = [](const std::vector<std::string>& devices) {
    clear_session();
    set_random_seed(11);
    Sequential m;
    m.add(layers::Input({6}));
    {
      DefaultDeviceScope on(devices.front());
      m.add(layers::Dense(12, {.activation = "relu"}));
      m.add(layers::Dropout(0.0));
    }
    {
      DefaultDeviceScope on(devices.back());
      m.add(layers::Dense(3, {.activation = "softmax"}));
    }
    return m;
  };
  Model one = sequential({"cpu:0"}), placed = sequential({"cpu:2", "cpu:1"});
  one.compile(optimizers::SGD(0.05), "sparse_categorical_crossentropy");
  placed.compile(optimizers::SGD(0.05), "sparse_categorical_crossentropy");
  one.fit(x, y, {.batch_size = 6, .epochs = 2, .verbose = 0, .shuffle = false});
  placed.fit(x, y, {.batch_size = 6, .epochs = 2, .verbose = 0, .shuffle = false});
  const auto wa = host_weights(one), wb = host_weights(placed);
  for (std::size_t i = 0; i < wa.size(); ++i) check_close(wb[i], wa[i], 1e-5, 1e-6);
  CHECK(placed.layers()[0]->weights()[0]->value().device().name() == "cpu:2");
  CHECK(placed.layers()[2]->weights()[0]->value().device().name() == "cpu:1");

  // Towers run a whole copy of a model on each device: a placed model is refused by name, a model
  // built on one device is wrapped as before.
  const std::string refused = message_of<ValueError>(
      [&] { parallel::multi_gpu_model(sequential({"cpu:2", "cpu:1"}), {"cpu:4", "cpu:5"}); });
  CHECK_MESSAGE(contains(refused, "is placed on several devices"), refused);
  CHECK_MESSAGE(contains(refused, "on cpu:2"), refused);
  CHECK_MESSAGE(contains(refused, "on cpu:1"), refused);
  Model towers = parallel::multi_gpu_model(sequential({"cpu:0"}), {"cpu:4", "cpu:5"});
  towers.compile(optimizers::SGD(0.05), "sparse_categorical_crossentropy");
  towers.fit(x, y, {.batch_size = 6, .epochs = 2, .verbose = 0, .shuffle = false});
  const auto tw = host_weights(towers);
  for (std::size_t i = 0; i < wa.size(); ++i) check_close(tw[i], wa[i], 1e-5, 1e-6);
}

TEST_CASE("placement: a model placed on several devices under MirroredStrategy's scope is refused by name") {
  // Its towers would each run the whole model from one mirror set per variable (it trained to other
  // weights than the unplaced model, silently, before this refusal).
  auto [x, y] = data();
  parallel::MirroredStrategy strategy({"cpu:1", "cpu:2"});
  Model m = [&] {
    auto scope = strategy.scope();
    clear_session();
    KerasTensor input = layers::Input({6});
    KerasTensor h = layers::Dense(4, {.name = "first"})(input);  // on cpu:1, the strategy's first device
    DefaultDeviceScope elsewhere("cpu:3");
    KerasTensor out = layers::Dense(3, {.activation = "softmax", .name = "elsewhere"})(h);
    Model model(input, out);
    model.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
    return model;
  }();
  const std::string msg = message_of<ValueError>([&] { m.fit(x, y, {.batch_size = 8, .epochs = 1, .verbose = 0}); });
  CHECK_MESSAGE(contains(msg, "towers: model \"" + m.name() + "\" is placed on several devices"), msg);
  CHECK_MESSAGE(contains(msg, "on cpu:3"), msg);
}
