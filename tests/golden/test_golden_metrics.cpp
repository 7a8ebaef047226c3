// Keras goldens of the stateful metrics (files/stateful_metrics.h5, make_golden.py --stateful-metrics):
// each metric made from Keras's class name and get_config() (Metric::from_config), fed the same batches
// with update_state, against Keras's result() after every batch; and a two-output model's evaluate logs
// with per-output metrics given as a map from output name.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tower/io/hdf5.h"
#include "tower/layers/layers.h"
#include "tower/layers/engine/model.h"
#include "tower/layers/metrics/metrics.h"

namespace tower {
namespace {

using metrics::Metric;
namespace L = layers;

const std::string kFile = std::string(TOWER_GOLDEN_DIR) + "/files/stateful_metrics.h5";
// |tower - keras| <= kRtol |keras| + kAtol: Keras sums in float32, tower in double.
constexpr double kRtol = 1e-5;
constexpr double kAtol = 1e-6;

std::vector<double> values_of(const Tensor& t) { return t.to(cpu_device()).to_vector<double>(); }

void expect_close(const std::string& what, const std::vector<double>& actual, const std::vector<double>& expected) {
  REQUIRE_MESSAGE(actual.size() == expected.size(),
                  what << ": tower has " << actual.size() << " values, Keras " << expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i)
    CHECK_MESSAGE(std::fabs(actual[i] - expected[i]) <= kAtol + kRtol * std::fabs(expected[i]),
                  fmt::format("{}[{}]: tower {:.9g}, Keras {:.9g}", what, i, actual[i], expected[i]));
}

}  // namespace

TEST_CASE("golden: stateful metrics (update_state over batches, result) match Keras 3") {
  auto file = io::hdf5::File::open(kFile);
  int cases = 0;
  for (const auto& name : file.group("/").children()) {
    if (name == "model") continue;
    CAPTURE(name);
    auto g = file.group(name);
    const nlohmann::json config = nlohmann::json::parse(g.read_string_attr("config"));
    Metric metric = Metric::from_config({{"class_name", g.read_string_attr("class_name")}, {"config", config}});
    CHECK(metric.name() == config.at("name").get<std::string>());
    const Tensor running = file.read_dataset(name + "/running");  // (batches, result size)
    const auto expected = values_of(running);
    const std::int64_t batches = g.read_int_attr("batches"), width = running.shape()[1];
    for (std::int64_t b = 0; b < batches; ++b) {
      const std::string at = fmt::format("{}/batch_{}/", name, b);
      auto read = [&](const char* key) { return file.exists(at + key) ? file.read_dataset(at + key) : Tensor(); };
      metric.update_state(read("y_true"), read("y_pred"), read("sample_weight"));
      expect_close(fmt::format("{} after batch {}", name, b), metric.result_values(),
                   std::vector<double>(expected.begin() + b * width, expected.begin() + (b + 1) * width));
    }
    // The config round-trips (Keras's class and keys).
    CHECK(Metric::from_config({{"class_name", metric.class_name()}, {"config", metric.get_config()}}).get_config() ==
          metric.get_config());
    for (const auto& [key, value] : config.items()) {
      CAPTURE(key);
      CHECK(metric.get_config().contains(key));
    }
    metric.reset_state();
    CHECK(metric.state().empty());
    ++cases;
  }
  CHECK(cases >= 40);
}

TEST_CASE("golden: per-output stateful metrics in a two-output model's evaluate match Keras 3") {
  auto file = io::hdf5::File::open(kFile);
  auto x = L::Input({4}, {.name = "x"});
  auto h = L::Dense(5, {.activation = "tanh", .name = "hidden"})(x);
  auto cls = L::Dense(3, {.activation = "softmax", .name = "cls"})(h);
  auto bin = L::Dense(1, {.activation = "sigmoid", .name = "bin"})(h);
  Model model({x}, {cls, bin}, "two_outputs");
  std::vector<Tensor> weights;
  for (const char* w : {"hidden_kernel", "hidden_bias", "cls_kernel", "cls_bias", "bin_kernel", "bin_bias"})
    weights.push_back(file.read_dataset(std::string("model/weights/") + w));
  model.set_weights(weights);
  model.compile("sgd", {"categorical_crossentropy", "binary_crossentropy"},
                std::map<std::string, std::vector<Metric>>{
                    {"cls", {"accuracy", metrics::AUC(), metrics::TopKCategoricalAccuracy(2)}},
                    {"bin", {metrics::Precision(), metrics::Recall(), "accuracy", metrics::AUC({.curve = "PR", .name = "pr_auc"})}}});
  auto logs = model.evaluate({file.read_dataset("model/x")}, {file.read_dataset("model/y/0"), file.read_dataset("model/y/1")},
                             {.batch_size = 4, .verbose = 0});
  const auto names = file.group("model").read_string_array_attr("log_names");
  const auto expected = values_of(file.read_dataset("model/evaluate"));
  REQUIRE(names.size() == expected.size());
  CHECK(logs.size() == names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    CAPTURE(names[i]);
    REQUIRE_MESSAGE(logs.contains(names[i]), "tower reports no " << names[i]);
    // Keras 3.15 averages the per-output losses ("cls_loss") over the batches unweighted (here 1.2146 =
    // the mean of the batches of 4, 4 and 2) but the total loss by batch size; tower weights both by
    // batch size, so only "loss" and the metrics are compared.
    if (names[i] == "cls_loss" || names[i] == "bin_loss") continue;
    expect_close("evaluate " + names[i], {logs.at(names[i])}, {expected[i]});
  }
}

}  // namespace tower
