// parallel::multi_gpu_model on CPU devices (label unit: no GPU needed): the towers' structure, the
// same weights as one device after training on the same global batches (ratios 1:1, 3:1, 5:2:1, a
// batch smaller than the device count, a last partial batch; mirrored and shared variables), files
// that are the inner model's, and clear errors. test_mirrored_variables.cpp tests the mirrors.
#include <doctest/doctest.h>

#include <iostream>
#include <iterator>
#include <regex>
#include <sstream>

#include "tower/core/random.h"
#include "tower/io/hdf5.h"
#include "tower/io/keras_model.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"
#include "tower/parallel/mirrored_strategy.h"
#include "tower/parallel/multi_gpu_model.h"
#include "tower/parallel/towers.h"
#include "tests/support/errors.h"
#include "tests/support/grad_check.h"
#include "tests/support/temp_dir.h"
#include "tests/parallel/tower_test_model.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::contains;
using tower::testing::message_of;
using Devices = std::vector<std::string>;

namespace {
Sequential make_model(std::uint64_t seed) { return testing::tower_test_model(seed); }
std::pair<Tensor, Tensor> data(std::int64_t n) { return testing::tower_test_data(n); }
}  // namespace

TEST_CASE("multi_gpu_model: an Input, a Lambda and a call of the same model per device, a Concatenate") {
  clear_session();
  auto model = make_model(1);
  Model parallel = parallel::multi_gpu_model(model, Devices{"cpu:0", "cpu:1", "cpu:2"});
  const auto layers = parallel.layers();
  REQUIRE(layers.size() == 6);  // input, 3 lambdas, the model, concatenate
  CHECK(layers[0]->class_name() == "InputLayer");
  CHECK(layers[1]->class_name() == "Lambda");
  CHECK(layers[4]->name() == model.name());
  CHECK(layers[5]->class_name() == "Concatenate");
  CHECK(parallel.output_names() == model.output_names());  // the inner output's name: same loss/log names
  CHECK(parallel.wrapped_model()->name() == model.name());
  CHECK(parallel.count_params() == model.count_params());  // the same weights, not copies
  const auto summary = parallel.summary_string();
  CHECK(contains(summary, "Towers: model \"" + model.name() + "\" on cpu:0, cpu:1, cpu:2"));
  CHECK(contains(summary, "Model: \"" + model.name() + "\""));  // and the inner model's own table
  // predict: the towers' outputs concatenated in order are the model's predictions.
  auto [x, y] = data(11);
  check_close(parallel.predict(x, {.batch_size = 4, .verbose = 0}), model.predict(x, {.batch_size = 4, .verbose = 0}),
              1e-6, 1e-7);
}

TEST_CASE("multi_gpu_model: training on 2 and 3 CPU devices gives one device's weights, whatever the ratios") {
  struct Case {
    Devices devices;
    std::vector<std::int64_t> ratios;
    std::int64_t samples, batch;
  };
  const std::vector<Case> cases = {
      {{"cpu:0", "cpu:1"}, {1, 1}, 20, 8},  // the last batch has 4
      {{"cpu:0", "cpu:1"}, {3, 1}, 20, 8},
      {{"cpu:0", "cpu:1", "cpu:2"}, {5, 2, 1}, 21, 8},  // last batch 5: shares 3, 1, 1
      {{"cpu:1", "cpu:2", "cpu:3"}, {1, 1, 1}, 7, 2},   // batches of 2 on 3 devices: one sits out
  };
  using parallel::CrossDeviceOps;
  // Mirrors summed on the first device, mirrors summed by all_reduce ops (the lanes meet on the host,
  // as NCCL's ranks do on GPUs), and one shared copy.
  const std::vector<std::pair<bool, CrossDeviceOps>> modes = {{true, CrossDeviceOps::reduction_to_one_device},
                                                              {true, CrossDeviceOps::all_reduce},
                                                              {false, CrossDeviceOps::automatic}};
  for (const auto& [mirrored, how] : modes)
  for (const auto& c : cases) {
    CAPTURE(mirrored);
    CAPTURE(static_cast<int>(how));
    CAPTURE(c.devices.size());
    CAPTURE(c.ratios.size() ? c.ratios[0] : 0);
    CAPTURE(c.batch);
    clear_session();
    auto [x, y] = data(c.samples);
    auto single = make_model(7);
    auto inner = make_model(7);  // the same initial weights
    Model parallel = parallel::multi_gpu_model(inner, c.devices,
                                               {.ratios = c.ratios, .mirrored = mirrored, .cross_device_ops = how});
    single.compile(optimizers::Adam(0.01), "sparse_categorical_crossentropy", {"accuracy"});
    parallel.compile(optimizers::Adam(0.01), "sparse_categorical_crossentropy", {"accuracy"});
    const FitOptions fit{.batch_size = c.batch, .epochs = 3, .verbose = 0, .shuffle = false};
    const auto h1 = single.fit(x, y, fit);
    Device& last = device(c.devices.back());  // a tower's device: its ops really ran there
    const auto allocations = last.memory_stats().allocations;
    const auto h2 = parallel.fit(x, y, fit);
    CHECK(last.memory_stats().allocations > allocations);
    for (std::size_t e = 0; e < 3; ++e) {
      CHECK(h2.history.at("loss")[e] == doctest::Approx(h1.history.at("loss")[e]).epsilon(1e-5));
      CHECK(h2.history.at("accuracy")[e] == doctest::Approx(h1.history.at("accuracy")[e]));
    }
    const auto w1 = single.get_weights(), w2 = inner.get_weights();  // the wrapper trained the inner model
    REQUIRE(w1.size() == w2.size());
    for (std::size_t i = 0; i < w1.size(); ++i) check_close(w2[i], w1[i], 1e-5, 1e-6);
    CHECK(parallel.evaluate(x, y, {.verbose = 0})[0] ==
          doctest::Approx(single.evaluate(x, y, {.verbose = 0})[0]).epsilon(1e-5));
  }
}

TEST_CASE("multi_gpu_model: an LSTM and GRU model on 2 and 3 CPU devices, uneven ratios, trains to one device's "
          "weights") {
  auto recurrent_model = [](std::uint64_t seed) {
    set_random_seed(seed);
    return Sequential({layers::Input({5, 3}), layers::LSTM(6, {.return_sequences = true}), layers::GRU(4),
                       layers::Dense(3, {.activation = "softmax"})});
  };
  Tensor x = random_normal({21, 5, 3}, 0.0, 1.0, 43);
  std::vector<std::int32_t> labels;
  for (int i = 0; i < 21; ++i) labels.push_back(i % 3);
  const Tensor y = Tensor::from_vector<std::int32_t>({21}, labels);
  for (const auto& [devices, ratios] : std::vector<std::pair<Devices, std::vector<std::int64_t>>>{
           {{"cpu:0", "cpu:1"}, {3, 1}}, {{"cpu:0", "cpu:1", "cpu:2"}, {5, 2, 1}}}) {
    CAPTURE(devices.size());
    clear_session();
    auto single = recurrent_model(11);
    auto inner = recurrent_model(11);
    Model parallel = parallel::multi_gpu_model(inner, devices, {.ratios = ratios});
    single.compile(optimizers::Adam(0.01), "sparse_categorical_crossentropy");
    parallel.compile(optimizers::Adam(0.01), "sparse_categorical_crossentropy");
    const FitOptions fit{.batch_size = 8, .epochs = 2, .verbose = 0, .shuffle = false};  // last batch: 5
    const auto h1 = single.fit(x, y, fit);
    const auto h2 = parallel.fit(x, y, fit);
    for (std::size_t e = 0; e < 2; ++e)
      CHECK(h2.history.at("loss")[e] == doctest::Approx(h1.history.at("loss")[e]).epsilon(1e-5));
    const auto w1 = single.get_weights(), w2 = inner.get_weights();
    REQUIRE(w1.size() == w2.size());
    for (std::size_t i = 0; i < w1.size(); ++i) check_close(w2[i], w1[i], 1e-5, 1e-6);
  }
}

TEST_CASE("multi_gpu_model: files through the wrapper are the inner model's; a wrapper of a wrapper unwraps") {
  clear_session();
  testing::TempDir dir("parallel");
  auto model = make_model(3);
  Model parallel = parallel::multi_gpu_model(model, Devices{"cpu:0", "cpu:1"});
  parallel.compile("sgd", "sparse_categorical_crossentropy");
  auto [x, y] = data(8);
  parallel.fit(x, y, {.batch_size = 4, .verbose = 0});
  parallel.save_weights(dir / "w.h5");
  model.save_weights(dir / "inner.h5");
  {
    auto file = io::hdf5::File::open(dir / "w.h5");
    auto inner_file = io::hdf5::File::open(dir / "inner.h5");
    CHECK(file.read_string_array_attr("layer_names") == inner_file.read_string_array_attr("layer_names"));
  }
  auto fresh = make_model(99);
  fresh.load_weights(dir / "w.h5");
  for (std::size_t i = 0; i < fresh.get_weights().size(); ++i)
    check_close(fresh.get_weights()[i], model.get_weights()[i], 0, 0);
  parallel.save(dir / "full.h5");
  Model loaded = models::load_model(dir / "full.h5");
  CHECK(loaded.name() == model.name());
  CHECK(loaded.layers().size() == model.layers().size());
  check_close(loaded.predict(x, {.verbose = 0}), model.predict(x, {.verbose = 0}), 0, 0);
  Model twice = parallel::multi_gpu_model(parallel, Devices{"cpu:2", "cpu:3", "cpu:1"});
  CHECK(twice.wrapped_model()->name() == model.name());
  CHECK(twice.layers()[4]->name() == model.name());
}

TEST_CASE("multi_gpu_model and MirroredStrategy take a braced list of device names, and ids") {
  clear_session();
  auto model = make_model(1);
  Model by_names = parallel::multi_gpu_model(model, {"cpu:0", "cpu:1"});  // not ambiguous with GPU ids
  CHECK(parallel::tower_devices(by_names) == Devices{"cpu:0", "cpu:1"});
  Model with_options = parallel::multi_gpu_model(model, {"cpu:1", "cpu:2"}, {.ratios = {2, 1}});
  CHECK(parallel::towers_of(with_options)->ratios() == std::vector<std::int64_t>{2, 1});
  CHECK(parallel::MirroredStrategy({"cpu:0", "cpu:1"}).num_replicas_in_sync() == 2);
  if (device_count(DeviceKind::cuda) == 0) {  // ids as a list and as a vector reach the GPU check
    CHECK(contains(message_of<NotFoundError>([&] { parallel::multi_gpu_model(model, {0, 1}); }), "GPU 0 does not exist"));
    const std::vector<int> ids{1};
    CHECK(contains(message_of<NotFoundError>([&] { parallel::multi_gpu_model(model, ids); }), "GPU 1 does not exist"));
  }
}

TEST_CASE("multi_gpu_model: bad devices and ratios get clear errors") {
  clear_session();
  auto model = make_model(1);
  CHECK(contains(message_of<ValueError>([&] {
                   parallel::multi_gpu_model(model, Devices{"cpu:0", "cpu:1"}, {.ratios = {1}});
                 }),
                 "1 ratios for 2 devices"));
  CHECK(contains(message_of<ValueError>([&] {
                   parallel::multi_gpu_model(model, Devices{"cpu:0", "cpu:0"});
                 }),
                 "listed twice"));
  CHECK(contains(message_of<ValueError>([&] { parallel::multi_gpu_model(model, Devices{"cpu:0"}, {.ratios = {0}}); }),
                 "at least one ratio"));
  CHECK(contains(message_of<ValueError>([&] { parallel::multi_gpu_model(model, 0); }), "at least 1"));
  if (device_count(DeviceKind::cuda) == 0) {
    const auto message = message_of<NotFoundError>([&] { parallel::multi_gpu_model(model, 2); });
    CHECK(contains(message, "GPU 0 does not exist; 0 GPU(s) are visible"));
  }
  CHECK(contains(message_of<NotFoundError>([&] { parallel::multi_gpu_model(model, Devices{"tpu:0"}); }), "tpu:0"));
}

namespace {

// What fit prints (verbose 2) while training a fresh wrapper of make_model on cpu:0 and cpu:1.
std::string fit_output(const parallel::MultiGpuOptions& options, std::int64_t samples, std::int64_t batch) {
  clear_session();
  auto model = make_model(5);
  Model parallel = parallel::multi_gpu_model(model, Devices{"cpu:0", "cpu:1"}, options);
  parallel.compile("sgd", "sparse_categorical_crossentropy");
  auto [x, y] = data(samples);
  std::ostringstream captured;
  auto* old = std::cout.rdbuf(captured.rdbuf());
  parallel.fit(x, y, {.batch_size = batch, .epochs = 2, .verbose = 2});
  std::cout.rdbuf(old);
  return captured.str();
}

}  // namespace

TEST_CASE("multi_gpu_model: fit reports each device's throughput after every epoch") {
  const std::string out = fit_output({.ratios = {3, 1}}, 32, 8);
  const std::regex line(R"(cpu:0\[6\] [1-9][0-9]* sps  cpu:1\[2\] [1-9][0-9]* sps  total\[8\] [1-9][0-9]* sps)");
  std::ptrdiff_t lines = std::distance(std::sregex_iterator(out.begin(), out.end(), line), std::sregex_iterator());
  CHECK_MESSAGE(lines == 2, out);
}

TEST_CASE("multi_gpu_model: auto ratios give a slowed device less of every batch after the first epoch") {
  Device& slow = device("cpu:1");
  slow.set_slowdown(4.0);  // a test-only throttle: cpu:1 runs at a quarter of its speed
  const std::string out = fit_output({.auto_ratios = true}, 256, 64);
  slow.set_slowdown(1.0);
  std::smatch m;
  REQUIRE_MESSAGE(std::regex_search(out, m, std::regex(R"(auto ratios: 1:1 -> (\d+):(\d+))")), out);
  CHECK(std::stoi(m[1]) > std::stoi(m[2]));  // cpu:0, the fast one, takes more
  CHECK(contains(message_of<ValueError>([&] { slow.set_slowdown(0.5); }), "factor >= 1"));
}

TEST_CASE("multi_gpu_model: BatchNormalization's moving mean follows the global batch, whatever the shares") {
  // BatchNormalization right on the input: its batch means do not depend on the weights, so the towers'
  // moving mean (their statistics averaged by rows) must equal one device's, also with an empty share.
  for (const auto& [devices, batch] : std::vector<std::pair<Devices, std::int64_t>>{
           {{"cpu:0", "cpu:1"}, 8}, {{"cpu:0", "cpu:1", "cpu:2"}, 2}}) {
    CAPTURE(devices.size());
    clear_session();
    const auto make = [] {
      set_random_seed(3);
      return Sequential({layers::Input({6}), layers::BatchNormalization(), layers::Dense(3, {.activation = "softmax"})});
    };
    auto single = make();
    auto inner = make();
    Model parallel = parallel::multi_gpu_model(inner, devices, {.ratios = std::vector<std::int64_t>(devices.size(), 1)});
    single.compile("sgd", "sparse_categorical_crossentropy");
    parallel.compile("sgd", "sparse_categorical_crossentropy");
    auto [x, y] = data(20);
    const FitOptions fit{.batch_size = batch, .epochs = 2, .verbose = 0, .shuffle = false};
    single.fit(x, y, fit);
    parallel.fit(x, y, fit);
    const auto moving_mean = [](const Sequential& m) { return m.layers()[0]->get_weights()[2]; };
    const auto moving_variance = [](const Sequential& m) { return m.layers()[0]->get_weights()[3]; };
    check_close(moving_mean(inner), moving_mean(single), 1e-5, 1e-6);
    for (float v : moving_variance(inner).to_vector<float>()) CHECK(std::isfinite(v));
  }
}

TEST_CASE("multi_gpu_model: training and evaluation compute losses and metrics per tower and gather no outputs") {
  clear_session();
  auto inner = make_model(4);
  Model parallel = parallel::multi_gpu_model(inner, Devices{"cpu:0", "cpu:1", "cpu:2"}, {.ratios = {3, 2, 1}});
  parallel.compile("sgd", "sparse_categorical_crossentropy", {"accuracy"});
  auto [x, y] = data(12);
  parallel.train_on_batch({x}, {y});
  parallel.test_on_batch({x}, {y});
  for (const auto mode : {Model::Mode::train, Model::Mode::test}) {
    const std::string plan = parallel.last_plan(mode)->to_string();
    CHECK_MESSAGE(!contains(plan, "(None, 3) float32, (None, 3) float32"), plan);  // no Concatenate of outputs
    for (const char* device : {"cpu:1 ", "cpu:2 "}) {  // each tower's own loss and accuracy
      CHECK(contains(plan, std::string(device) + "       sparse_softmax_cross_entropy"));
      CHECK(contains(plan, std::string(device) + "       argmax"));
    }
  }
  parallel.predict(x, {.verbose = 0});  // predict alone gathers the outputs
  CHECK(contains(parallel.last_plan(Model::Mode::predict)->to_string(), "concat"));
}

TEST_CASE("multi_gpu_model: every tower gets its share and its Dropout row offset before any tower computes") {
  // Lanes run their steps in plan order: were a tower's offset or share made after the towers before it
  // (as the offset once was), its lane would wait for their whole forward pass (10 % of a 2-tower CNN
  // step).
  clear_session();
  auto inner = make_model(4);
  Model parallel = parallel::multi_gpu_model(inner, Devices{"cpu:0", "cpu:1", "cpu:2"});
  parallel.compile("sgd", "sparse_categorical_crossentropy");
  auto [x, y] = data(12);
  parallel.train_on_batch({x}, {y});
  const std::string plan = parallel.last_plan(Model::Mode::train)->to_string();
  const std::size_t first_dense = plan.find(" dense ");
  REQUIRE(first_dense != std::string::npos);
  // The batch_share_start steps (not the copies of their values to the towers), and the input's shares
  // (not the labels' shares, cut after the forward pass for the towers' losses).
  for (const std::string op : {"batch_share_start \"", "batch_share \""}) {
    std::size_t steps = 0;
    for (std::size_t at = plan.find(op); at != std::string::npos && at < first_dense; at = plan.find(op, at + 1))
      ++steps;
    CHECK_MESSAGE(steps == 3, (op + "\n" + plan));
  }
}
