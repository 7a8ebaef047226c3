// Tests of callbacks::TensorBoard: a small fit writes train/ and validation/ event files, read back
// with io::read_events (CRC checked), whose tags and steps are Keras 3.15's (seen with TensorBoard's
// EventAccumulator on a Keras fit of the same shape) and whose values are the History's.
// With TOWER_TENSORBOARD_DIR set, the logs are written there and kept (tests/golden/read_tensorboard.py
// reads them with TensorBoard's own reader).
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tower/core/error.h"
#include "tower/core/random.h"
#include "tower/io/tfevents.h"
#include "tower/layers/layers.h"
#include "tower/layers/engine/sequential.h"
#include "tower/optimizers/optimizers.h"

using namespace tower;
namespace fs = std::filesystem;

namespace {

// tag -> step -> values, for every summary in the one event file of `dir`.
struct Run {
  std::map<std::string, std::map<std::int64_t, std::vector<double>>> tags;
  std::string file_version;
  std::size_t files = 0;
};

Run read_run(const fs::path& dir) {
  Run run;
  for (const auto& entry : fs::directory_iterator(dir)) {
    ++run.files;
    CHECK(entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0);
    const auto events = io::read_events(entry.path().string());
    REQUIRE(!events.empty());
    run.file_version = events[0].file_version;
    for (const auto& e : events)
      for (const auto& v : e.values) {
        if (v.tag == "keras") {
          CHECK(v.plugin_name == "graph_keras_model");
          REQUIRE(v.strings.size() == 1);
          CHECK(v.strings[0].find("\"Sequential\"") != std::string::npos);
          run.tags[v.tag][e.step] = {};
          continue;
        }
        CHECK(run.tags[v.tag].count(e.step) == 0);
        run.tags[v.tag][e.step] = v.numbers;
        if (v.tag.find("/histogram") != std::string::npos) {
          CHECK(v.plugin_name == "histograms");
          CHECK(v.shape == std::vector<std::int64_t>{30, 3});
        } else {
          CHECK(v.plugin_name == "scalars");
          CHECK(v.shape.empty());
          CHECK(v.numbers.size() == 1);
        }
      }
  }
  return run;
}

double as_float(double v) { return static_cast<double>(static_cast<float>(v)); }

}  // namespace

TEST_CASE("TensorBoard writes Keras 3's scalars, batch scalars, histograms and graph during fit") {
  clear_session();
  set_random_seed(3);
  const char* keep = std::getenv("TOWER_TENSORBOARD_DIR");
  const fs::path dir = keep ? fs::path(keep) : fs::temp_directory_path() / ("tower_tb_" + std::to_string(::getpid()));
  fs::remove_all(dir);

  std::vector<float> xs(40 * 3), ys(40);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>((i * 37 % 101) / 101.0);
  for (std::size_t i = 0; i < ys.size(); ++i) ys[i] = static_cast<float>((i * 53 % 97) / 97.0);
  const Tensor x = Tensor::from_vector<float>(Shape({40, 3}), xs);
  const Tensor y = Tensor::from_vector<float>(Shape({40, 1}), ys);
  Sequential model({layers::Input({3}), layers::Dense(2, {.name = "d1"}), layers::Dense(1, {.name = "d2"})},
                   "sequential");
  model.compile(optimizers::SGD(0.01), "mse", {"mae"});
  auto tb = std::make_shared<callbacks::TensorBoard>(
      callbacks::TensorBoardOptions{.log_dir = dir.string(), .histogram_freq = 1, .update_freq = 2});
  // 30 training samples in batches of 10: 3 batches an epoch, 9 in all; batch scalars at 2, 4, 6, 8.
  const History history = model.fit(
      x, y, {.batch_size = 10, .epochs = 3, .verbose = 0, .callbacks = {tb}, .validation_split = 0.25});

  const Run train = read_run(dir / "train");
  const Run val = read_run(dir / "validation");
  CHECK(train.files == 1);
  CHECK(val.files == 1);
  CHECK(train.file_version == "brain.Event:2");
  CHECK(val.file_version == "brain.Event:2");

  std::vector<std::string> train_tags, val_tags;
  for (const auto& [tag, steps] : train.tags) train_tags.push_back(tag);
  for (const auto& [tag, steps] : val.tags) val_tags.push_back(tag);
  CHECK(train_tags == std::vector<std::string>{"batch_loss", "batch_mae", "epoch_learning_rate", "epoch_loss",
                                               "epoch_mae", "keras", "sequential/d1/bias/histogram",
                                               "sequential/d1/kernel/histogram", "sequential/d2/bias/histogram",
                                               "sequential/d2/kernel/histogram"});
  CHECK(val_tags == std::vector<std::string>{"epoch_loss", "epoch_mae", "evaluation_loss_vs_iterations",
                                             "evaluation_mae_vs_iterations"});

  CHECK(train.tags.at("keras").begin()->first == 0);
  for (int epoch = 0; epoch < 3; ++epoch) {
    CHECK(train.tags.at("epoch_loss").at(epoch)[0] == as_float(history.history.at("loss")[epoch]));
    CHECK(train.tags.at("epoch_mae").at(epoch)[0] == as_float(history.history.at("mae")[epoch]));
    CHECK(train.tags.at("epoch_learning_rate").at(epoch)[0] == as_float(0.01));
    CHECK(val.tags.at("epoch_loss").at(epoch)[0] == as_float(history.history.at("val_loss")[epoch]));
    CHECK(val.tags.at("epoch_mae").at(epoch)[0] == as_float(history.history.at("val_mae")[epoch]));
    // Validation after epoch e has seen 3 (e + 1) optimizer steps.
    const std::int64_t iterations = 3 * (epoch + 1);
    CHECK(val.tags.at("evaluation_loss_vs_iterations").at(iterations)[0] ==
          as_float(history.history.at("val_loss")[epoch]));
    CHECK(val.tags.at("evaluation_mae_vs_iterations").at(iterations)[0] ==
          as_float(history.history.at("val_mae")[epoch]));
  }
  CHECK(train.tags.at("epoch_loss").size() == 3);
  std::vector<std::int64_t> batch_steps;
  for (const auto& [step, v] : train.tags.at("batch_loss")) batch_steps.push_back(step);
  CHECK(batch_steps == std::vector<std::int64_t>{2, 4, 6, 8});
  // The batch at global step 6 is the last of epoch 1: its running loss is that epoch's loss.
  CHECK(train.tags.at("batch_loss").at(6)[0] == as_float(history.history.at("loss")[1]));

  // Histograms every epoch; their counts add up to the weight's elements; the last one brackets the
  // final weights.
  const std::map<std::string, double> elements = {{"sequential/d1/kernel/histogram", 6},
                                                  {"sequential/d1/bias/histogram", 2},
                                                  {"sequential/d2/kernel/histogram", 2},
                                                  {"sequential/d2/bias/histogram", 1}};
  for (const auto& [tag, n] : elements) {
    REQUIRE(train.tags.at(tag).size() == 3);
    for (const auto& [step, rows] : train.tags.at(tag)) {
      double count = 0;
      for (std::size_t i = 2; i < rows.size(); i += 3) count += rows[i];
      CHECK(count == n);
    }
  }
  const auto kernel = model.layers()[0]->get_weights()[0].to_vector<float>();
  const auto& last = train.tags.at("sequential/d1/kernel/histogram").at(2);
  CHECK(last.front() == static_cast<double>(*std::min_element(kernel.begin(), kernel.end())));
  CHECK(last[last.size() - 2] == static_cast<double>(*std::max_element(kernel.begin(), kernel.end())));
  if (!keep) fs::remove_all(dir);
}

TEST_CASE("TensorBoard writes only epoch scalars by default, and no validation run without validation") {
  clear_session();
  const fs::path dir = fs::temp_directory_path() / ("tower_tb_default_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const Tensor x = Tensor::from_vector<float>(Shape({8, 2}), {1, 2, 3, 4, 5, 6, 7, 8, 1, 3, 5, 7, 2, 4, 6, 8});
  const Tensor y = Tensor::from_vector<float>(Shape({8, 1}), {1, 0, 1, 0, 1, 1, 0, 0});
  Sequential model({layers::Input({2}), layers::Dense(1)});
  model.compile(optimizers::SGD(0.05), "mse");
  auto tb = std::make_shared<callbacks::TensorBoard>(
      callbacks::TensorBoardOptions{.log_dir = dir.string(), .write_graph = false, .write_steps_per_second = true});
  model.fit(x, y, {.batch_size = 4, .epochs = 2, .verbose = 0, .callbacks = {tb}});
  const Run train = read_run(dir / "train");
  std::vector<std::string> tags;
  for (const auto& [tag, steps] : train.tags) tags.push_back(tag);
  CHECK(tags == std::vector<std::string>{"epoch_learning_rate", "epoch_loss", "epoch_steps_per_second"});
  CHECK(train.tags.at("epoch_steps_per_second").at(1)[0] > 0);
  CHECK(!fs::exists(dir / "validation"));
  fs::remove_all(dir);
}

TEST_CASE("TensorBoard's options: Keras 3's defaults, and what it refuses") {
  const callbacks::TensorBoardOptions o;
  CHECK(o.log_dir == "logs");
  CHECK(o.histogram_freq == 0);
  CHECK(o.write_graph);
  CHECK(!o.write_images);
  CHECK(!o.write_steps_per_second);
  CHECK(o.update_freq.batches == 0);
  CHECK(callbacks::UpdateFreq("batch").batches == 1);
  CHECK(callbacks::UpdateFreq(100).batches == 100);
  CHECK_THROWS_AS(callbacks::UpdateFreq("steps"), ValueError);
  CHECK_THROWS_AS(callbacks::UpdateFreq(0), ValueError);
  CHECK_THROWS_AS(callbacks::TensorBoard({.histogram_freq = -1}), ValueError);
  CHECK_THROWS_AS(callbacks::TensorBoard({.write_images = true}), ValueError);
  CHECK_THROWS_AS(callbacks::TensorBoard({.profile_batch = 2}), ValueError);
  CHECK_THROWS_AS(callbacks::TensorBoard({.embeddings_freq = 1}), ValueError);
}
