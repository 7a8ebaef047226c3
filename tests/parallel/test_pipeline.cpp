// Pipeline stages (issue 38, part 2): parallel::pipeline_model cuts a model into consecutive stages on
// CPU devices and each batch into micro-batches (GPipe); a step equals one device's step on the same
// batch, BatchNormalization's statistics are per micro-batch, the file is the one-device file.
#include <doctest/doctest.h>

#include <cmath>

#include "tests/support/errors.h"
#include "tests/support/grad_check.h"
#include "tests/support/temp_dir.h"
#include "tower/core/executor.h"
#include "tower/io/keras_model.h"
#include "tower/layers/layers.h"
#include "tower/optimizers/optimizers.h"
#include "tower/parallel/pipeline_model.h"

using namespace tower;
using tower::testing::check_close;
using tower::testing::contains;
using tower::testing::message_of;
using tower::testing::TempDir;

namespace pipeline_test {

// Input(6) -> Dense(16, relu) "a" -> Dropout(0.25) -> Dense(12, tanh) "b" -> Dense(8, relu) "c" ->
// Dense(3, softmax) "d", the same weights for the same seed.
Model mlp() {
  clear_session();
  set_random_seed(5);
  Sequential m;
  m.add(layers::Input({6}));
  m.add(layers::Dense(16, {.activation = "relu", .name = "a"}));
  m.add(layers::Dropout(0.25));
  m.add(layers::Dense(12, {.activation = "tanh", .name = "b"}));
  m.add(layers::Dense(8, {.activation = "relu", .name = "c"}));
  m.add(layers::Dense(3, {.activation = "softmax", .name = "d"}));
  return m;
}

// 26 samples: with batch 8 the last batch has 2 rows, fewer than 4 micro-batches (two are empty).
std::pair<Tensor, Tensor> data() {
  std::vector<std::int32_t> labels;
  for (int i = 0; i < 26; ++i) labels.push_back(i % 3);
  return {random_normal({26, 6}, 0, 1, 9), Tensor::from_vector<std::int32_t>({26}, labels)};
}

std::vector<Tensor> host_weights(const Model& m) {
  std::vector<Tensor> out;
  for (const auto& w : m.weights()) out.push_back(w->value().to(cpu_device()));
  return out;
}

void check_same_weights(const Model& actual, const Model& expected, double tolerance) {
  const auto a = host_weights(actual), e = host_weights(expected);
  REQUIRE(a.size() == e.size());
  for (std::size_t i = 0; i < a.size(); ++i) check_close(a[i], e[i], tolerance, tolerance);
}

const FitOptions kFit{.batch_size = 8, .epochs = 2, .verbose = 0, .shuffle = false};

}  // namespace pipeline_test

using namespace pipeline_test;

TEST_CASE("pipeline: K stages and M micro-batches train to one device's weights (SGD 1e-5, Adam 1e-5)") {
  auto [x, y] = data();
  for (const char* optimizer : {"sgd", "adam"}) {
    Model one = mlp();
    one.compile(optimizers::get(optimizer), "sparse_categorical_crossentropy", {"accuracy"});
    const auto expected = one.fit(x, y, kFit);
    struct Case {
      std::vector<std::string> devices;
      int micro_batches;
    };
    for (const Case& c : {Case{{"cpu:1", "cpu:2"}, 1}, Case{{"cpu:1", "cpu:2"}, 4}, Case{{"cpu:3", "cpu:1", "cpu:2"}, 3}}) {
      CAPTURE(optimizer);
      CAPTURE(c.devices.size());
      CAPTURE(c.micro_batches);
      Model inner = mlp();
      Model piped = parallel::pipeline_model(inner, c.devices, {.micro_batches = c.micro_batches});
      piped.compile(optimizers::get(optimizer), "sparse_categorical_crossentropy", {"accuracy"});
      auto meter = std::make_shared<parallel::StageMeter>();  // as fit's own, which prints after each epoch
      FitOptions fit = kFit;
      fit.callbacks = {meter};
      const auto got = piped.fit(x, y, fit);
      CHECK(got.history.at("loss").back() == doctest::Approx(expected.history.at("loss").back()).epsilon(1e-5));
      REQUIRE(meter->idle().size() == c.devices.size());
      for (double idle : meter->idle()) CHECK((idle >= 0 && idle <= 1));
      const double gpipe = 100.0 * (c.devices.size() - 1) / (c.micro_batches + c.devices.size() - 1);
      CHECK_MESSAGE(contains(meter->line(), "stages: " + c.devices[0] + " idle "), meter->line());
      CHECK_MESSAGE(contains(meter->line(), "(GPipe: " + std::to_string(std::lround(gpipe)) + " %)"), meter->line());
      CHECK(got.history.at("accuracy").back() == doctest::Approx(expected.history.at("accuracy").back()));
      check_same_weights(inner, one, 1e-5);
      // Every stage's device ran a lane of its own, and each weight and slot lives on its stage's device.
      CHECK(piped.last_plan(Model::Mode::train)->num_lanes() >= static_cast<int>(c.devices.size()));
      for (const auto& stage : parallel::pipeline_of(piped)->stages())
        for (const auto& name : stage.layers)
          for (const auto& w : inner.get_layer(name)->weights()) CHECK_MESSAGE(w->device().name() == stage.device, w->name());
      for (const auto& slot : piped.optimizer().variables()) CHECK_MESSAGE(slot->device().name() != "cpu:0", slot->name());
      check_close(piped.predict(x, {.verbose = 0}).to(cpu_device()), one.predict(x, {.verbose = 0}).to(cpu_device()),
                  1e-5, 1e-6);
      CHECK(piped.evaluate(x, y, {.verbose = 0})[0] == doctest::Approx(one.evaluate(x, y, {.verbose = 0})[0]).epsilon(1e-5));
    }
  }
}

TEST_CASE("pipeline: a model trained on one device goes on as a pipeline (weights and slots move)") {
  auto [x, y] = data();
  Model one = mlp();
  one.compile(optimizers::Adam(0.01), "sparse_categorical_crossentropy");
  one.fit(x, y, kFit);
  one.fit(x, y, kFit);
  Model inner = mlp();
  inner.compile(optimizers::Adam(0.01), "sparse_categorical_crossentropy");
  inner.fit(x, y, kFit);  // its plans and Adam's slots are on cpu:0 now
  Model piped = parallel::pipeline_model(inner, {"cpu:2", "cpu:1"}, {.micro_batches = 2});  // compiled as inner is
  piped.fit(x, y, kFit);
  check_same_weights(inner, one, 1e-5);
  for (const auto& slot : inner.optimizer().variables()) CHECK_MESSAGE(slot->device().name() != "cpu:0", slot->name());
  // The inner model runs placed (its engine graphs were built again), without micro-batches.
  inner.fit(x, y, kFit);
  one.fit(x, y, kFit);
  check_same_weights(inner, one, 1e-5);
}

TEST_CASE("pipeline: a functional model with a connection that skips a stage; the file is the one-device file") {
  TempDir dir("pipeline");
  auto [x, y] = data();
  const auto skip = [] {
    clear_session();
    set_random_seed(21);
    KerasTensor input = layers::Input({6}, {.name = "x"});
    KerasTensor h = layers::Dense(10, {.activation = "relu", .name = "h"})(input);
    KerasTensor g = layers::Dense(10, {.activation = "tanh", .name = "g"})(h);
    KerasTensor sum = layers::Add()({h, g});  // h crosses from stage 1 to stage 3
    KerasTensor f = layers::Dense(10, {.activation = "relu", .name = "f"})(sum);
    KerasTensor out = layers::Dense(3, {.activation = "softmax", .name = "out"})(layers::Concatenate()({f, h}));
    return Model(input, out);
  };
  Model one = skip();
  one.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
  one.fit(x, y, kFit);
  Model inner = skip();
  Model piped = parallel::pipeline_model(inner, {"cpu:1", "cpu:2", "cpu:3"}, {.micro_batches = 3, .cuts = {"g", "f"}});
  piped.compile(optimizers::SGD(0.1), "sparse_categorical_crossentropy");
  piped.fit(x, y, kFit);
  check_same_weights(inner, one, 1e-5);
  const auto stages = parallel::pipeline_of(piped)->stages();
  REQUIRE(stages.size() == 3);
  CHECK(stages[0].layers == std::vector<std::string>{"h"});
  CHECK(stages[2].layers.back() == "out");

  piped.save(dir / "piped.h5");  // the inner model's file: loads onto one device with the same outputs
  Model loaded = models::load_model(dir / "piped.h5");
  CHECK(loaded.name() == inner.name());
  for (const auto& w : loaded.weights()) CHECK(w->device().name() == "cpu:0");
  check_close(loaded.predict(x, {.verbose = 0}).to(cpu_device()), one.predict(x, {.verbose = 0}).to(cpu_device()), 1e-5,
              1e-6);
}

TEST_CASE("pipeline: BatchNormalization normalizes each micro-batch by its own statistics") {
  // Keras-visible: in training each micro-batch is normalized by its own mean and variance (as each
  // tower's share is); the moving mean follows the whole batch's mean, the moving variance the
  // micro-batches' variances averaged by their rows (not the whole batch's variance).
  const auto model = [] {
    clear_session();
    set_random_seed(2);
    Sequential m;
    m.add(layers::Input({3}));
    m.add(layers::BatchNormalization({.momentum = 0.5}));
    m.add(layers::Dense(2, {.name = "top"}));
    return m;
  };
  const Tensor x = random_normal({8, 3}, 1, 2, 4);
  const Tensor y = random_normal({8, 2}, 0, 1, 5);
  Model inner = model();
  Model piped = parallel::pipeline_model(inner, {"cpu:1", "cpu:2"}, {.micro_batches = 2});
  piped.compile(optimizers::SGD(0.0), "mse");
  piped.train_on_batch({x}, {y});
  const auto stats = inner.layers()[0]->get_weights();  // gamma, beta, moving_mean, moving_variance
  const auto host = x.to(cpu_device());
  const float* v = host.data<float>();
  for (int c = 0; c < 3; ++c) {
    double mean = 0, variance = 0;
    for (int half = 0; half < 2; ++half) {
      double m = 0, s = 0;
      for (int r = 4 * half; r < 4 * half + 4; ++r) m += v[r * 3 + c] / 4.0;
      for (int r = 4 * half; r < 4 * half + 4; ++r) s += (v[r * 3 + c] - m) * (v[r * 3 + c] - m) / 4.0;
      mean += m / 2;
      variance += s / 2;
    }
    CAPTURE(c);
    CHECK(stats[2].to(cpu_device()).data<float>()[c] == doctest::Approx(0.5 * mean).epsilon(1e-5));
    CHECK(stats[3].to(cpu_device()).data<float>()[c] == doctest::Approx(0.5 + 0.5 * variance).epsilon(1e-5));
  }
  // With one micro-batch the statistics are the whole batch's, as on one device.
  Model one = model();
  one.compile(optimizers::SGD(0.0), "mse");
  one.train_on_batch({x}, {y});
  Model single = model();
  Model whole = parallel::pipeline_model(single, {"cpu:1", "cpu:2"});
  whole.compile(optimizers::SGD(0.0), "mse");
  whole.train_on_batch({x}, {y});
  check_same_weights(single, one, 1e-5);
}

TEST_CASE("pipeline: cuts by name or balanced by parameters, and what is refused") {
  const Model m = mlp();  // a: 112, b: 204, c: 104, d: 27 parameters
  auto stages = parallel::pipeline_stages(m, {"cpu:1", "cpu:2"});
  REQUIRE(stages.size() == 2);
  CHECK(stages[0].layers == std::vector<std::string>{"a", "dropout", "b"});  // 316 | 131 beats 112 | 335
  CHECK(stages[0].params == 316);
  CHECK(stages[1].layers == std::vector<std::string>{"c", "d"});
  stages = parallel::pipeline_stages(m, {"cpu:1", "cpu:2", "cpu:3"});
  CHECK(stages[1].layers == std::vector<std::string>{"b"});
  CHECK(stages[2].params == 131);
  stages = parallel::pipeline_stages(m, {"cpu:1", "cpu:2"}, {.cuts = {"d"}});
  CHECK(stages[1].layers == std::vector<std::string>{"d"});

  const auto refused = [&](const std::vector<std::string>& devices, const parallel::PipelineOptions& options) {
    return message_of<ValueError>([&] { parallel::pipeline_stages(m, devices, options); });
  };
  std::string msg = refused({"cpu:1", "cpu:2"}, {.cuts = {"nope"}});
  CHECK_MESSAGE(contains(msg, "no layer \"nope\" to cut at"), msg);
  CHECK_MESSAGE(contains(msg, "a, dropout, b, c, d"), msg);
  msg = refused({"cpu:1", "cpu:2", "cpu:3"}, {.cuts = {"c", "b"}});
  CHECK_MESSAGE(contains(msg, "give the cuts in the model's layer order"), msg);
  msg = refused({"cpu:1", "cpu:2"}, {.cuts = {"a"}});
  CHECK_MESSAGE(contains(msg, "is the model's first layer"), msg);
  msg = refused({"cpu:1", "cpu:2", "cpu:3"}, {.cuts = {"b"}});
  CHECK_MESSAGE(contains(msg, "1 cut(s) for 3 stages"), msg);
  msg = refused({"cpu:1", "cpu:2", "cpu:3"}, {.cuts = {"dropout", "b"}});
  CHECK_MESSAGE(contains(msg, "stage 2 (cpu:2: dropout) has no layer with weights"), msg);
  msg = refused({"cpu:1", "cpu:2", "cpu:3", "cpu:4", "cpu:5"}, {});
  CHECK_MESSAGE(contains(msg, "has 4 layer(s) with weights, fewer than the 5 stages"), msg);
  msg = refused({"cpu:1", "cpu:1"}, {});
  CHECK_MESSAGE(contains(msg, "device cpu:1 is listed twice"), msg);
  msg = refused({"cpu:1", "cpu:2"}, {.micro_batches = 0});
  CHECK_MESSAGE(contains(msg, "micro_batches must be at least 1, got 0"), msg);
  // Nothing moved: the refused calls checked before any weight left cpu:0.
  for (const auto& w : m.weights()) CHECK(w->device().name() == "cpu:0");
}
