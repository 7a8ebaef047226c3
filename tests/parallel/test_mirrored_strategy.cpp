// parallel::MirroredStrategy on CPU devices (label unit): models compiled under its scope train as
// towers with mirrored variables and give one device's results; its scope nests and ends.
#include <doctest/doctest.h>

#include <iostream>
#include <regex>
#include <sstream>

#include "tower/core/device.h"
#include "tower/core/random.h"
#include "tower/io/dataset.h"
#include "tower/layers/layers.h"
#include "tower/parallel/towers.h"
#include "tower/optimizers/optimizers.h"
#include "tower/parallel/mirrored_strategy.h"
#include "tests/parallel/tower_test_model.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::contains;
using tower::testing::message_of;

namespace {

// No BatchNormalization: its per-tower batch statistics differ from one device's (as in Keras).
Sequential make_model(std::uint64_t seed) { return testing::tower_test_model(seed); }
std::pair<Tensor, Tensor> data(std::int64_t n) { return testing::tower_test_data(n); }

}  // namespace

TEST_CASE("MirroredStrategy: a model compiled under its scope trains on every device and gives one device's result") {
  clear_session();
  parallel::MirroredStrategy strategy({"cpu:1", "cpu:2", "cpu:3"});
  CHECK(strategy.num_replicas_in_sync() == 3);
  auto single = make_model(4);
  single.compile(optimizers::Adam(0.01), "sparse_categorical_crossentropy", {"accuracy"});
  Sequential model = [&] {
    auto scope = strategy.scope();
    CHECK(current_strategy() != nullptr);
    auto m = make_model(4);  // the same initial values as `single`
    m.compile(optimizers::Adam(0.01), "sparse_categorical_crossentropy", {"accuracy"});
    return m;
  }();
  CHECK(current_strategy() == nullptr);  // the scope ended
  CHECK(default_device().name() == "cpu:0");
  for (const auto& w : model.weights()) CHECK(w->device().name() == "cpu:1");  // made on the first device

  auto [x, y] = data(26);  // batches of 9: shares 3, 3, 3; the last batch of 8: 3, 3, 2
  const FitOptions fit{.batch_size = 9, .epochs = 3, .verbose = 0, .shuffle = false};
  const auto h1 = single.fit(x, y, fit);
  Device& last = device("cpu:3");
  const auto allocations = last.memory_stats().allocations;
  const auto h2 = model.fit(x, y, fit);
  CHECK(last.memory_stats().allocations > allocations);  // a tower ran there
  CHECK(parallel::tower_devices(model) == strategy.devices());
  CHECK(parallel::mirrors(model).size() == 2);  // cpu:2 and cpu:3; cpu:1 holds the variables
  for (std::size_t e = 0; e < 3; ++e)
    CHECK(h2.history.at("loss")[e] == doctest::Approx(h1.history.at("loss")[e]).epsilon(1e-5));
  const auto w1 = single.get_weights(), w2 = model.get_weights();
  for (std::size_t i = 0; i < w1.size(); ++i) check_close(w2[i].to(cpu_device()), w1[i], 1e-5, 1e-6);
  CHECK(model.evaluate(x, y, {.verbose = 0})[0] == doctest::Approx(single.evaluate(x, y, {.verbose = 0})[0]).epsilon(1e-5));
  check_close(model.predict(x, {.verbose = 0}), single.predict(x, {.verbose = 0}), 1e-5, 1e-6);
  CHECK(model.wrapped_model() == nullptr);  // the model is itself: it saves and summarises as it is

  // Compiled again outside the scope, it keeps the strategy it was made under (as TensorFlow does).
  model.compile(optimizers::Adam(0.01), "sparse_categorical_crossentropy", {"accuracy"});
  const auto before_recompiled = last.memory_stats().allocations;
  model.fit(x, y, fit);
  CHECK(parallel::tower_devices(model) == strategy.devices());
  CHECK(last.memory_stats().allocations > before_recompiled);  // the towers ran again

  // Without its replication, it trains on its own device.
  model.set_replication(nullptr);
  const auto copies_before = last.memory_stats().allocations;
  model.fit(x, y, fit);
  CHECK(parallel::tower_devices(model).empty());
  CHECK(last.memory_stats().allocations == copies_before);  // no tower on cpu:3 any more
}

TEST_CASE("MirroredStrategy: a model made under the scope and compiled outside it trains as towers") {
  clear_session();
  parallel::MirroredStrategy strategy({"cpu:1", "cpu:2"});
  Sequential model = [&] {
    auto scope = strategy.scope();
    return make_model(5);
  }();
  model.compile("sgd", "sparse_categorical_crossentropy");  // outside the scope
  Device& second = device("cpu:2");
  const auto before = second.memory_stats().allocations;
  auto [x, y] = data(16);
  model.fit(x, y, {.batch_size = 8, .epochs = 1, .verbose = 0});
  CHECK(parallel::tower_devices(model) == strategy.devices());
  CHECK(second.memory_stats().allocations > before);  // a tower ran on cpu:2
}

TEST_CASE("MirroredStrategy: a Sequential without an Input builds from the first batch under the strategy") {
  clear_session();
  parallel::MirroredStrategy strategy({"cpu:0", "cpu:1"});
  Sequential model;
  {
    auto scope = strategy.scope();
    set_random_seed(9);
    model = Sequential({layers::Dense(6, {.activation = "tanh"}), layers::Dense(3, {.activation = "softmax"})});
    model.compile("sgd", "sparse_categorical_crossentropy");
  }
  auto [x, y] = data(16);
  const auto history = model.fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0});
  CHECK(std::isfinite(history.history.at("loss")[1]));
  CHECK(parallel::tower_devices(model).size() == 2);
}

TEST_CASE("MirroredStrategy: fit on a dataset reports each device from the first epoch") {
  clear_session();
  parallel::MirroredStrategy strategy({"cpu:0", "cpu:1"}, {.ratios = {3, 1}});
  Sequential model = [&] {
    auto scope = strategy.scope();
    auto m = make_model(2);
    m.compile("sgd", "sparse_categorical_crossentropy");
    return m;
  }();
  auto [x, y] = data(32);
  std::ostringstream captured;
  auto* old = std::cout.rdbuf(captured.rdbuf());
  model.fit(io::Dataset::from_tensor_slices({x}, {y}).batch(8), {.epochs = 2, .verbose = 2});
  std::cout.rdbuf(old);
  const std::string out = captured.str();
  const std::regex line(R"(cpu:0\[6\] [1-9][0-9]* sps  cpu:1\[2\] [1-9][0-9]* sps  total\[8\] [1-9][0-9]* sps)");
  CHECK_MESSAGE(std::distance(std::sregex_iterator(out.begin(), out.end(), line), std::sregex_iterator()) == 2, out);
}

TEST_CASE("MirroredStrategy: scopes nest, and bad devices get clear errors") {
  parallel::MirroredStrategy outer({"cpu:0"}), inner({"cpu:1", "cpu:2"});
  {
    auto a = outer.scope();
    {
      auto b = inner.scope();
      CHECK(default_device().name() == "cpu:1");
    }
    CHECK(default_device().name() == "cpu:0");
    CHECK(current_strategy() != nullptr);
  }
  CHECK(current_strategy() == nullptr);
  if (device_count(DeviceKind::cuda) == 0) CHECK(parallel::MirroredStrategy().devices() == std::vector<std::string>{"cpu:0"});
  CHECK(contains(message_of<ValueError>([] { parallel::MirroredStrategy(std::vector<std::string>{}); }), "at least one device"));
  CHECK(contains(message_of<NotFoundError>([] { parallel::MirroredStrategy({"cuda:7"}); }), "cuda:7"));
  CHECK(contains(message_of<ValueError>([] { parallel::MirroredStrategy({"cpu:1", "cpu:1"}); }), "listed twice"));
}
